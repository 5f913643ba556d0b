/**
 * What a long session costs a turn, per store: a turn (load, call a zero-latency model, append)
 * on sessions of 1k, 10k and 50k messages, medians of several turns after three warm-up turns, plus
 * the first load of a fresh store (the whole log decoded once per process) for scale. Stores:
 * JSON Lines, SQLite (a file, WAL, synchronous=FULL) and Postgres (a throwaway local server, when
 * Postgres is installed; it runs with fsync off, so its figures leave out the disk).
 *
 * Run: `node bench/sessionStore.ts [turns]`. Target: a turn at 50k costs at most 2× a turn at 1k.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, type Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { SessionStoreShape } from "../src/index.ts"
import { AgentLoop, AgentLoopLive, Message, Scripted, SessionStore, SessionStoreJsonl, SessionStoreSql, ToolRegistry } from "../src/index.ts"
import { postgresProbe, startPostgres } from "../test/support/postgres.ts"

const turns = Number(process.argv[2] ?? 15)

/** A store under test: the layer the loop uses, and how to open a second, cold store on the same data. */
interface Backend {
  readonly store: Layer.Layer<SessionStore, unknown>
  readonly fresh: Effect.Effect<SessionStoreShape, unknown, Scope.Scope>
}

/** A history of `size` messages, about 100 characters each. */
const history = (size: number): ReadonlyArray<Message.Message> =>
  Array.from({ length: size }, (_, i) =>
    i % 2 === 0
      ? Message.user(`question ${i}: ${"lorem ipsum dolor sit amet ".repeat(3)}`)
      : Message.assistant(`answer ${i}: ${"consectetur adipiscing elit ".repeat(3)}`))

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const measure = (size: number, backend: Backend) =>
  Effect.gen(function*() {
    yield* Effect.orDie((yield* SessionStore).append("long", history(size)))
    const fresh = yield* backend.fresh
    const coldStart = performance.now()
    yield* Effect.orDie(fresh.load("long"))
    const cold = performance.now() - coldStart
    const loop = yield* AgentLoop
    for (let i = 0; i < 3; i++) yield* loop.turn("long", `warm up ${i}`)
    const times: Array<number> = []
    for (let i = 0; i < turns; i++) {
      const start = performance.now()
      const result = yield* loop.turn("long", `question ${i}`)
      times.push(performance.now() - start)
      if (result.status !== "completed") throw new Error(`turn ended ${result.status}`)
    }
    return { size, turnMs: median(times), coldLoadMs: cold }
  }).pipe(
    Effect.scoped,
    Effect.provide(AgentLoopLive.layer({ model: "bench" }).pipe(
      Layer.provideMerge(Layer.mergeAll(Scripted.layer(() => ({ content: "done" })), ToolRegistry.layer([]))),
      Layer.provideMerge(backend.store),
      Layer.orDie
    ))
  )

/** Runs `f` with a fresh temporary directory. */
const inTempDir = <A, E, R>(f: (dir: string) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "bench-session-store-"))),
    f,
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

const jsonl = (dir: string): Backend => ({
  store: SessionStoreJsonl.layer(dir).pipe(Layer.provide(NodeServices.layer)),
  fresh: SessionStoreJsonl.make(dir).pipe(Effect.provide(NodeServices.layer))
})

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
