/**
 * Turns that survive their runner: four runner processes on a real Postgres, a runner killed
 * (SIGKILL) in the middle of a turn after a completed tool call, while a second call runs; the
 * turn completes on the session's next runner from its last checkpoint. The tools log every run to
 * a file, so a call run twice shows. Multi-process, so on real time: every wait polls a condition
 * with a deadline.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Fiber, Layer, ManagedRuntime, Option, Redacted, Stream } from "effect"
import type { Sharding } from "effect/cluster"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AgentLoop, Checkpoint, type AgentEvent, type Message, SessionStore, SessionStoreJsonl, SessionStoreSql, type Turn } from "effect-agent-loop"
import { startCluster, type TestCluster, waitUntil } from "../support/cluster.ts"
import { postgresProbe, postgresSuite } from "../support/postgres.ts"

// Both kinds of session store: SQL (fenced commits, the default of `serve`; a redelivered request asks
// the log first) and JSON Lines (no fencing).
describe.skipIf(!postgresProbe.ok).each(["sql", "jsonl"] as const)(postgresSuite("a turn whose runner is killed resumes on the session's next runner (%s store)"), (store) => {
  let cluster: TestCluster
  let runtime: ManagedRuntime.ManagedRuntime<AgentLoop | Sharding.Sharding, unknown>
  const toolLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-resume-")), "runs.log")
  const runs = () => (fs.existsSync(toolLog) ? fs.readFileSync(toolLog, "utf8").split("\n").filter((line) => line !== "") : [])

  /** The session's messages in the store (its other records, such as turn outcomes, aside). */
  const history = (sessionKey: string) =>
    Effect.runPromise(
      Effect.gen(function*() {
        return (yield* (yield* SessionStore).log(sessionKey)).filter((entry) => ["user", "assistant", "tool", "system"].includes(entry.role))
      }).pipe(Effect.provide(
        store === "sql"
          ? SessionStoreSql.layer().pipe(Layer.provide(PgClient.layer({ url: Redacted.make(cluster.pg.url()) })), Layer.orDie)
          : SessionStoreJsonl.layer(cluster.sessionsDir).pipe(Layer.provide(NodeServices.layer))
      ))
    )

  /** Runs a turn with a subscriber on the client, kills its runner once `ready` holds, returns the result and the events seen. */
  const killedMidTurn = (sessionKey: string, input: string, ready: () => boolean, afterKill = () => {}) =>
    runtime.runPromise(Effect.scoped(Effect.gen(function*() {
      const loop = yield* AgentLoop
      const subscription = yield* loop.subscribe({ capacity: 1000 })
      const running = yield* Effect.forkChild(loop.turn(sessionKey, input))
      yield* Effect.promise(() => waitUntil(`the turn of ${sessionKey} to reach the call to cut short`, ready))
      const owners = cluster.runners.filter((runner) => runner.child.exitCode === null && runner.sessions().has(sessionKey))
      expect(owners).toHaveLength(1)
      owners[0]!.child.kill("SIGKILL")
      yield* Effect.promise(() => owners[0]!.exited)
      afterKill()
      const result: Turn.TurnResult = yield* Fiber.join(running)
      const events: Array<AgentEvent.AgentEvent> = []
      while (!events.some((event) => event._tag === "TurnEnd" && event.turnId === result.turnId)) events.push(yield* subscription.take)
      return { result, events: events.filter((event) => event.turnId === result.turnId), killed: owners[0]!.port }
    })))

  /** Kills the runner that has the session, once `ready` holds; its port. */
  const killOwner = (sessionKey: string, ready: () => boolean) =>
    Effect.gen(function*() {
      yield* Effect.promise(() => waitUntil(`the turn of ${sessionKey} to reach the call to cut short`, ready))
      const owners = cluster.runners.filter((runner) => runner.child.exitCode === null && runner.sessions().has(sessionKey))
      expect(owners).toHaveLength(1)
      owners[0]!.child.kill("SIGKILL")
      yield* Effect.promise(() => owners[0]!.exited)
      return owners[0]!.port
    })

  beforeAll(async () => {
    // one runner for each test to kill, and one more to take the session over after the last kill
    cluster = await startCluster(store === "sql" ? 8 : 6, undefined, { toolLog, store })
    runtime = ManagedRuntime.make(cluster.client())
  })

  afterAll(async () => {
    await runtime?.dispose()
    await cluster?.close()
    fs.rmSync(path.dirname(toolLog), { recursive: true, force: true })
  })

  it("kill -9 during a call that is not idempotent: completed calls are not re-run, the model is told of the crash, the log holds the turn once", async () => {
    const key = "resume-deploy"
    const { result, events, killed } = await killedMidTurn(key, "tools a;deploy", () => runs().includes("deploy"))

    expect([result.status, result.error]).toEqual(["completed", undefined])
    expect(result.finalMessage?.content).toBe(`done: ${Checkpoint.INTERRUPTED_BY_CRASH}`)
    expect(result.iterations).toBe(3)
    // neither the completed call nor the one cut short ran again
    expect(runs()).toEqual(["record a", "deploy"])

    const resumed = events.filter((event) => event._tag === "Resumed")
    expect(resumed).toHaveLength(1)
    expect(resumed[0]).toMatchObject({ turnId: result.turnId, fromIteration: 2, rerun: [] })
    expect(resumed[0]!._tag === "Resumed" && resumed[0]!.interrupted).toHaveLength(1)
    expect(resumed[0]!._tag === "Resumed" && resumed[0]!.runner).not.toBe(`127.0.0.1:${killed}`)
    expect(events.filter((event) => event._tag === "TurnEnd").map((event) => event._tag === "TurnEnd" && event.status)).toEqual(["completed"])
    expect(events.findIndex((event) => event._tag === "Resumed")).toBeLessThan(events.findIndex((event) => event._tag === "TurnEnd"))

    const stored = (await history(key)) as ReadonlyArray<Message.Message>
    expect(stored.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"])
    expect(stored).toEqual(result.messages)
    expect(stored[2]).toMatchObject({ role: "tool", content: "recorded a" })
    expect(stored[4]).toMatchObject({ role: "tool", toolName: "deploy", content: Checkpoint.INTERRUPTED_BY_CRASH, isError: true })
    // the checkpoint is gone once the turn ended
    expect(await cluster.pg.psql("SELECT count(*) FROM agent_loop_turn_checkpoints")).toBe("0")
  })

  it("kill -9 during an idempotent call: it runs again on the next runner, the completed call does not", async () => {
    const key = "resume-look"
    const release = () => fs.writeFileSync(`${toolLog}.release`, "")
    const { result, events } = await killedMidTurn(key, "tools b;look", () => runs().includes("look"), release)
    expect(result.status).toBe("completed")
    expect(result.finalMessage?.content).toBe("done: looked")
    expect(runs().filter((line) => line === "record b")).toEqual(["record b"])
    expect(runs().filter((line) => line === "look")).toEqual(["look", "look"])
    const kinds = events.map((event) => event._tag)
    expect(kinds.filter((kind) => kind === "Resumed")).toHaveLength(1)
    expect(kinds.indexOf("Resumed")).toBeLessThan(kinds.indexOf("TurnEnd"))
    expect((await history(key)).map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"])
  })

  it("kill -9 during a routed turn (send): it resumes on the next runner, its completed call is not re-run, the client gets its reply", async () => {
    const key = "resume-send"
    const earlier = runs().length
    const ran = () => runs().slice(earlier)
    const { reply, events, killed } = await runtime.runPromise(Effect.scoped(Effect.gen(function*() {
      const loop = yield* AgentLoop
      const subscription = yield* loop.subscribe({ capacity: 1000 })
      const replies = yield* Effect.forkScoped(Stream.runHead(Stream.filter(loop.outbound, (outbound) => outbound.sessionKey === key)))
      yield* loop.send({ sessionKey: key, content: "tools c;deploy" })
      const killed = yield* killOwner(key, () => ran().includes("deploy"))
      const reply = Option.getOrThrow(yield* Fiber.join(replies))
      const events: Array<AgentEvent.AgentEvent> = []
      while (!events.some((event) => event._tag === "TurnEnd" && event.turnId === reply.turnId)) events.push(yield* subscription.take)
      return { reply, events: events.filter((event) => event.turnId === reply.turnId), killed }
    })))

    expect([reply.status, reply.result.error]).toEqual(["completed", undefined])
    expect(reply.content).toBe(`done: ${Checkpoint.INTERRUPTED_BY_CRASH}`)
    expect(reply.result.iterations).toBe(3)
    // neither the completed call nor the one cut short ran again
    expect(ran()).toEqual(["record c", "deploy"])

    const resumed = events.filter((event) => event._tag === "Resumed")
    expect(resumed).toHaveLength(1)
    expect(resumed[0]).toMatchObject({ turnId: reply.turnId, fromIteration: 2, rerun: [] })
    expect(resumed[0]!._tag === "Resumed" && resumed[0]!.runner).not.toBe(`127.0.0.1:${killed}`)
    expect(events.filter((event) => event._tag === "TurnEnd").map((event) => event._tag === "TurnEnd" && event.status)).toEqual(["completed"])

    const stored = (await history(key)) as ReadonlyArray<Message.Message>
    expect(stored.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"])
    expect(stored).toEqual(reply.result.messages)
    expect(stored[0]).toMatchObject({ role: "user", content: "tools c;deploy" })
    expect(stored[2]).toMatchObject({ role: "tool", content: "recorded c" })
    expect(await cluster.pg.psql("SELECT count(*) FROM agent_loop_turn_checkpoints")).toBe("0")
  })

  it("kill -9 after steering and a follow-up were queued: the resumed turn has the steering in its conversation and returns the follow-up", async () => {
    const key = "resume-queued"
    const earlier = runs().length
    const ran = () => runs().slice(earlier)
    const result = await runtime.runPromise(Effect.scoped(Effect.gen(function*() {
      const loop = yield* AgentLoop
      const running = yield* Effect.forkChild(loop.turn(key, "tools e;deploy"))
      yield* Effect.promise(() => waitUntil(`the turn of ${key} to reach its call to deploy`, () => ran().includes("deploy")))
      // each is saved with the turn's checkpoint before the call returns
      yield* loop.injectSteering(key, "also check the logs")
      yield* loop.injectFollowUp(key, "then tell me")
      yield* killOwner(key, () => true)
      return yield* Fiber.join(running)
    })))
    expect([result.status, result.error]).toEqual(["completed", undefined])
    expect(ran()).toEqual(["record e", "deploy"])
    expect(result.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["tools e;deploy", "also check the logs"])
    expect(result.followUps).toEqual(["then tell me"])
    expect(await history(key)).toEqual(result.messages)
  })

  it("kill -9 during a send's follow-up turn: it resumes, and the follow-up that waited behind it still runs, on the next runner", async () => {
    const key = "resume-backlog"
    const earlier = runs().length
    const ran = () => runs().slice(earlier)
    const replies = await runtime.runPromise(Effect.scoped(Effect.gen(function*() {
      const loop = yield* AgentLoop
      const subscription = yield* loop.subscribe({ capacity: 1000 })
      const outbound = yield* Effect.forkScoped(Stream.runCollect(Stream.take(Stream.filter(loop.outbound, (reply) => reply.sessionKey === key), 3)))
      // a first answer 5 s late: time enough, on a loaded machine, to queue the follow-ups while it runs
      yield* loop.send({ sessionKey: key, content: "wait 5000 first" })
      let event = yield* subscription.take
      while (!(event._tag === "LLMRequest" && event.sessionKey === key)) event = yield* subscription.take
      // two follow-ups: the first runs next (and calls `deploy`, which never ends), the second waits behind it
      yield* loop.injectFollowUp(key, "tools f;deploy")
      yield* loop.injectFollowUp(key, "third")
      yield* killOwner(key, () => ran().includes("deploy"))
      return yield* Fiber.join(outbound).pipe(Effect.timeout("60 seconds"))
    })))
    expect(replies.map((reply) => [reply.status, reply.content])).toEqual([
      ["completed", "waited 5000: wait 5000 first"],
      ["completed", `done: ${Checkpoint.INTERRUPTED_BY_CRASH}`],
      ["completed", expect.stringMatching(/ \| third$/)]
    ])
    expect(ran()).toEqual(["record f", "deploy"])
    const users = ((await history(key)) as ReadonlyArray<Message.Message>).filter((m) => m.role === "user").map((m) => m.content)
    expect(users).toEqual(["wait 5000 first", "tools f;deploy", "third"])
    expect(await cluster.pg.psql("SELECT count(*) FROM agent_loop_send_backlogs")).toBe("0")
  }, 120_000)

  // with commit records only: a store that does not fence cannot tell a committed turn from one to resume
  it.skipIf(store !== "sql")("a routed turn committed just before its runner died (its checkpoint not yet deleted) is not run again", async () => {
    const key = "resume-send-committed"
    const earlier = runs().length
    const alive = () => cluster.runners.filter((runner) => runner.child.exitCode === null && runner.child.signalCode === null).length
    const aliveBefore = alive()
    const reply = await runtime.runPromise(Effect.scoped(Effect.gen(function*() {
      const loop = yield* AgentLoop
      const replies = yield* Effect.forkScoped(Stream.runHead(Stream.filter(loop.outbound, (outbound) => outbound.sessionKey === key)))
      // the runner kills itself once the turn is committed, before it deletes the turn's checkpoint
      yield* loop.send({ sessionKey: key, content: "die-after-commit tools d" })
      return Option.getOrThrow(yield* Fiber.join(replies))
    })))
    // the runner that ran the turn did die
    await waitUntil("the runner of the turn to exit", () => alive() === aliveBefore - 1)
    expect([reply.status, reply.content]).toEqual(["completed", "done: recorded d"])
    expect(runs().slice(earlier)).toEqual(["record d"])
    const stored = (await history(key)) as ReadonlyArray<Message.Message>
    expect(stored.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"])
    expect(reply.result.messages).toEqual(stored)
    expect(await cluster.pg.psql("SELECT count(*) FROM agent_loop_turn_checkpoints")).toBe("0")
  })

  it.skipIf(store !== "sql")("a send's later turn committed just before its runner died is reported alone: its reply holds its messages, not the earlier turn's", async () => {
    const key = "resume-send-later-committed"
    const alive = () => cluster.runners.filter((runner) => runner.child.exitCode === null && runner.child.signalCode === null).length
    const aliveBefore = alive()
    const replies = await runtime.runPromise(Effect.scoped(Effect.gen(function*() {
      const loop = yield* AgentLoop
      const subscription = yield* loop.subscribe({ capacity: 1000 })
      const outbound = yield* Effect.forkScoped(Stream.runCollect(Stream.take(Stream.filter(loop.outbound, (reply) => reply.sessionKey === key), 2)))
      yield* loop.send({ sessionKey: key, content: "wait 5000 first" })
      let event = yield* subscription.take
      while (!(event._tag === "LLMRequest" && event.sessionKey === key)) event = yield* subscription.take
      // the follow-up (no tools, so no checkpoint): its runner kills itself once that turn is committed
      yield* loop.injectFollowUp(key, "die-after-commit second")
      return yield* Fiber.join(outbound).pipe(Effect.timeout("60 seconds"))
    })))
    await waitUntil("the runner of the turn to exit", () => alive() === aliveBefore - 1)
    const [first, second] = replies
    expect([first!.status, second!.status]).toEqual(["completed", "completed"])
    const users = (reply: typeof first) => reply!.result.messages.filter((m) => m.role === "user").map((m) => m.content)
    expect([users(first), users(second)]).toEqual([["wait 5000 first"], ["die-after-commit second"]])
    expect([...first!.result.messages, ...second!.result.messages]).toEqual(await history(key))
    expect(first!.turnId).not.toBe(second!.turnId)
  }, 120_000)
})
