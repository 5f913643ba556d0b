/**
 * The loop across machines: three runner processes on Effect Cluster with their storage on a real
 * Postgres, a client in this process using the plain `AgentLoop` interface, and a runner killed in
 * the middle of a turn. Multi-process, so on real time: every wait polls a condition with a deadline.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Exit, Fiber, Layer, ManagedRuntime, Queue, Schema, Stream } from "effect"
import type { Sharding } from "effect/cluster"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AgentLoop, AgentLoopCluster, type AgentEvent, Message, SessionStore, SessionStoreJsonl, type Turn } from "effect-agent-loop"
import { OUTPUT_UNSUPPORTED } from "../../src/cluster/client.ts"
import { LOST_TURN_ERROR } from "../../src/cluster/entity.ts"
import type { SessionEvent } from "../../src/cluster/protocol.ts"
import { startCluster, type TestCluster, waitUntil } from "../support/cluster.ts"
import { postgresProbe, postgresSuite } from "../support/postgres.ts"

const userTexts = (result: Turn.TurnResult) => result.finalMessage?.content.replace(/^seen \d+: /, "").split(" | ")

describe.skipIf(!postgresProbe.ok)(postgresSuite("AgentLoop on a cluster of 3 runner processes (Postgres storage)"), () => {
  let cluster: TestCluster
  let runtime: ManagedRuntime.ManagedRuntime<AgentLoop | Sharding.Sharding, unknown>
  const run = <A, E>(effect: Effect.Effect<A, E, AgentLoop | Sharding.Sharding>) => runtime.runPromise(effect)
  const turn = (sessionKey: string, input: string) =>
    runtime.runPromise(Effect.gen(function*() {
      return yield* (yield* AgentLoop).turn(sessionKey, input)
    }))
  const history = (sessionKey: string) =>
    Effect.runPromise(
      Effect.gen(function*() {
        return yield* (yield* SessionStore).load(sessionKey)
      }).pipe(
        Effect.provide(SessionStoreJsonl.layer(cluster.sessionsDir).pipe(Layer.provide(NodeServices.layer)))
      )
    )

  beforeAll(async () => {
    cluster = await startCluster(3)
    runtime = ManagedRuntime.make(cluster.client())
  })

  afterAll(async () => {
    await runtime?.dispose()
    await cluster?.close()
  })

  it("runs turns of many sessions on the runners, each session one owner at a time with its whole history", async () => {
    const sessions = Array.from({ length: 12 }, (_, i) => `spread-${i}`)
    const results = await run(Effect.gen(function*() {
      const loop = yield* AgentLoop
      return yield* Effect.forEach(sessions, (key) =>
        Effect.gen(function*() {
          const one = yield* loop.turn(key, `${key} one`)
          expect([key, one.status, one.error]).toEqual([key, "completed", undefined])
          return yield* loop.turn(key, `${key} two`)
        }), { concurrency: "unbounded" })
    }))
    for (const [i, result] of results.entries()) {
      expect(result.status).toBe("completed")
      expect(userTexts(result)).toEqual([`${sessions[i]} one`, `${sessions[i]} two`])
    }
    // Which runner holds a session is the cluster's choice, and load may move a shard between two
    // turns: what is promised is one owner at a time, so the stored history is whole, each turn's
    // messages once, in order, whichever runners ran them.
    for (const key of sessions) {
      expect((await history(key)).map((m) => `${m.role}:${m.content}`)).toEqual([
        `user:${key} one`,
        `assistant:seen 1: ${key} one`,
        `user:${key} two`,
        `assistant:seen 3: ${key} one | ${key} two`
      ])
      expect(cluster.runners.some((runner) => runner.sessions().has(key))).toBe(true)
    }
  })

  it("a turn with an image runs on the runner and is saved with it; the runner's model decides whether images are taken", async () => {
    const picture = [Message.text("what is this?"), Message.image("image/png", Buffer.from("png bytes").toString("base64"))]
    const outcome = await run(Effect.gen(function*() {
      const loop = yield* AgentLoop
      const seen = yield* loop.turn("pictures", picture, { model: "vision" })
      const refused = yield* Effect.flip(loop.turn("pictures", picture))
      const tooLarge = yield* Effect.flip(loop.turn("pictures", [Message.image("image/png", Buffer.alloc(5 * 1024 * 1024 + 1).toString("base64"))]))
      return { seen, refused, tooLarge }
    }))
    expect(outcome.seen.status).toBe("completed")
    expect(userTexts(outcome.seen)).toEqual([Message.textOf(picture)])
    expect(outcome.refused).toMatchObject({ _tag: "ContentRejected", reason: "unsupported" })
    expect(outcome.tooLarge).toMatchObject({ _tag: "ContentRejected", reason: "too_large" })
    expect(await history("pictures")).toEqual([Message.user(picture), outcome.seen.finalMessage])
  })

  it("a turn's model options reach the loop on the session's runner", async () => {
    const result = await run(Effect.gen(function*() {
      return yield* (yield* AgentLoop).turn("tuned", "options please", { temperature: 0.3, reasoning: { effort: "low" } })
    }))
    expect(result.status).toBe("completed")
    expect(JSON.parse(result.finalMessage!.content)).toEqual({ temperature: 0.3, reasoning: { effort: "low" } })
  })

  it("compact summarises the session on its runner, the log kept", async () => {
    const result = await run(Effect.gen(function*() {
      const loop = yield* AgentLoop
      yield* loop.turn("compacted", "one")
      yield* loop.turn("compacted", "two")
      return yield* loop.compact("compacted", { keepMessages: 2 })
    }))
    expect(result).toEqual({ sessionKey: "compacted", summarized: 2, remaining: 3 })
    const view = await history("compacted")
    expect(view.map((m) => m.role)).toEqual(["system", "user", "assistant"])
    expect(Message.textOf(view[0]!.content)).toMatch(/^\[Summary of the earlier conversation\]\nseen 2: /)
  })

  it("a turn asking for a typed answer fails saying the cluster does not carry it, and reaches no runner", async () => {
    const result = await run(Effect.gen(function*() {
      return yield* (yield* AgentLoop).turn("typed", "hi", { output: Schema.Struct({ a: Schema.String }) })
    }))
    expect([result.status, result.error, result.output]).toEqual(["failed", OUTPUT_UNSUPPORTED, undefined])
    expect(cluster.runners.some((runner) => runner.sessions().has("typed"))).toBe(false)
  })

  it("steers, interrupts and reports the active turn of a session on its runner", async () => {
    await run(Effect.gen(function*() {
      const loop = yield* AgentLoop
      expect((yield* Effect.exit(loop.injectSteering("control", "anyone?"))).pipe(Exit.isFailure)).toBe(true)

      // steering reaches the turn running on the session's runner
      const steered = yield* Effect.forkChild(loop.turn("control", "slow start"))
      yield* waitFor(loop.activeTurn("control"))
      yield* loop.injectSteering("control", "steer here")
      const result = yield* Fiber.join(steered)
      expect(result.status).toBe("completed")
      expect(userTexts(result)).toEqual(["slow start", "steer here"])

      // a hard abort from the client ends the runner's turn aborted, nothing saved
      const hanging = yield* Effect.forkChild(loop.turn("control", "hang on"))
      const info = yield* waitFor(loop.activeTurn("control"))
      expect(info.sessionKey).toBe("control")
      expect((yield* loop.activeTurns).map((turn) => turn.turnId)).toContain(info.turnId)
      yield* loop.interruptHard("control")
      const aborted = yield* Fiber.join(hanging)
      expect(aborted.status).toBe("aborted")
      expect(aborted.turnId).toBe(info.turnId)
      const error = yield* Effect.flip(loop.interruptHard("control"))
      expect(error._tag).toBe("NoActiveTurn")
    }))
    expect((await history("control")).filter((m) => m.role === "user").map((m) => m.content)).toEqual(["slow start", "steer here"])
  })

  it("queues a follow-up and interrupts gracefully on the session's runner", async () => {
    await run(Effect.gen(function*() {
      const loop = yield* AgentLoop
      const followed = yield* Effect.forkChild(loop.turn("polite", "slow one"))
      yield* waitFor(loop.activeTurn("polite"))
      yield* loop.injectFollowUp("polite", "afterwards")
      const first = yield* Fiber.join(followed)
      expect([first.status, first.followUps]).toEqual(["completed", ["afterwards"]])

      // the runner's turn gets its last call, and its answer ends the turn interrupted; the interrupt
      // is sent once the client saw the turn's first model call go out (the turn is active before it)
      const stopped = yield* Effect.scoped(Effect.gen(function*() {
        const subscription = yield* loop.subscribe({ capacity: 1000 })
        const stopping = yield* Effect.forkChild(loop.turn("polite", "slow two"))
        let event = yield* subscription.take
        while (!(event._tag === "LLMRequest" && event.sessionKey === "polite")) event = yield* subscription.take
        yield* loop.interruptGraceful("polite", "wrap up")
        return yield* Fiber.join(stopping)
      }))
      expect([stopped.status, stopped.finalMessage?.content]).toEqual(["interrupted", "thinking"])
      const late = yield* Effect.flip(loop.injectFollowUp("polite", "too late"))
      expect(late._tag).toBe("NoActiveTurn")
    }))
    expect((await history("polite")).map((m) => `${m.role}:${m.content}`)).toEqual([
      "user:slow one",
      "assistant:thinking",
      "user:slow two",
      "assistant:thinking"
    ])
  })

  it("routes send through the session's runner and publishes one outbound reply per turn", async () => {
    const replies = await run(Effect.scoped(Effect.gen(function*() {
      const loop = yield* AgentLoop
      const outbound = yield* Effect.forkScoped(Stream.runCollect(Stream.take(loop.outbound, 2)))
      yield* loop.send({ sessionKey: "routed-a", content: "hello a" })
      yield* loop.send({ sessionKey: "routed-b", content: "hello b" })
      return yield* Fiber.join(outbound)
    })))
    expect(replies.map((reply) => [reply.sessionKey, reply.status, reply.content]).sort()).toEqual([
      ["routed-a", "completed", "seen 1: hello a"],
      ["routed-b", "completed", "seen 1: hello b"]
    ])
  })

  it("delivers a session's events to the client's subscribers, from TurnStart to TurnEnd", async () => {
    const events = await run(Effect.scoped(Effect.gen(function*() {
      const loop = yield* AgentLoop
      const subscription = yield* loop.subscribe({ capacity: 1000 })
      const result = yield* loop.turn("watched", "look")
      const seen: Array<AgentEvent.AgentEvent> = []
      while (!seen.some((event) => event._tag === "TurnEnd")) seen.push(yield* subscription.take)
      return seen.filter((event) => event.turnId === result.turnId).map((event) => event._tag)
    })))
    expect(events[0]).toBe("TurnStart")
    expect(events).toContain("LLMResponse")
    expect(events.at(-1)).toBe("TurnEnd")
  })

  it("streams one session's events through the entity's Events RPC, and no other session's", async () => {
    const others = Array.from({ length: 12 }, (_, i) => `unobserved-${i}`)
    const { result, seen } = await run(Effect.scoped(Effect.gen(function*() {
      const loop = yield* AgentLoop
      const clientFor = yield* AgentLoopCluster.AgentSession.client
      const received = yield* Queue.unbounded<SessionEvent>()
      yield* clientFor("observed").Events().pipe(Stream.runForEach((event) => Queue.offer(received, event)), Effect.forkScoped)
      expect((yield* Queue.take(received))._tag).toBe("Subscribed")
      // other sessions' turns, some on the observed session's runner, before and around its own
      const elsewhere = yield* Effect.forkChild(Effect.forEach(others, (key) => loop.turn(key, "elsewhere"), { concurrency: "unbounded" }))
      const result = yield* loop.turn("observed", "look here")
      yield* Fiber.join(elsewhere)
      const seen: Array<SessionEvent> = []
      while (!seen.some((event) => event._tag === "TurnEnd")) seen.push(yield* Queue.take(received))
      return { result, seen }
    })))
    expect(seen.map((event) => ("sessionKey" in event ? event.sessionKey : event._tag))).toEqual(seen.map(() => "observed"))
    expect(seen.map((event) => event._tag)).toEqual(expect.arrayContaining(["TurnStart", "LLMResponse", "TurnEnd"]))
    expect(seen.every((event) => event._tag === "Subscribed" || event.turnId === result.turnId)).toBe(true)
  })

  it("a runner killed mid-turn: the turn ends aborted with nothing saved, the session moves, nothing is lost or doubled", async () => {
    const key = "failover"
    const first = await turn(key, "first")
    expect(first.status).toBe("completed")

    const hanging = turn(key, "hang forever")
    await waitUntil("the hanging turn to start on a runner", () => cluster.runners.filter((r) => r.sessions().has(key)).length === 1 && run(Effect.gen(function*() {
        return (yield* (yield* AgentLoop).activeTurn(key)) !== undefined
      })))
    const owner = cluster.runners.find((runner) => runner.sessions().has(key))!
    owner.child.kill("SIGKILL")
    await owner.exited

    // sent while the session has no runner: delivered once its next runner has it
    const during = turn(key, "during")
    const lost = await hanging
    expect(lost.status).toBe("aborted")
    expect(lost.error).toBe(LOST_TURN_ERROR)
    expect(lost.messages).toEqual([])
    const delivered = await during
    expect(delivered.status).toBe("completed")
    const after = await turn(key, "after")
    expect(userTexts(after)).toEqual(["first", "during", "after"])

    const survivors = cluster.runners.filter((runner) => runner !== owner && runner.sessions().has(key))
    expect(survivors).toHaveLength(1)
    const stored = await history(key)
    expect(stored.map((m) => `${m.role}:${m.content}`)).toEqual([
      "user:first",
      "assistant:seen 1: first",
      "user:during",
      "assistant:seen 3: first | during",
      "user:after",
      "assistant:seen 5: first | during | after"
    ])
  })
})

/** Polls `check` until it gives a value, for at most 20 s. */
const waitFor = <A, E, R>(check: Effect.Effect<A | undefined, E, R>) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 20_000
    while (Date.now() < deadline) {
      const value = yield* check
      if (value !== undefined) return value
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 25)))
    }
    return yield* Effect.die(new Error("condition never held within 20 s"))
  })
