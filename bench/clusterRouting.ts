/**
 * Benchmark (not a test): the loop across machines. 1,000 sessions × 3 turns with a zero-latency
 * scripted model, sessions in JSON Lines, run
 * - in this process, on the local loop (the baseline: what a turn costs without a cluster);
 * - through a cluster of 1 runner process, and of 3 runner processes, from a client in this process.
 *
 * Two measurements on each: the whole workload, `CONCURRENCY` sessions at a time (turns per second,
 * and p50/p99 of a turn under that load, which is mostly queueing), then `LONE` turns one at a time
 * (p50/p99 of a turn with nothing else running: what routing adds to one turn). Needs Postgres (a
 * throwaway server, as the tests start). Run with `node bench/clusterRouting.ts`
 * (`SESSIONS=200 LONE=50` for a shorter run).
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import * as Scripted from "../src/layers/providers/Scripted.ts"
import * as SessionStoreJsonl from "../src/layers/SessionStoreJsonl.ts"
import * as AgentLoopLive from "../src/programs/AgentLoopLive.ts"
import { AgentLoop, type AgentLoopShape } from "../src/services/AgentLoop.ts"
import * as ToolRegistryLive from "../src/layers/ToolRegistry.ts"
import { startCluster } from "../test/support/cluster.ts"
import { postgresProbe } from "../test/support/postgres.ts"

const SESSIONS = Number(process.env["SESSIONS"] ?? 1000)
const TURNS = 3
/** Sessions driven at once in the workload; each runs its turns one after another. */
const CONCURRENCY = Number(process.env["CONCURRENCY"] ?? 64)
/** Turns run one at a time for the latency of a lone turn. */
const LONE = Number(process.env["LONE"] ?? 150)

interface Latencies {
  readonly p50: number
  readonly p99: number
}

interface Measured {
  readonly turnsPerSecond: number
  readonly loaded: Latencies
  readonly lone: Latencies
  /** How many turns did not complete, by status and error. */
  readonly notCompleted: Map<string, number>
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

const latencies = (values: Array<number>): Latencies => {
  values.sort((a, b) => a - b)
  return { p50: percentile(values, 0.5), p99: percentile(values, 0.99) }
}

/** Runs `turns` turns on each of `keys`, `concurrency` sessions at a time; the latency of each turn. */
const timedTurns = (loop: AgentLoopShape, keys: ReadonlyArray<string>, turns: number, concurrency: number, notCompleted: Map<string, number>) =>
  Effect.gen(function*() {
    const taken: Array<number> = []
    yield* Effect.forEach(keys, (key) =>
      Effect.gen(function*() {
        for (let turn = 0; turn < turns; turn++) {
          const began = performance.now()
          const result = yield* loop.turn(key, `turn ${turn}`)
          taken.push(performance.now() - began)
          if (result.status !== "completed") {
            const reason = `${result.status}: ${result.error ?? ""}`
            notCompleted.set(reason, (notCompleted.get(reason) ?? 0) + 1)
          }
        }
      }), { concurrency, discard: true })
    return taken
  })

/** Drives the workload, then the lone turns, through whatever `AgentLoop` the runtime has. */
const drive = (runtime: ManagedRuntime.ManagedRuntime<AgentLoop, unknown>, label: string): Promise<Measured> =>
  runtime.runPromise(Effect.gen(function*() {
    const loop = yield* AgentLoop
    const notCompleted = new Map<string, number>()
    // warm-up: connections, shard discovery, the code paths
    yield* timedTurns(loop, Array.from({ length: 20 }, (_, i) => `warm-${label}-${i}`), 1, 20, notCompleted)
    const start = performance.now()
    const workload = yield* timedTurns(loop, Array.from({ length: SESSIONS }, (_, i) => `${label}-${i}`), TURNS, CONCURRENCY, notCompleted)
    const seconds = (performance.now() - start) / 1000
    const lone = yield* timedTurns(loop, Array.from({ length: Math.ceil(LONE / TURNS) }, (_, i) => `lone-${label}-${i}`), TURNS, 1, notCompleted)
    return { turnsPerSecond: workload.length / seconds, loaded: latencies(workload), lone: latencies(lone), notCompleted }
  }))

const local = async (): Promise<Measured> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-bench-"))
  const layer = AgentLoopLive.layer({ model: "bench", maxParallelTurns: CONCURRENCY }).pipe(
    Layer.provide([Scripted.layer(() => ({ content: "ok" })), ToolRegistryLive.layer([]), SessionStoreJsonl.layer(dir)]),
    Layer.provide(NodeServices.layer),
    Layer.orDie
  )
  const runtime = ManagedRuntime.make(layer)
  try {
    return await drive(runtime, "local")
  } finally {
    await runtime.dispose()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** A cluster with the production timings (`shardingDefaults`), not the tests' fast ones. */
const clustered = async (runners: number): Promise<Measured> => {
  const cluster = await startCluster(runners, {})
  const runtime = ManagedRuntime.make(cluster.client())
  try {
    return await drive(runtime, `cluster${runners}`)
  } finally {
    await runtime.dispose()
    await cluster.close()
  }
}

if (!postgresProbe.ok) {
  console.error(`bench/clusterRouting.ts needs Postgres: ${postgresProbe.reason}`)
  process.exit(1)
}

const ms = (value: number) => `${value.toFixed(1)} ms`
const rows: Array<[string, Measured]> = [["in process (no cluster)", await local()]]
rows.push(["1 runner process", await clustered(1)])
rows.push(["3 runner processes", await clustered(3)])
const baseline = rows[0]![1]
console.log(`${SESSIONS} sessions × ${TURNS} turns, ${CONCURRENCY} sessions at a time; then ${LONE} lone turns one at a time.`)
console.log(`Zero-latency scripted model, JSON Lines store, ${os.cpus().length} CPUs shared by the client, the runners and Postgres.`)
console.log("| where | turns/s | p50 / p99 under load | p50 / p99 of a lone turn | added by routing to a lone turn (p50 / p99) | not completed |")
console.log("| --- | --- | --- | --- | --- | --- |")
for (const [where, m] of rows) {
  const added = m === baseline ? "—" : `${ms(m.lone.p50 - baseline.lone.p50)} / ${ms(m.lone.p99 - baseline.lone.p99)}`
  console.log(
    `| ${where} | ${m.turnsPerSecond.toFixed(0)} | ${ms(m.loaded.p50)} / ${ms(m.loaded.p99)} | ${ms(m.lone.p50)} / ${ms(m.lone.p99)} | ${added} | ${[...m.notCompleted.values()].reduce((a, b) => a + b, 0)} |`
  )
}
for (const [where, m] of rows) for (const [reason, count] of m.notCompleted) console.log(`${where}: ${count} × ${reason}`)
