/**
 * Through the whole loop (`Testing.layer`, which is `AgentLoopLive`): every turn leaves its
 * outcome record in the log, whatever its status (with its error scrubbed of known secrets),
 * and every event of the session is journaled, numbered in the order the bus published it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Schema, Stream } from "effect"
import { AgentLoop, EventJournal, Message, ProviderRejected, Secrets, SessionLog, SessionStore, Tool } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

const outcomesOf = (sessionKey: string) =>
  Effect.gen(function*() {
    return SessionLog.outcomes(yield* (yield* SessionStore).log(sessionKey))
  })

describe("turn-outcome records from the loop", () => {
  it.effect("a completed turn: status, model, iterations, usage, times; the view is unchanged", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "hi")
      const [outcome] = yield* outcomesOf("s")
      expect(outcome).toMatchObject({
        role: "outcome",
        turnId: result.turnId,
        status: "completed",
        model: "test-model",
        iterations: 1,
        usage: { inputTokens: 3, outputTokens: 4 }
      })
      expect(outcome!.endedAt).toBeGreaterThanOrEqual(outcome!.startedAt)
      expect(outcome!.error).toBeUndefined()
      expect(yield* (yield* SessionStore).load("s")).toEqual([Message.user("hi"), Message.assistant("hello")])
      expect((yield* (yield* SessionStore).list)[0]!.status).toBe("completed")
    }).pipe(Effect.provide(Testing.layer({ script: [{ content: "hello", usage: { inputTokens: 3, outputTokens: 4 } }] }))))

  it.effect("a failed turn (ProviderRejected) gets its record with the error's tag and words, known secrets scrubbed", () =>
    Effect.gen(function*() {
      ;(yield* Secrets).add(["sk-very-secret-key-123"])
      const result = yield* (yield* AgentLoop).turn("s", "hi")
      expect(result.status).toBe("failed")
      const [outcome] = yield* outcomesOf("s")
      expect(outcome).toMatchObject({ status: "failed", error: { _tag: "ProviderRejected" } })
      expect(outcome!.error!.message).toContain("bad key <redacted>")
      expect(JSON.stringify(yield* (yield* SessionStore).log("s"))).not.toContain("sk-very-secret-key-123")
    }).pipe(Effect.provide(Testing.layer({
      script: [{ error: new ProviderRejected({ message: "bad key sk-very-secret-key-123", status: 401 }) }]
    }))))

  it.effect("a hard-aborted turn stores nothing of its messages, only its record", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* Deferred.await(started)
      yield* loop.interruptHard("s")
      expect((yield* Fiber.join(turn)).status).toBe("aborted")
      const log = yield* (yield* SessionStore).log("s")
      expect(log).toHaveLength(1)
      expect(log[0]).toMatchObject({ role: "outcome", status: "aborted" })
      expect(yield* (yield* SessionStore).load("s")).toEqual([])
    }).pipe(Effect.provide(Testing.layer({ tools: [blocks], script: [{ toolCalls: [{ name: "block" }] }] }))))
})

const started = Deferred.makeUnsafe<void>()
const blocks = Tool.make({
  name: "block",
  description: "never returns",
  parameters: Schema.Struct({}),
  execute: () => Effect.andThen(Deferred.succeed(started, undefined), Effect.never)
})

describe("the event journal of the loop", () => {
  it.effect("every event of the session's turns is journaled in publish order, numbered from 1, and stored", () =>
    Effect.gen(function*() {
      const recorded = (yield* Testing.recordEvents).all
      const journal = yield* EventJournal
      const loop = yield* AgentLoop
      yield* loop.turn("s", "one")
      yield* loop.turn("s", "two")
      const events = yield* recorded
      const followed = yield* journal.follow("s").pipe(Stream.take(events.length), Stream.runCollect)
      expect(followed.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1))
      expect(followed.map((e) => e.event)).toEqual(events)
      yield* journal.flush
      const stored = yield* (yield* SessionStore).journal!.read("s", 0)
      expect(stored).toEqual(followed)
    }).pipe(Effect.provide(Testing.layer({
      script: [{ content: ["a", "b", "c"] }, { content: "d" }]
    }))))
})
