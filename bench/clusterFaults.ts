/**
 * Benchmark (not a test): the cluster under faults, `npm run bench:cluster -- --faults`. A
 * throwaway Postgres, three runner processes with the tests' fast timings (a dead runner's shards
 * move within seconds), a scripted model and a tool that is not idempotent (`record`, which appends
 * a line to a file). Each fault strikes while turns are in flight:
 *
 * - kill -9 of a runner while `SESSIONS` sessions (default 60) each run a turn;
 * - kill -9 of the runner of one session inside `deploy` (never ends) with `QUEUED` turns (default
 *   50) queued behind it;
 * - SIGSTOP of a runner for `FREEZE_MS` (default 30 s), then SIGCONT;
 * - a Postgres restart (fast shutdown).
 *
 * It prints one row per fault: turns sent, told completed, whose input is in the log, told
 * aborted or failed, lost (not in the log), told and log disagreeing (told completed and not in
 * the log, or told aborted and in it), tool calls that ran twice, and the recovery time of the
 * turns answered after the fault (from the fault to their answer), p50 and p95.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Fiber, ManagedRuntime } from "effect"
import type { TurnResult } from "../src/domain/Turn.ts"
import { AgentLoop } from "../src/services/AgentLoop.ts"
import { startCluster, waitUntil } from "../test/support/cluster.ts"

const SESSIONS = Number(process.env["SESSIONS"] ?? 60)
const QUEUED = Number(process.env["QUEUED"] ?? 50)
const FREEZE_MS = Number(process.env["FREEZE_MS"] ?? 30_000)

const toolLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-faults-")), "tools.log")
fs.writeFileSync(toolLog, "")
const ran = () => fs.readFileSync(toolLog, "utf8").split("\n").filter((line) => line !== "")

const cluster = await startCluster(3, undefined, { store: "sql", toolLog })
const runtime = ManagedRuntime.make(cluster.client())

interface Sent {
  readonly session: string
  readonly input: string
  readonly note: string
}
interface Told extends Sent {
  readonly result: TurnResult
  readonly at: number
}

/** The user messages of a session's log, read straight from Postgres. */
const inputs = async (session: string) =>
  (await cluster.pg.psql(
    `SELECT e.entry FROM agent_loop_entries e JOIN agent_loop_sessions s ON s.session_id = e.session_id
     WHERE s.session_key = '${session}' ORDER BY e.seq`
  )).split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as { role: string; content: unknown })
    .filter((entry) => entry.role === "user").map((entry) => String(entry.content))

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN
const live = () => cluster.runners.filter((runner) => runner.child.exitCode === null && runner.child.signalCode === null)

/** Sends the turns (`ordered`: each once the one before is stored), strikes with `fault`, and reports. */
const scenario = async (name: string, turns: ReadonlyArray<Sent>, ordered: boolean, ready: () => boolean | Promise<boolean>, fault: () => Promise<void>) => {
  const told: Array<Told> = []
  let faultAt = 0
  await runtime.runPromise(Effect.scoped(Effect.gen(function*() {
    const loop = yield* AgentLoop
    const fibers: Array<Fiber.Fiber<void>> = []
    for (const [i, turn] of turns.entries()) {
      fibers.push(yield* Effect.forkChild(Effect.map(loop.turn(turn.session, turn.input), (result) => {
        told.push({ ...turn, result, at: performance.now() })
      })))
      if (ordered) {
        yield* Effect.promise(() => waitUntil(`turn ${i} to be stored`, async () =>
          Number(await cluster.pg.psql(`SELECT count(*) FROM cluster_messages WHERE entity_id = '${turn.session}' AND kind = 0`)) === i + 1))
      }
    }
    yield* Effect.promise(() => waitUntil(`${name}: the fault's moment`, ready, 120_000))
    faultAt = performance.now()
    yield* Effect.promise(fault)
    yield* Fiber.joinAll(fibers)
  })))
  const calls = ran()
  let inLog = 0
  let disagree = 0
  let lost = 0
  for (const turn of told) {
    const logged = (await inputs(turn.session)).includes(turn.input)
    const completed = turn.result.status === "completed"
    if (logged) inLog++
    // completed only if in the log, aborted only if not (a failed turn may or may not be: its commit says)
    if ((completed && !logged) || (turn.result.status === "aborted" && logged)) disagree++
    if (!logged) lost++
  }
  const twice = turns.filter((turn) => calls.filter((line) => line === `record ${turn.note}`).length > 1).length
  const recovery = told.filter((turn) => turn.at > faultAt).map((turn) => (turn.at - faultAt) / 1000).sort((a, b) => a - b)
  const completed = told.filter((turn) => turn.result.status === "completed").length
  const row = [
    name,
    turns.length,
    completed,
    inLog,
    told.length - completed,
    lost,
    disagree,
    twice,
    `${percentile(recovery, 0.5).toFixed(1)} s`,
    `${percentile(recovery, 0.95).toFixed(1)} s`
  ]
  console.log(`| ${row.join(" | ")} |`)
  for (const turn of told.filter((turn) => turn.result.status !== "completed").slice(0, 3)) {
    console.log(`|   e.g. ${turn.session}: ${turn.result.status}: ${turn.result.error ?? ""} | | | | | | | | | |`)
  }
}

