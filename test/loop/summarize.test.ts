/**
 * Session summaries (DESIGN §8), on TestClock: after a turn, a history past `summarizeThreshold`
 * of the context window has its older part replaced by one summary message written by the
 * provider, after the reply is out and under the session's lock.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import {
  AgentLoop,
  type AgentLoopConfig,
  type AgentEvent,
  Hook,
  Message,
  ProviderRejected,
  type ProviderTypes,
  Scripted,
  SessionStore
} from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { SUMMARY_INSTRUCTION, SUMMARY_PREFIX, SUMMARY_TIMEOUT } from "../../src/programs/internal/summarize.ts"
import { ofKind } from "../support/fixtures.ts"

const isSummaryRequest = (request: ProviderTypes.ProviderRequest) => request.messages[0]?.content === SUMMARY_INSTRUCTION

/** Answers turn calls from `turn` (in order) and summary calls with `summary`. */
const script = (turn: ReadonlyArray<Scripted.ScriptedResponse>, summary: Scripted.ScriptedResponse = { content: "They talked about x and y." }) => {
  let next = 0
  return (request: ProviderTypes.ProviderRequest): Scripted.ScriptedResponse => isSummaryRequest(request) ? summary : turn[next++] ?? { content: "spare" }
}

/** A window of 100 tokens at 0.5: a history of more than 200 runes (4 per token) is summarised. */
const config = (keep = 2): Partial<AgentLoopConfig.AgentLoopConfigInput> => ({ contextWindow: 100, summarizeThreshold: 0.5, summarizeKeepMessages: keep })

/** 180 runes: with "hello" (5 runes) and an answer of 15 runes, the history is exactly at the limit. */
const seeded = [Message.user("x".repeat(90)), Message.assistant("y".repeat(90))]

const stored = (key: string) =>
  Effect.gen(function*() {
    return yield* (yield* SessionStore).load(key)
  })

const allRequests = Effect.gen(function*() {
  return yield* (yield* Scripted.ScriptedLog).requests
})

const summaryRequests = Effect.map(allRequests, (all) => all.filter(isSummaryRequest))

/** The provider has received `n` requests matching `which` once the loop has settled. */
const requested = (n: number, which: (request: ProviderTypes.ProviderRequest) => boolean) =>
  Effect.gen(function*() {
    const log = yield* Scripted.ScriptedLog
    yield* Testing.settled(Effect.map(log.requests, (all) => all.filter(which).length >= n))
  })

const summarized = (events: Effect.Effect<ReadonlyArray<AgentEvent.AgentEvent>>) =>
  Testing.settled(Effect.map(events, (all) => ofKind(all, "SessionSummarize")[0]))

