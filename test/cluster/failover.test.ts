/**
 * Order and queued work across a runner's death: three runner processes on a real Postgres, the
 * runner of a session killed (SIGKILL) while its turn runs a call that is not idempotent and later
 * turns of the session wait behind it. The turn resumes first on the session's next runner, the
 * waiting turns run after it in the order they were sent, none is aborted, the call runs once; and
 * a turn killed before its first checkpoint (its model call in flight) runs again from the start.
 * The same with the runner frozen (SIGSTOP past its lock expiry) instead of killed, then woken.
 * Multi-process, on real time: every wait polls a condition with a deadline.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Fiber, ManagedRuntime } from "effect"
import type { Sharding } from "effect/cluster"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AgentLoop, Checkpoint, Message, type Turn } from "effect-agent-loop"
import { type RunnerProcess, startCluster, type TestCluster, waitUntil } from "../support/cluster.ts"
import { postgresProbe, postgresSuite } from "../support/postgres.ts"

/** Turns queued behind the one whose runner is killed. */
const QUEUED = 50

describe.skipIf(!postgresProbe.ok)(postgresSuite("a session's turns across its runner's death"), () => {
  let cluster: TestCluster
  let runtime: ManagedRuntime.ManagedRuntime<AgentLoop | Sharding.Sharding, unknown>
  const toolLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-failover-")), "tools.log")
  const ran = () => fs.readFileSync(toolLog, "utf8").split("\n").filter((line) => line !== "")

  beforeAll(async () => {
    fs.writeFileSync(toolLog, "")
    // one runner for each test to kill, and one more to take the sessions over
    cluster = await startCluster(3, undefined, { store: "sql", toolLog })
    runtime = ManagedRuntime.make(cluster.client())
  }, 180_000)

  afterAll(async () => {
    await runtime?.dispose()
    await cluster?.close()
  })

  /** The user messages of a session's log, in order, read straight from Postgres. */
  const inputs = async (sessionKey: string) =>
    (await cluster.pg.psql(
      `SELECT e.entry FROM agent_loop_entries e JOIN agent_loop_sessions s ON s.session_id = e.session_id
       WHERE s.session_key = '${sessionKey}' ORDER BY e.seq`
    )).split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as { role: string; content: unknown })
      .filter((entry) => entry.role === "user").map((entry) => String(entry.content))
  const stored = async (sessionKey: string) =>
    Number(await cluster.pg.psql(`SELECT count(*) FROM cluster_messages WHERE entity_id = '${sessionKey}' AND kind = 0`))
  /** Kills the runner that has the session; waits for its exit. */
  const killOwner = async (sessionKey: string) => {
    const owners = cluster.runners.filter((runner) => runner.child.exitCode === null && runner.child.signalCode === null && runner.sessions().has(sessionKey))
    expect(owners).toHaveLength(1)
    owners[0]!.child.kill("SIGKILL")
    await owners[0]!.exited
  }
  const toldInput = (result: Turn.TurnResult) =>
    result.messages.filter((message) => message.role === "user").map((message) => Message.textOf(message.content))

  // A runner joins and sessions move to it while their turns run. Which move, and when, is
  // placement that load can change (a loaded machine may start it after the turns are done, or
  // make a runner give its shards up when a lock renewal is late): the promise, with a store that
  // fences, is every turn completed once and every history whole. (With one that does not fence, a
  // turn cut off by a late renewal is reported as the log tells it: docs/scaling-out.md.)
  it("a runner joining while turns run: every turn completes once, histories whole", async () => {
    const sessions = Array.from({ length: 16 }, (_, i) => `moving-${i}`)
    const sent = new Map(sessions.map((key) => [key, [] as Array<string>]))
    const notCompleted: Array<string> = []
    let newcomer: RunnerProcess | undefined
    const joining = cluster.startRunner().then((runner) => (newcomer = runner))
    const deadline = Date.now() + 60_000
    // each session runs slow turns (a second each) until the new runner has run some, then one more
    await Promise.all(sessions.map(async (key) => {
      let settled = false
      while (Date.now() < deadline) {
        const input = `slow ${sent.get(key)!.length}`
        sent.get(key)!.push(input)
        const result = await runtime.runPromise(Effect.gen(function*() {
          return yield* (yield* AgentLoop).turn(key, input)
        }))
        if (result.status !== "completed") notCompleted.push(`${key} ${input}: ${result.status} ${result.error}`)
        if (settled) break
        settled = newcomer !== undefined && newcomer.sessions().size > 0
      }
    }))
    await joining
    expect(notCompleted).toEqual([])
    expect(newcomer).toBeDefined()
    for (const key of sessions) expect(await inputs(key)).toEqual(sent.get(key))
  }, 120_000)

  it("kill -9 during a call that is not idempotent, turns queued behind it: it resumes first, they follow in order, the call runs once", async () => {
    const key = "failover-queue"
    const results = await runtime.runPromise(Effect.scoped(Effect.gen(function*() {
      const loop = yield* AgentLoop
      const first = yield* Effect.forkChild(loop.turn(key, "tools a;deploy"))
      yield* Effect.promise(() => waitUntil("the first turn to run deploy", () => ran().includes("deploy")))
      // each queued turn sent once the one before it is stored: the order they were sent is the cluster's
      const queued: Array<Fiber.Fiber<Turn.TurnResult, unknown>> = []
      for (let i = 1; i <= QUEUED; i++) {
        queued.push(yield* Effect.forkChild(loop.turn(key, `tools q${i}`)))
        yield* Effect.promise(() => waitUntil(`turn ${i} to be stored`, async () => (await stored(key)) === i + 1))
      }
      yield* Effect.promise(() => killOwner(key))
      return yield* Fiber.joinAll([first, ...queued])
    })), { signal: AbortSignal.timeout(240_000) })

    expect(results.map((result) => [result.status, result.error])).toEqual(results.map(() => ["completed", undefined]))
    const sent = ["tools a;deploy", ...Array.from({ length: QUEUED }, (_, i) => `tools q${i + 1}`)]
    // the log holds each turn once, in the order they were sent; each client was told its own turn
    expect(await inputs(key)).toEqual(sent)
    expect(results.map(toldInput)).toEqual(sent.map((input) => [input]))
    // the call cut short was not run again (the model was told of the crash); every other ran once
    expect(results[0]!.finalMessage && Message.textOf(results[0]!.finalMessage.content)).toBe(`done: ${Checkpoint.INTERRUPTED_BY_CRASH}`)
    const calls = ran()
    expect(calls.filter((line) => line === "deploy")).toHaveLength(1)
    for (const note of ["a", ...Array.from({ length: QUEUED }, (_, i) => `q${i + 1}`)]) {
      expect(calls.filter((line) => line === `record ${note}`)).toHaveLength(1)
    }
  }, 300_000)

  it("SIGSTOP of the runner inside a call that is not idempotent, turns queued behind it, then SIGCONT: the turn resumes first elsewhere, they follow in order, each call runs once", async () => {
    const key = "failover-freeze"
    const deploys = () => ran().filter((line) => line === "deploy").length
    const before = deploys()
    let frozen: RunnerProcess | undefined
    let results: ReadonlyArray<Turn.TurnResult>
    try {
      results = await runtime.runPromise(Effect.scoped(Effect.gen(function*() {
        const loop = yield* AgentLoop
        const first = yield* Effect.forkChild(loop.turn(key, "tools b;deploy"))
        yield* Effect.promise(() => waitUntil("the first turn to run deploy", () => deploys() === before + 1))
        const queued: Array<Fiber.Fiber<Turn.TurnResult, unknown>> = []
        for (let i = 1; i <= 5; i++) {
          queued.push(yield* Effect.forkChild(loop.turn(key, `tools s${i}`)))
          yield* Effect.promise(() => waitUntil(`turn ${i} to be stored`, async () => (await stored(key)) === i + 1))
        }
        frozen = cluster.runners.find((runner) => runner.child.exitCode === null && runner.child.signalCode === null && runner.sessions().has(key))!
        frozen.child.kill("SIGSTOP")
        return yield* Fiber.joinAll([first, ...queued])
      })), { signal: AbortSignal.timeout(240_000) })
    } finally {
      frozen?.child.kill("SIGCONT")
    }
    const sent = ["tools b;deploy", ...Array.from({ length: 5 }, (_, i) => `tools s${i + 1}`)]
    expect(results.map((result) => [result.status, result.error])).toEqual(sent.map(() => ["completed", undefined]))
    expect(await inputs(key)).toEqual(sent)
    expect(deploys()).toBe(before + 1)
    for (const note of ["b", "s1", "s2", "s3", "s4", "s5"]) expect(ran().filter((line) => line === `record ${note}`)).toHaveLength(1)
  }, 300_000)

  it("kill -9 before a turn's first checkpoint (its model call in flight): it runs again from the start, and completes", async () => {
    const key = "failover-replay"
    const result = await runtime.runPromise(Effect.scoped(Effect.gen(function*() {
      const loop = yield* AgentLoop
      // its first reply comes 5 s late: the runner dies while the model is asked
      const turn = yield* Effect.forkChild(loop.turn(key, "tools-after 5000 z"))
      yield* Effect.promise(() => waitUntil("the turn to start", () => cluster.runners.some((runner) => runner.sessions().has(key))))
      yield* Effect.promise(() => killOwner(key))
      return yield* Fiber.join(turn)
    })))
    expect([result.status, result.error]).toEqual(["completed", undefined])
    expect(await inputs(key)).toEqual(["tools-after 5000 z"])
    expect(toldInput(result)).toEqual(["tools-after 5000 z"])
    expect(ran().filter((line) => line === "record z")).toHaveLength(1)
  }, 180_000)
})
