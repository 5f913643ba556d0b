/**
 * Benchmark (not a test): a cluster under load. A throwaway Postgres (as the tests start), `RUNNERS`
 * runner processes (default 3) whose scripted model answers after `DELAY_MS` (default 200 ms), and a
 * client in this process driving `SESSIONS` sessions at once (default 1,000), `TURNS` turns each
 * (default 3), with the production cluster timings (`shardingDefaults`).
 *
 * It reports turns per second, p50/p99 of a turn's latency, the turns that did not complete, and,
 * for each turn reported aborted, whether it was in fact committed (its input is in the session's
 * log); then the cluster's bookkeeping, table by table (`cluster_messages`, `cluster_replies`, the
 * claims, commit records, nonces of signed requests — the runners and client share a secret — and
 * send backlogs): rows per turn and bytes of live rows at the end, and again once `RETENTION_MS`
 * (the runners' retention window, when given) has passed, which should be flat in the turns run. Run with `npm run bench:cluster`
 * (`RUNNERS=1 SESSIONS=200 TURNS=2 DELAY_MS=200 npm run bench:cluster` for a shorter run).
 * `npm run bench:cluster -- --faults` prints the table of faults instead (`clusterFaults.ts`).
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as os from "node:os"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import * as Message from "../src/domain/Message.ts"
import * as SessionStoreJsonl from "../src/layers/SessionStoreJsonl.ts"
import { AgentLoop } from "../src/services/AgentLoop.ts"
import { SessionStore } from "../src/services/SessionStore.ts"
import { startCluster } from "../test/support/cluster.ts"
import { postgresProbe } from "../test/support/postgres.ts"

const RUNNERS = Number(process.env["RUNNERS"] ?? 3)
const SESSIONS = Number(process.env["SESSIONS"] ?? 1000)
const TURNS = Number(process.env["TURNS"] ?? 3)
const DELAY_MS = Number(process.env["DELAY_MS"] ?? 200)
/** The runners' retention window (`serve --retention`); when set, the rows are counted again once it has passed. */
const RETENTION_MS = process.env["RETENTION_MS"] === undefined ? undefined : Number(process.env["RETENTION_MS"])

if (!postgresProbe.ok) {
  console.error(`bench/cluster.ts needs Postgres: ${postgresProbe.reason}`)
  process.exit(1)
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0

interface Outcome {
  readonly session: string
  readonly input: string
  readonly status: string
  readonly error: string | undefined
  readonly ms: number
}

// `--faults`: the fault table instead (`clusterFaults.ts`)
if (process.argv.includes("--faults")) {
  await import("./clusterFaults.ts")
  process.exit()
}

// production timings: what a loaded cluster meets
const SECRET = "the cluster benchmark's secret"
const cluster = await startCluster(RUNNERS, {}, { modelDelayMs: DELAY_MS, secret: SECRET, ...(RETENTION_MS === undefined ? {} : { retentionMs: RETENTION_MS }) })
const runtime = ManagedRuntime.make(cluster.client({}, { secret: Redacted.make(SECRET) }))
try {
  const outcomes: Array<Outcome> = []
  const started = performance.now()
  await runtime.runPromise(Effect.gen(function*() {
    const loop = yield* AgentLoop
    yield* Effect.forEach(Array.from({ length: SESSIONS }, (_, i) => `bench-${i}`), (session) =>
      Effect.gen(function*() {
        for (let turn = 0; turn < TURNS; turn++) {
          const input = `${session} turn ${turn}`
          const began = performance.now()
          const result = yield* loop.turn(session, input)
          outcomes.push({ session, input, status: result.status, error: result.error, ms: performance.now() - began })
        }
      }), { concurrency: "unbounded", discard: true })
  }))
  const seconds = (performance.now() - started) / 1000

  // what the session log holds: a turn is committed when its input is there
  const logged = await Effect.runPromise(Effect.gen(function*() {
    const store = yield* SessionStore
    const inputs = new Set<string>()
    for (const session of new Set(outcomes.map((o) => o.session))) {
      for (const message of yield* store.load(session)) if (message.role === "user") inputs.add(Message.textOf(message.content))
    }
    return inputs
  }).pipe(Effect.provide(SessionStoreJsonl.layer(cluster.sessionsDir).pipe(Layer.provide(NodeServices.layer)))))

  const latencies = outcomes.map((o) => o.ms).sort((a, b) => a - b)
  const byStatus = new Map<string, number>()
  for (const o of outcomes) byStatus.set(o.status, (byStatus.get(o.status) ?? 0) + 1)
  const aborted = outcomes.filter((o) => o.status === "aborted")
  const abortedButCommitted = aborted.filter((o) => logged.has(o.input)).length
  const completedNotCommitted = outcomes.filter((o) => o.status === "completed" && !logged.has(o.input)).length
  const reasons = new Map<string, number>()
  for (const o of outcomes) if (o.status !== "completed") reasons.set(`${o.status}: ${o.error ?? ""}`, (reasons.get(`${o.status}: ${o.error ?? ""}`) ?? 0) + 1)

  /** Rows and bytes of live rows (what the rows hold, not what the table's files keep until a vacuum) of a table. */
  const count = async (table: string) => {
    const [rows, bytes] = (await cluster.pg.psql(`SELECT count(*), coalesce(sum(pg_column_size(t.*)), 0) FROM ${table} t`).catch(() => "NaN|NaN")).split("|").map(Number)
    return { rows: rows!, bytes: bytes! }
  }
  const tables = ["cluster_messages", "cluster_replies", "agent_loop_turn_claims", "agent_loop_turn_commits", "agent_loop_request_nonces", "agent_loop_send_backlogs", "agent_loop_request_fates"]
  const describeRows = (counts: ReadonlyArray<{ rows: number; bytes: number }>) =>
    tables.map((table, i) => Number.isNaN(counts[i]!.rows) ? `${table} not used (no table)` : `${table} ${counts[i]!.rows} rows, ${counts[i]!.bytes} B (${(counts[i]!.bytes / outcomes.length).toFixed(0)} B per turn)`).join(", ")
  const rows = await Promise.all(tables.map(count))

  console.log(`${RUNNERS} runner process(es), ${SESSIONS} sessions at once × ${TURNS} turns, model delay ${DELAY_MS} ms, ${os.cpus().length} CPUs shared by the client, the runners and Postgres (load average ${os.loadavg()[0]!.toFixed(1)} at the end)`)
  console.log(`turns: ${outcomes.length} in ${seconds.toFixed(1)} s = ${(outcomes.length / seconds).toFixed(1)} turns/s`)
  console.log(`latency: p50 ${percentile(latencies, 0.5).toFixed(0)} ms, p99 ${percentile(latencies, 0.99).toFixed(0)} ms`)
  console.log(`status: ${[...byStatus].map(([status, n]) => `${status} ${n}`).join(", ")}`)
  console.log(`reported aborted: ${aborted.length}, of which committed in the log: ${abortedButCommitted}; reported completed but not in the log: ${completedNotCommitted}`)
  for (const [reason, n] of reasons) console.log(`  ${n} × ${reason}`)
  console.log(`bookkeeping at the end: ${describeRows(rows)}`)
  if (RETENTION_MS !== undefined) {
    // a sweep runs every window and removes what was answered a window ago: two windows and a bit
    await new Promise((resolve) => setTimeout(resolve, 2 * RETENTION_MS + 1000))
    const swept = await Promise.all(tables.map(count))
    console.log(`bookkeeping once the retention window (${RETENTION_MS} ms) has passed: ${describeRows(swept)}`)
  }
} finally {
  await runtime.dispose()
  await cluster.close()
}
