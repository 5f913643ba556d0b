/**
 * A loop serving many session keys must not keep every key's state forever: an idle session ends
 * (`sessionEnd`) after `sessionIdleTimeout` and its state is released; a later turn on the key
 * begins the session again on its untouched stored history. On TestClock.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Stream } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, Hook, Message, SessionStore } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

const KEYS = 10_000

describe("idle sessions are released", () => {
  it.effect(`${KEYS} distinct keys: held while recent, none left after the idle timeout, each ended once`, () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const log = { start: 0, end: 0 }
      yield* loop.registerHook(Hook.make({
        sessionStart: () => void log.start++,
        sessionEnd: () => void log.end++
      }))
      for (let i = 0; i < KEYS; i++) yield* loop.turn(`key-${i}`, "hi")
      expect(Testing.heldSessions(loop)).toBe(KEYS)
      yield* TestClock.adjust("9 minutes")
      expect(Testing.heldSessions(loop)).toBe(KEYS)
      expect(log.end).toBe(0)
      yield* TestClock.adjust("1 minute")
      expect(Testing.heldSessions(loop)).toBe(0)
      expect(log).toEqual({ start: KEYS, end: KEYS })
    }).pipe(Effect.provide(Testing.layer({ script: () => ({ content: "ok" }) }))), 60_000)

  it.effect("the router's sessions are released too, after their last reply", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const replies = yield* Effect.forkChild(Stream.runCollect(Stream.take(loop.outbound, 50)))
      for (let i = 0; i < 50; i++) yield* loop.send({ sessionKey: `r-${i}`, content: "hi" })
      expect((yield* Fiber.join(replies)).length).toBe(50)
      yield* TestClock.adjust("1 second")
      expect(Testing.heldSessions(loop)).toBe(0)
    }).pipe(Effect.provide(Testing.layer({ script: () => ({ content: "ok" }), config: { sessionIdleTimeout: "1 second" } }))))

  it.effect("a session used again before the timeout is kept (one sessionStart); released and reused, it begins again on its history", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const loop = yield* AgentLoop
      yield* loop.registerHook(Hook.make({
        sessionStart: ({ sessionKey }) => void log.push(`start ${sessionKey}`),
        sessionEnd: ({ sessionKey }) => void log.push(`end ${sessionKey}`)
      }))
      yield* loop.turn("a", "one")
      yield* TestClock.adjust(999)
      yield* loop.turn("a", "two")
      yield* TestClock.adjust(999)
      expect(log).toEqual(["start a"])
      expect(Testing.heldSessions(loop)).toBe(1)
      yield* TestClock.adjust(1)
      expect(log).toEqual(["start a", "end a"])
      expect(Testing.heldSessions(loop)).toBe(0)
      yield* loop.turn("a", "three")
      expect(log).toEqual(["start a", "end a", "start a"])
      expect(yield* (yield* SessionStore).load("a")).toEqual([
        Message.user("one"),
        Message.assistant("ok"),
        Message.user("two"),
        Message.assistant("ok"),
        Message.user("three"),
        Message.assistant("ok")
      ])
    }).pipe(Effect.provide(Layer.fresh(Testing.layer({ script: () => ({ content: "ok" }), config: { sessionIdleTimeout: 1000 } })))))

  it.effect("a session is not released while its summary runs, and is released once the summary is done", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const events = (yield* Testing.recordEvents).all
      yield* loop.turn("s", "hello")
      yield* TestClock.adjust(4999)
      expect(Testing.heldSessions(loop)).toBe(1)
      expect((yield* events).filter((e) => e._tag === "SessionSummarize")).toEqual([])
      yield* TestClock.adjust(1)
      expect((yield* events).filter((e) => e._tag === "SessionSummarize")).toHaveLength(1)
      yield* TestClock.adjust(999)
      expect(Testing.heldSessions(loop)).toBe(1)
      yield* TestClock.adjust(1)
      expect(Testing.heldSessions(loop)).toBe(0)
    }).pipe(Effect.provide(Testing.layer({
      // A window of 100 tokens at 0.5: the seeded 180 runes plus this turn pass 200 runes.
      config: { sessionIdleTimeout: 1000, contextWindow: 100, summarizeThreshold: 0.5, summarizeKeepMessages: 2 },
      sessions: { s: [Message.user("x".repeat(90)), Message.assistant("y".repeat(90))] },
      script: [{ content: "an answer of some length" }, { content: "They talked.", delay: "5 seconds" }]
    }))))

  it.effect("a session is not released while a turn runs longer than the idle timeout", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("slow", "hi"))
      yield* TestClock.adjust(5000)
      expect(Testing.heldSessions(loop)).toBe(1)
      expect((yield* Fiber.join(turn)).status).toBe("completed")
      yield* TestClock.adjust(999)
      expect(Testing.heldSessions(loop)).toBe(1)
      yield* TestClock.adjust(1)
      expect(Testing.heldSessions(loop)).toBe(0)
    }).pipe(Effect.provide(Testing.layer({ script: [{ content: "ok", delay: 5000 }], config: { sessionIdleTimeout: 1000 } }))))
})

describe("a session ending", () => {
  it.effect("a turn arriving while the session's sessionEnd runs waits for it, then begins the session again", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const loop = yield* AgentLoop
      let ends = 0
      yield* loop.registerHook(Hook.make({
        // the first end takes 500 ms; the loop's own at its close (after a failure too) does not wait
        sessionEnd: () =>
          ends++ > 0 ? undefined : Effect.andThen(Effect.sync(() => log.push("end begins")), Effect.sleep(500)).pipe(
            Effect.andThen(Effect.sync(() => log.push("end")))
          ),
        sessionStart: () => void log.push("start")
      }))
      yield* loop.turn("a", "one")
      yield* TestClock.adjust(1000)
      expect(log).toEqual(["start", "end begins"])
      const second = yield* Effect.forkChild(loop.turn("a", "two"))
      yield* TestClock.adjust(500)
      expect((yield* Fiber.join(second)).status).toBe("completed")
      expect(log).toEqual(["start", "end begins", "end", "start"])
      expect(Testing.heldSessions(loop)).toBe(1)
    }).pipe(Effect.provide(Layer.fresh(Testing.layer({ script: () => ({ content: "ok" }), config: { sessionIdleTimeout: 1000 } })))))
})