describe("session summaries", () => {
  it.effect("at the threshold (200 runes of 200) nothing happens", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "hello")
      expect(result.status).toBe("completed")
      for (let i = 0; i < 100; i++) yield* Effect.yieldNow
      yield* TestClock.adjust("1 minute")
      expect(yield* summaryRequests).toEqual([])
      expect(ofKind(yield* events, "SessionSummarize")).toEqual([])
      expect(yield* stored("s")).toEqual([...seeded, Message.user("hello"), Message.assistant("a".repeat(15))])
    }).pipe(Effect.provide(Testing.layer({ sessions: { s: seeded }, config: config(), script: script([{ content: "a".repeat(15) }]) }))))

  it.effect("one rune past the threshold: the older part becomes one summary message, the newest are kept", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "hello")
      const summary = yield* summarized(events)
      expect([summary.summarized, summary.remaining, summary.turnId]).toEqual([2, 3, result.turnId])
      const history = yield* stored("s")
      expect(history).toEqual([
        Message.system(`${SUMMARY_PREFIX}\nThey talked about x and y.`),
        Message.user("hello"),
        Message.assistant("a".repeat(16))
      ])
      const [request, ...more] = yield* summaryRequests
      expect(more).toEqual([])
      expect(request!.tools).toEqual([])
      expect(request!.model).toBe("test-model")
      expect(request!.messages).toEqual([
        Message.system(SUMMARY_INSTRUCTION),
        Message.user(`user: ${"x".repeat(90)}\n\nassistant: ${"y".repeat(90)}`)
      ])
    }).pipe(Effect.provide(Testing.layer({ sessions: { s: seeded }, config: config(), script: script([{ content: "a".repeat(16) }]) }))))

  for (const keep of [2, 3]) {
    it.effect(`a tool call is never separated from its results (keep ${keep} falls inside the call's unit)`, () =>
      Effect.gen(function*() {
        const events = (yield* Testing.recordEvents).all
        yield* (yield* AgentLoop).turn("s", "go")
        const summary = yield* summarized(events)
        const history = yield* stored("s")
        // the cut moved back to the assistant message holding the calls: 4 kept, not `keep`
        expect(history.map((m) => m.role === "tool" ? `tool:${m.toolCallId}` : `${m.role}:${m.content}`)).toEqual([
          `system:${SUMMARY_PREFIX}\nThey talked about x and y.`,
          "assistant:",
          "tool:c1",
          "tool:c2",
          "assistant:done"
        ])
        expect([summary.summarized, summary.remaining]).toEqual([3, 5])
        const [request] = yield* summaryRequests
        expect(request!.messages[1]!.content).toBe(`user: ${"x".repeat(90)}\n\nassistant: ${"y".repeat(90)}\n\nuser: go`)
      }).pipe(Effect.provide(Testing.layer({
        sessions: { s: seeded },
        config: config(keep),
        tools: [],
        script: script([{ toolCalls: [{ id: "c1", name: "missing" }, { id: "c2", name: "missing" }] }, { content: "done" }])
      }))))
  }

  it.effect("publishes SessionSummarize and afterCompact(summary) after beforeCompact(summary)", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const seen: Array<string> = []
      yield* loop.registerHook(Hook.make({
        beforeCompact: ({ reason, messages }) => void seen.push(`before ${reason} ${messages.length}`),
        afterCompact: ({ reason, dropped, remaining }) => void seen.push(`after ${reason} ${dropped} ${remaining}`)
      }))
      const events = (yield* Testing.recordEvents).all
      yield* loop.turn("s", "hello")
      yield* summarized(events)
      yield* Testing.settled(Effect.sync(() => seen.length === 2))
      expect(seen).toEqual(["before summary 4", "after summary 2 3"])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ sessions: { s: seeded }, config: config(), script: script([{ content: "a".repeat(16) }]) }))))

  it.effect("a beforeCompact hook that aborts for reason summary cancels it: history unchanged", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const reasons: Array<string> = []
      yield* loop.registerHook(Hook.make({
        beforeCompact: ({ reason }) => {
          reasons.push(reason)
          return reason === "summary" ? Hook.abortTurn("keep the details") : Hook.continue
        }
      }))
      const events = (yield* Testing.recordEvents).all
      const result = yield* loop.turn("s", "hello")
      expect(result.status).toBe("completed")
      yield* Testing.settled(Effect.sync(() => reasons.length > 0))
      for (let i = 0; i < 100; i++) yield* Effect.yieldNow
      expect(reasons).toEqual(["summary"])
      expect(yield* summaryRequests).toEqual([])
      expect(ofKind(yield* events, "SessionSummarize")).toEqual([])
      expect(yield* stored("s")).toEqual([...seeded, Message.user("hello"), Message.assistant("a".repeat(16))])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ sessions: { s: seeded }, config: config(), script: script([{ content: "a".repeat(16) }]) }))))

  it.effect("a provider failure during the summary keeps the history and publishes Error{stage: summarize}", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "hello")
      const error = yield* Testing.settled(Effect.map(events, (all) => ofKind(all, "Error")[0]))
      expect(error.stage).toBe("summarize")
      expect(error.message).toBe("ProviderRejected: no summaries today; history kept")
      expect(error.turnId).toBe(result.turnId)
      expect(ofKind(yield* events, "SessionSummarize")).toEqual([])
      expect(yield* stored("s")).toEqual([...seeded, Message.user("hello"), Message.assistant("a".repeat(16))])
    }).pipe(Effect.provide(Testing.layer({
      sessions: { s: seeded },
      config: config(),
      script: script([{ content: "a".repeat(16) }], { error: new ProviderRejected({ message: "no summaries today", status: 400 }) })
    }))))

  it.effect("an empty summary keeps the history and says so", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      yield* (yield* AgentLoop).turn("s", "hello")
      const error = yield* Testing.settled(Effect.map(events, (all) => ofKind(all, "Error")[0]))
      expect([error.stage, error.message]).toEqual(["summarize", "The summary came back empty; history kept"])
      expect(yield* stored("s")).toHaveLength(4)
    }).pipe(Effect.provide(Testing.layer({ sessions: { s: seeded }, config: config(), script: script([{ content: "a".repeat(16) }], { content: "  " }) }))))

  it.effect("the reply is not delayed: turn(...) returns at 0 s, the summary lands at 10 s; the next turn waits for it", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const result = yield* loop.turn("s", "hello")
      expect(result.status).toBe("completed")
      expect(yield* Clock.currentTimeMillis).toBe(0)
      expect(ofKind(yield* events, "TurnEnd").map((e) => e.at)).toEqual([0])
      yield* requested(1, isSummaryRequest)
      // a turn arriving while the summary runs waits for it and then sees the summarised history
      const next = yield* Effect.forkChild(loop.turn("s", "next"))
      yield* TestClock.adjust("9999 millis")
      expect(ofKind(yield* events, "SessionSummarize")).toEqual([])
      expect(ofKind(yield* events, "TurnStart")).toHaveLength(1)
      yield* TestClock.adjust("1 millis")
      const summary = yield* summarized(events)
      expect(summary.at).toBe(10_000)
      yield* Fiber.join(next)
      const turnRequests = (yield* allRequests).filter((r) => !isSummaryRequest(r))
      expect(turnRequests.at(-1)!.messages).toEqual([
        Message.system(`${SUMMARY_PREFIX}\nThey talked about x and y.`),
        Message.user("hello"),
        Message.assistant("a".repeat(16)),
        Message.user("next")
      ])
    }).pipe(Effect.provide(Testing.layer({
      sessions: { s: seeded },
      config: config(),
      script: script([{ content: "a".repeat(16) }, { content: "ok" }], { content: "They talked about x and y.", delay: "10 seconds" })
    }))))

  it.effect("a summary that never finishes gives up at SUMMARY_TIMEOUT: history kept, the session's next turn runs", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.turn("s", "hello")
      yield* requested(1, isSummaryRequest)
      const next = yield* Effect.forkChild(loop.turn("s", "next"))
      yield* TestClock.adjust(Duration.toMillis(SUMMARY_TIMEOUT) - 1)
      expect(ofKind(yield* events, "TurnStart")).toHaveLength(1)
      yield* TestClock.adjust(1)
      const result = yield* Fiber.join(next)
      expect(result.status).toBe("completed")
      const errors = ofKind(yield* events, "Error")
      expect(errors.map((e) => [e.stage, e.message, e.at])).toEqual([
        ["summarize", "The summary took longer than 120000ms; history kept", 120_000]
      ])
      const turnRequests = (yield* allRequests).filter((r) => !isSummaryRequest(r))
      expect(turnRequests.at(-1)!.messages).toEqual([...seeded, Message.user("hello"), Message.assistant("a".repeat(16)), Message.user("next")])
    }).pipe(Effect.provide(Testing.layer({
      sessions: { s: seeded },
      config: config(),
      script: script([{ content: "a".repeat(16) }, { content: "ok" }], { content: "never", stall: true })
    }))))

  it.effect("a summary call that dies keeps the history and publishes Error{stage: summarize}", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.turn("s", "hello")
      const error = yield* Testing.settled(Effect.map(events, (all) => ofKind(all, "Error")[0]))
      expect([error.stage, error.message]).toEqual(["summarize", "The summary failed: wires crossed; history kept"])
      expect(yield* stored("s")).toHaveLength(4)
      expect((yield* loop.turn("s", "next")).status).toBe("completed")
    }).pipe(Effect.provide(Testing.layer({
      sessions: { s: seeded },
      config: config(),
      script: script([{ content: "a".repeat(16) }, { content: "ok" }], { die: new Error("wires crossed") })
    }))))

  it.effect("no summary after a hard-aborted turn", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "hello"))
      yield* requested(1, () => true)
      yield* loop.interruptHard("s")
      expect((yield* Fiber.join(turn)).status).toBe("aborted")
      for (let i = 0; i < 100; i++) yield* Effect.yieldNow
      expect(yield* summaryRequests).toEqual([])
      expect(yield* stored("s")).toEqual([...seeded, Message.user("z".repeat(50))])
    }).pipe(Effect.provide(Testing.layer({
      sessions: { s: [...seeded, Message.user("z".repeat(50))] },
      config: config(),
      script: script([{ content: "never", stall: true }])
    }))))
})
