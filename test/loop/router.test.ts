import { describe, expect, it } from "@effect/vitest"
import { type Duration, Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, type ProviderTypes, Scripted } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

const lastUser = (request: ProviderTypes.ProviderRequest) => request.messages.filter((m) => m.role === "user").map((m) => m.content)

/** Answers with the user messages it saw, after `delay`. */
const echoUsers = (delay: Duration.Input) => (request: ProviderTypes.ProviderRequest): Scripted.ScriptedResponse => ({
  content: `saw ${lastUser(request).join(" + ")}`,
  delay
})

describe("router (send / outbound)", () => {
  it.effect("a second message for a busy session becomes steering: one reply accounts for both", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const replies = yield* Effect.forkChild(Stream.runCollect(Stream.take(loop.outbound, 1)))
      yield* loop.send({ sessionKey: "s", content: "first" })
      yield* Testing.settled(loop.activeTurn("s"))
      yield* TestClock.adjust("10 millis")
      yield* loop.send({ sessionKey: "s", content: "second" })
      yield* TestClock.adjust("1 second")
      const [reply] = yield* Fiber.join(replies)
      expect(reply!.status).toBe("completed")
      expect(reply!.content).toBe("saw first + second")
      expect(yield* (yield* Scripted.ScriptedLog).requests).toHaveLength(2)
    }).pipe(Effect.provide(Testing.layer({ script: echoUsers("100 millis") }))))

  it.effect("two messages arriving together for an idle session start one turn; the second is its steering", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const replies = yield* Effect.forkChild(Stream.runCollect(Stream.take(loop.outbound, 1)))
      yield* Effect.all([loop.send({ sessionKey: "s", content: "one" }), loop.send({ sessionKey: "s", content: "two" })], {
        concurrency: "unbounded"
      })
      const log = yield* Scripted.ScriptedLog
      yield* Testing.settled(Effect.map(log.requests, (r) => r.length === 1))
      yield* TestClock.adjust("1 second")
      const [reply] = yield* Fiber.join(replies)
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      expect(requests).toHaveLength(1)
      expect(lastUser(requests[0]!)).toEqual(["one", "two"])
      expect(reply!.content).toBe("saw one + two")
    }).pipe(Effect.provide(Testing.layer({ script: echoUsers("100 millis") }))))

  it.effect("follow-ups F1, F2 queued during a turn run as two more turns, in order, each seeing the previous", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const replies = yield* Effect.forkChild(Stream.runCollect(Stream.take(loop.outbound, 3)))
      yield* loop.send({ sessionKey: "s", content: "start" })
      yield* Testing.settled(loop.activeTurn("s"))
      yield* loop.injectFollowUp("s", "F1")
      yield* loop.injectFollowUp("s", "F2")
      yield* TestClock.adjust("1 second")
      const all = yield* Fiber.join(replies)
      expect(all.map((r) => r.content)).toEqual(["saw start", "saw start + F1", "saw start + F1 + F2"])
      expect(all[0]!.result.followUps).toEqual(["F1", "F2"])
      expect(new Set(all.map((r) => r.turnId)).size).toBe(3)
    }).pipe(Effect.provide(Testing.layer({ script: echoUsers("100 millis") }))))

  it.effect("two sessions run in parallel", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const replies = yield* Effect.forkChild(Stream.runCollect(Stream.take(loop.outbound, 2)))
      yield* loop.send({ sessionKey: "a", content: "x" })
      yield* loop.send({ sessionKey: "b", content: "y" })
      yield* Testing.settled(Effect.map(loop.activeTurns, (turns) => turns.length === 2))
      yield* TestClock.adjust("100 millis")
      const all = yield* Fiber.join(replies)
      expect(all.map((r) => r.sessionKey).sort()).toEqual(["a", "b"])
    }).pipe(Effect.provide(Testing.layer({ script: echoUsers("100 millis") }))))

  it.effect("maxParallelTurns bounds the workers: the third session waits for a slot", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const replies = yield* Effect.forkChild(Stream.runCollect(Stream.take(loop.outbound, 3)))
      for (const key of ["a", "b", "c"]) yield* loop.send({ sessionKey: key, content: key })
      yield* Testing.settled(Effect.map(loop.activeTurns, (turns) => turns.length === 2))
      yield* TestClock.adjust("50 millis")
      expect((yield* loop.activeTurns).length).toBe(2)
      yield* TestClock.adjust("50 millis")
      yield* Testing.settled(Effect.map(loop.activeTurns, (turns) => turns.length === 1 && turns[0]!.sessionKey === "c"))
      yield* TestClock.adjust("100 millis")
      const all = yield* Fiber.join(replies)
      expect(all.map((r) => r.sessionKey)).toEqual(["a", "b", "c"])
    }).pipe(Effect.provide(Testing.layer({ config: { maxParallelTurns: 2 }, script: echoUsers("100 millis") }))))
})
