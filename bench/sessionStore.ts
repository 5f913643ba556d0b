/**
 * What a long session costs a turn, per store: a turn (load, call a zero-latency model, append)
 * on sessions of 1k, 10k and 50k messages, medians of several turns after three warm-up turns, plus
 * the first load of a fresh store (the whole log decoded once per process) for scale. Stores:
 * JSON Lines, SQLite (a file, WAL, synchronous=FULL) and Postgres (a throwaway local server, when
 * Postgres is installed; it runs with fsync off, so its figures leave out the disk).
 *
 * Run: `node bench/sessionStore.ts [turns]`. Target: a turn at 50k costs at most 2× a turn at 1k.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import { join } from "node:path"
import { SessionStore, SessionStoreSql } from "../src/index.ts"
import { postgresProbe, startPostgres } from "../test/support/postgres.ts"
import { type Backend, inTempDir, jsonl, turnsOnSession } from "./session.ts"
import { median } from "./workload.ts"

const turns = Number(process.argv[2] ?? 15)

const measure = (size: number, backend: Backend) =>
  Effect.map(turnsOnSession(size, backend, turns), ({ coldLoadMs, times }) => ({ size, turnMs: median(times), coldLoadMs }))

const sqlite = (dir: string): Backend => ({
  store: SessionStoreSql.layerSqlite(join(dir, "sessions.db")),
  fresh: Effect.map(Layer.build(SessionStoreSql.layerSqlite(join(dir, "sessions.db"))), Context.get(SessionStore))
})

const postgres = (url: string): Backend => {
  const client = PgClient.layer({ url: Redacted.make(url) })
  return {
    store: SessionStoreSql.layer().pipe(Layer.provide(client)),
    fresh: Effect.flatMap(Layer.build(client), (context) => SessionStoreSql.make().pipe(Effect.provideContext(context)))
  }
}

const sizes = [1_000, 10_000, 50_000]

const report = (name: string, rows: ReadonlyArray<{ readonly size: number; readonly turnMs: number; readonly coldLoadMs: number }>) => {
  console.log(`\n${name}`)
  console.table(rows.map((r) => ({ messages: r.size, "turn ms (median)": r.turnMs.toFixed(2), "first load ms": r.coldLoadMs.toFixed(1) })))
  console.log(`turn at 50k / turn at 1k: ${(rows[2]!.turnMs / rows[0]!.turnMs).toFixed(2)} (target ≤ 2)`)
}

const main = Effect.gen(function*() {
  for (const [name, backend] of [["JSON Lines", jsonl], ["SQLite", sqlite]] as const) {
    const rows = []
    for (const size of sizes) rows.push(yield* inTempDir((dir) => measure(size, backend(dir))))
    report(name, rows)
  }
  if (!postgresProbe.ok) return console.log(`\nPostgres: skipped, ${postgresProbe.reason}`)
  const server = yield* Effect.acquireRelease(Effect.promise(() => startPostgres()), (server) => Effect.promise(() => server.stop()))
  const rows = []
  for (const size of sizes) {
    const database = `bench_${size}`
    yield* Effect.promise(() => server.createDatabase(database))
    rows.push(yield* measure(size, postgres(server.url(database))))
  }
  report(`Postgres (${postgresProbe.version}, fsync off)`, rows)
})

Effect.runPromise(Effect.scoped(main))