/** The runner a session's turns run on. */
const ownerOf = (session: string) => live().find((runner) => runner.sessions().has(session))
const spread = (prefix: string): ReadonlyArray<Sent> =>
  Array.from({ length: SESSIONS }, (_, i) => ({ session: `${prefix}-${i}`, input: `tools-after ${1000 + 50 * i} ${prefix}${i}`, note: `${prefix}${i}` }))
/** The live runner with the most sessions of `prefix` (the busiest). */
const busiest = (prefix: string) =>
  live().map((runner) => ({ runner, n: [...runner.sessions()].filter((s) => s.startsWith(`${prefix}-`)).length })).sort((a, b) => b.n - a.n)[0]!.runner

try {
  console.log(`3 runner processes, ${os.cpus().length} CPUs shared with the client and Postgres; a non-idempotent tool per turn`)
  console.log("| fault | sent | told completed | in the log | told aborted/failed | lost | told ≠ log | side effects twice | recovery p50 | recovery p95 |")
  console.log("|---|---|---|---|---|---|---|---|---|---|")

  await scenario("kill -9 of a runner", spread("kill"), false, () => ran().filter((line) => line.startsWith("record kill")).length >= 3, async () => {
    const victim = busiest("kill")
    victim.child.kill("SIGKILL")
    await victim.exited
  })
  await cluster.startRunner()

  const queued: ReadonlyArray<Sent> = [
    { session: "queue-0", input: "tools a;deploy", note: "a" },
    ...Array.from({ length: QUEUED }, (_, i) => ({ session: "queue-0", input: `tools q${i + 1}`, note: `q${i + 1}` }))
  ]
  await scenario(`kill -9 in exec, ${QUEUED} queued`, queued, true, () => ran().includes("deploy"), async () => {
    const victim = ownerOf("queue-0")!
    victim.child.kill("SIGKILL")
    await victim.exited
  })
  const order = await inputs("queue-0")
  console.log(`|   queued turns in the log in the order sent: ${JSON.stringify(order) === JSON.stringify(queued.map((t) => t.input))} | | | | | | | | | |`)
  await cluster.startRunner()

  await scenario(`SIGSTOP ${FREEZE_MS / 1000} s, SIGCONT`, spread("stop"), false, () => ran().filter((line) => line.startsWith("record stop")).length >= 3, async () => {
    const victim = busiest("stop")
    victim.child.kill("SIGSTOP")
    await new Promise((resolve) => setTimeout(resolve, FREEZE_MS))
    victim.child.kill("SIGCONT")
  })

  await scenario("Postgres restart (fast)", spread("pg"), false, () => ran().filter((line) => line.startsWith("record pg")).length >= 3, () => cluster.pg.restart())
} finally {
  await runtime.dispose()
  await cluster.close()
  fs.rmSync(path.dirname(toolLog), { recursive: true, force: true })
}
