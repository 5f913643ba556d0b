/**
 * A cluster under load keeps its word and its tables small: one runner process (short shard lock
 * timings, so a renewal slowed by the load gives its shards up, which must not abort turns), 200
 * sessions at once, five turns each on a 200 ms model. No turn is aborted, every history is whole
 * and in order, and once the turns are answered the bookkeeping (requests, replies, claims, commit
 * records) is swept to nothing past a five-second retention window. Multi-process, on real time:
 * every wait polls a condition with a deadline.
 */
import { Effect, ManagedRuntime } from "effect"
import type { Sharding } from "effect/cluster"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AgentLoop } from "effect-agent-loop"
import { startCluster, type TestCluster, waitUntil } from "../support/cluster.ts"
import { postgresProbe, postgresSuite } from "../support/postgres.ts"

const SESSIONS = 200
const TURNS = 5

describe.skipIf(!postgresProbe.ok)(postgresSuite(`${SESSIONS} sessions at once on one runner`), () => {
  let cluster: TestCluster
  let runtime: ManagedRuntime.ManagedRuntime<AgentLoop | Sharding.Sharding, unknown>

  /** Rows of the cluster's bookkeeping, table by table. */
  const bookkeeping = async () => {
    const counts = await cluster.pg.psql(
      ["cluster_messages", "cluster_replies", "agent_loop_turn_claims", "agent_loop_turn_commits"]
        .map((table) => `SELECT '${table}', count(*) FROM ${table}`).join(" UNION ALL ")
    )
    return Object.fromEntries(counts.split("\n").filter((line) => line !== "").map((line) => {
      const [table, count] = line.split("|")
      return [table!, Number(count)]
    }))
  }

  beforeAll(async () => {
    cluster = await startCluster(1, undefined, { store: "sql", retentionMs: 5000 })
    runtime = ManagedRuntime.make(cluster.client())
  }, 120_000)

  afterAll(async () => {
    await runtime?.dispose()
    await cluster?.close()
  }, 30_000)

  it("no turn is aborted, histories are whole, and the bookkeeping is swept once the turns are answered", async () => {
    const started = Date.now()
    const results = await runtime.runPromise(Effect.gen(function*() {
      const loop = yield* AgentLoop
      return yield* Effect.forEach(
        Array.from({ length: SESSIONS }, (_, i) => `load-${i}`),
        (key) => Effect.forEach(Array.from({ length: TURNS }, (_, t) => `wait 200 ${key} t${t}`), (input) => loop.turn(key, input)),
        { concurrency: "unbounded" }
      )
    }))
    const seconds = (Date.now() - started) / 1000
    const statuses = results.flat().reduce<Record<string, number>>((acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }), {})
    console.log(`${SESSIONS * TURNS} turns in ${seconds.toFixed(1)} s: ${JSON.stringify(statuses)}; rows right after: ${JSON.stringify(await bookkeeping())}`)
    expect(statuses).toEqual({ completed: SESSIONS * TURNS })
    for (const [i, session] of results.entries()) {
      const last = session.at(-1)!
      expect(last.finalMessage?.content).toBe(
        `waited 200: ${Array.from({ length: TURNS }, (_, t) => `wait 200 load-${i} t${t}`).join(" | ")}`
      )
    }
    const rows = await cluster.pg.psql("SELECT count(*) FROM agent_loop_entries")
    expect(Number(rows)).toBe(SESSIONS * TURNS * 2)
    // nothing in flight: past the window, nothing of the turns is left but their logs
    await waitUntil("the bookkeeping to be swept", async () => Object.values(await bookkeeping()).every((n) => n === 0), 60_000)
    expect(cluster.runners[0]!.ends().filter((end) => end.status !== "completed")).toEqual([])
  }, 300_000)
})
