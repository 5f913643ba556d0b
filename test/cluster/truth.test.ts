/**
 * A cluster whose clients are told the truth: runner processes with their sessions in the
 * cluster's Postgres (fenced commits), a client in this process. A runner frozen (SIGSTOP) past its
 * lock expiry loses the session and cannot write when it wakes; a runner killed after its commit
 * and before its answer has its turn reported completed; a turn whose runner was frozen or killed
 * before its first checkpoint (no call of it ran) runs again on the next runner; in each case the
 * reported outcome is what the session log holds. A runner frozen before its turn's first
 * checkpoint runs none of that turn's tools when it wakes. Multi-process, on real time: every wait
 * polls a condition with a deadline, nothing sleeps.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Fiber, ManagedRuntime } from "effect"
import type { Sharding } from "effect/cluster"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AgentLoop, type Turn } from "effect-agent-loop"
import { type RunnerProcess, startCluster, type TestCluster, waitUntil } from "../support/cluster.ts"
import { postgresProbe, postgresSuite } from "../support/postgres.ts"

/** The session's messages as `role:text` lines (its other records, such as turn outcomes, aside), read straight from Postgres. */
const storedLog = async (cluster: TestCluster, sessionKey: string): Promise<ReadonlyArray<string>> => {
  const rows = await cluster.pg.psql(
    `SELECT e.entry FROM agent_loop_entries e JOIN agent_loop_sessions s ON s.session_id = e.session_id
     WHERE s.session_key = '${sessionKey}' ORDER BY e.seq`
  )
  return rows.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as { role: string; content: unknown })
    .filter((entry) => ["user", "assistant", "tool"].includes(entry.role))
    .map((entry) => `${entry.role}:${typeof entry.content === "string" ? entry.content : JSON.stringify(entry.content)}`)
}

/** How many turns of the session started on the runner. */
const startsOn = (runner: RunnerProcess, sessionKey: string) =>
  runner.output().split("\n").filter((line) => line.startsWith(`turn ${sessionKey} `)).length

describe.skipIf(!postgresProbe.ok)(postgresSuite("a cluster's reported outcomes match the session log"), () => {
  let cluster: TestCluster
  let runtime: ManagedRuntime.ManagedRuntime<AgentLoop | Sharding.Sharding, unknown>
  const turn = (sessionKey: string, input: string) =>
    runtime.runPromise(Effect.gen(function*() {
      return yield* (yield* AgentLoop).turn(sessionKey, input)
    }))
  /** Starts a turn and returns its fiber, to await later. */
  const startTurn = (sessionKey: string, input: string) =>
    runtime.runPromise(Effect.forkDetach(Effect.gen(function*() {
      return yield* (yield* AgentLoop).turn(sessionKey, input)
    })))
  const awaitTurn = (fiber: Fiber.Fiber<Turn.TurnResult, unknown>) => runtime.runPromise(Fiber.join(fiber))
  const alive = () => cluster.runners.filter((runner) => runner.child.exitCode === null && runner.child.signalCode === null)
  /** The runners' tools log each run here. */
  const toolLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-truth-")), "runs.log")
  const runs = () => (fs.existsSync(toolLog) ? fs.readFileSync(toolLog, "utf8").split("\n").filter((line) => line !== "") : [])

  beforeAll(async () => {
    cluster = await startCluster(3, undefined, { store: "sql", toolLog })
    runtime = ManagedRuntime.make(cluster.client())
  }, 120_000)

  afterAll(async () => {
    for (const runner of cluster?.runners ?? []) runner.child.kill("SIGCONT")
    await runtime?.dispose()
    await cluster?.close()
    fs.rmSync(path.dirname(toolLog), { recursive: true, force: true })
  })

  it("a runner frozen mid-turn loses the session; its turn runs again elsewhere, the next follows, and when it wakes it cannot write", async () => {
    const key = "frozen"
    expect((await turn(key, "t0")).status).toBe("completed")
    const t1 = await startTurn(key, "wait 3000 t1")
    await waitUntil("t1 to start on a runner", () => alive().some((runner) => startsOn(runner, key) >= 2), 60_000)
    const frozen = alive().find((runner) => startsOn(runner, key) >= 2)!
    const startsBefore = startsOn(frozen, key)
    const endsBefore = frozen.ends().filter((end) => end.sessionKey === key).length
    frozen.child.kill("SIGSTOP")
    try {
      // the runner that takes the session finds t1 claimed, not committed, with no checkpoint: it runs it again
      const again = await awaitTurn(t1)
      expect([again.status, again.finalMessage?.content]).toEqual(["completed", "waited 3000: t0 | wait 3000 t1"])
      const t2 = await turn(key, "t2")
      expect(t2.status).toBe("completed")
      expect(t2.finalMessage?.content).toBe("seen 5: t0 | wait 3000 t1 | t2")
      expect(startsOn(frozen, key)).toBe(startsBefore)
    } finally {
      frozen.child.kill("SIGCONT")
    }
    // awake, the frozen runner finishes t1 and tries to commit it: the store rejects its stale epoch
    const ends = () => frozen.ends().filter((end) => end.sessionKey === key)
    await waitUntil("the frozen runner's turn to end", () => ends().length > endsBefore, 60_000)
    expect(ends().slice(endsBefore).map((end) => end.status)).toEqual(["aborted"])
    expect(frozen.output()).toContain("is owned by another runner now")
    expect(await storedLog(cluster, key)).toEqual([
      "user:t0",
      "assistant:seen 1: t0",
      "user:wait 3000 t1",
      "assistant:waited 3000: t0 | wait 3000 t1",
      "user:t2",
      "assistant:seen 5: t0 | wait 3000 t1 | t2"
    ])
  }, 180_000)

  it("a runner frozen before its turn's first checkpoint: the turn runs again elsewhere, and when it wakes it runs none of its tools", async () => {
    const key = "frozen-early"
    // the model's first reply (a call of `record`) comes 15 s late: the runner is frozen while it
    // waits, however long a loaded machine takes to see the turn start
    const t = await startTurn(key, "tools-after 15000 early")
    await waitUntil("the turn to start on a runner", () => alive().some((runner) => startsOn(runner, key) >= 1), 60_000)
    const frozen = alive().find((runner) => startsOn(runner, key) >= 1)!
    const ends = () => frozen.ends().filter((end) => end.sessionKey === key)
    frozen.child.kill("SIGSTOP")
    try {
      // nothing was saved, so no call ran: the runner that takes the session runs the turn again
      const again = await awaitTurn(t)
      expect([again.status, again.finalMessage?.content]).toEqual(["completed", "done: recorded early"])
    } finally {
      frozen.child.kill("SIGCONT")
    }
    // awake, it gets the reply: the checkpoint before the call is refused (another attempt holds the
    // request), so the call never runs, and the turn ends there
    await waitUntil("the frozen runner's turn to end", () => ends().length > 0, 60_000)
    expect(ends().map((end) => end.status)).toEqual(["aborted"])
    // the call ran once: on the runner that ran the turn again
    expect(runs()).toEqual(["record early"])
    expect((await storedLog(cluster, key)).map((line) => line.split(":")[0])).toEqual(["user", "assistant", "tool", "assistant"])
  }, 180_000)

  it("a runner killed after its commit and before its answer: the turn is reported completed, as the log holds it", async () => {
    const key = "committed-then-killed"
    expect((await turn(key, "t0")).status).toBe("completed")
    // the runner kills itself (SIGKILL) once the turn is committed, before it answers
    const t1 = await turn(key, "die-after-commit t1")
    expect(t1.status).toBe("completed")
    expect(t1.finalMessage?.content).toBe("seen 3: t0 | die-after-commit t1")
    expect(t1.messages.map((m) => m.role)).toEqual(["user", "assistant"])
    const t2 = await turn(key, "t2")
    expect(t2.finalMessage?.content).toBe("seen 5: t0 | die-after-commit t1 | t2")
    expect(await storedLog(cluster, key)).toEqual([
      "user:t0",
      "assistant:seen 1: t0",
      "user:die-after-commit t1",
      "assistant:seen 3: t0 | die-after-commit t1",
      "user:t2",
      "assistant:seen 5: t0 | die-after-commit t1 | t2"
    ])
  }, 180_000)

  it("a runner killed before its turn's first checkpoint: the turn runs again on the next runner, once in the log", async () => {
    const key = "killed-mid-turn"
    expect((await turn(key, "t0")).status).toBe("completed")
    const t1 = await startTurn(key, "wait 3000 t1")
    await waitUntil("t1 to start on a runner", () => alive().some((runner) => startsOn(runner, key) >= 2), 60_000)
    const owner = alive().find((runner) => startsOn(runner, key) >= 2)!
    owner.child.kill("SIGKILL")
    await owner.exited
    const again = await awaitTurn(t1)
    expect([again.status, again.finalMessage?.content]).toEqual(["completed", "waited 3000: t0 | wait 3000 t1"])
    expect((await turn(key, "t2")).finalMessage?.content).toBe("seen 5: t0 | wait 3000 t1 | t2")
    expect(await storedLog(cluster, key)).toEqual([
      "user:t0",
      "assistant:seen 1: t0",
      "user:wait 3000 t1",
      "assistant:waited 3000: t0 | wait 3000 t1",
      "user:t2",
      "assistant:seen 5: t0 | wait 3000 t1 | t2"
    ])
  }, 180_000)
})
