/**
 * Recovery inside a turn (DESIGN §6 step 3, §8), all on TestClock: retries with backoff,
 * compression after a context overflow, truncated answers, the soft context budget, a stream
 * that breaks mid-way; and the compaction functions themselves on tricky histories.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import {
  AgentLoop,
  type AgentLoopConfig,
  ContextLengthExceeded,
  Hook,
  MalformedResponse,
  Message,
  ProviderRejected,
  ProviderUnavailable,
  RateLimited,
  Scripted,
  SessionStore
} from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { TRUNCATION_PROMPT, TRUNCATION_RETRY_REASON } from "../../src/programs/internal/callModel.ts"
import { longHistory, ofKind } from "../support/fixtures.ts"

const requestCount = Effect.map(Testing.requests, (r) => r.length)

/** The provider has received `n` requests once the loop has settled. */
const received = (n: number) =>
  Effect.gen(function*() {
    const log = yield* Scripted.ScriptedLog
    return yield* Testing.settled(Effect.map(log.requests, (sent) => sent.length >= n))
  })

const stored = (sessionKey: string) =>
  Effect.gen(function*() {
    return yield* (yield* SessionStore).load(sessionKey)
  })

const storedLog = (sessionKey: string) =>
  Effect.gen(function*() {
    // outcome records aside (tested in `log-records.test.ts`)
    return (yield* (yield* SessionStore).log(sessionKey)).filter((entry) => entry.role !== "outcome")
  })

/** Every tool call is followed by exactly its results, and every result follows its call. */
const expectPaired = (messages: ReadonlyArray<Message.Message>) => {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!
    if (message.role === "assistant" && (message.toolCalls?.length ?? 0) > 0) {
      const ids = message.toolCalls!.map((c) => c.id)
      const results = messages.slice(i + 1, i + 1 + ids.length)
      expect(results.map((m) => m.role === "tool" ? m.toolCallId : `${m.role} instead of a result`)).toEqual(ids)
    }
    if (message.role === "tool") {
      let j = i - 1
      while (j >= 0 && messages[j]!.role === "tool") j--
      const owner = messages[j]
      expect(owner?.role === "assistant" && owner.toolCalls?.some((c) => c.id === message.toolCallId)).toBe(true)
    }
  }
}

const noJitter = { jitter: false, baseDelay: 1000, factor: 2, maxAttempts: 4 }
const retryConfig = (retry: Partial<AgentLoopConfig.AgentLoopConfigInput["retry"]> = {}): Partial<AgentLoopConfig.AgentLoopConfigInput> => ({
  retry: { ...noJitter, ...retry }
})

const unavailable = new ProviderUnavailable({ message: "overloaded", status: 503 })

describe("retries", () => {
  it.effect("RateLimited and ProviderUnavailable are retried after 1000 ms, then 2000 ms", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* received(1)
      yield* TestClock.adjust(999)
      expect(yield* requestCount).toBe(1)
      yield* TestClock.adjust(1)
      yield* received(2)
      yield* TestClock.adjust(1999)
      expect(yield* requestCount).toBe(2)
      yield* TestClock.adjust(1)
      const result = yield* Fiber.join(turn)
      expect(yield* requestCount).toBe(3)
      expect(result.status).toBe("completed")
      expect(result.finalMessage?.content).toBe("ok")
      const retries = ofKind(yield* events, "LLMRetry")
      expect(retries.map((e) => [e.attempt, e.delayMs, e.at])).toEqual([[1, 1000, 0], [2, 2000, 1000]])
      expect(retries.map((e) => e.reason)).toEqual(["RateLimited: slow down", "ProviderUnavailable: overloaded"])
      expect(ofKind(yield* events, "LLMResponse").map((e) => e.at)).toEqual([3000])
    }).pipe(Effect.provide(Testing.layer({
      config: retryConfig(),
      script: [{ error: new RateLimited({ message: "slow down" }) }, { error: unavailable }, { content: "ok" }]
    }))))

  it.effect("retryAfterMs is honoured: RateLimited{retryAfterMs: 7000} waits 7000 ms", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* received(1)
      yield* TestClock.adjust(6999)
      expect(yield* requestCount).toBe(1)
      yield* TestClock.adjust(1)
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("completed")
      expect(ofKind(yield* events, "LLMRetry").map((e) => e.delayMs)).toEqual([7000])
    }).pipe(Effect.provide(Testing.layer({
      config: retryConfig(),
      script: [{ error: new RateLimited({ message: "slow down", retryAfterMs: 7000 }) }, { content: "ok" }]
    }))))

  it.effect("attempts are capped: after maxAttempts - 1 retries the turn fails naming the provider error", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* received(1)
      yield* TestClock.adjust(1000 + 2000 + 4000 - 1)
      expect(yield* requestCount).toBe(3)
      yield* TestClock.adjust(1)
      const result = yield* Fiber.join(turn)
      expect(yield* requestCount).toBe(4)
      expect(result.status).toBe("failed")
      expect(result.error).toBe("ProviderUnavailable: overloaded")
      const all = yield* events
      expect(ofKind(all, "LLMRetry").map((e) => e.delayMs)).toEqual([1000, 2000, 4000])
      expect(ofKind(all, "TurnEnd").map((e) => [e.status, e.error])).toEqual([["failed", "ProviderUnavailable: overloaded"]])
      expect(yield* stored("s")).toEqual([Message.user("go")])
    }).pipe(Effect.provide(Testing.layer({ config: retryConfig(), script: () => ({ error: unavailable }) }))))

  it.effect("ProviderRejected is not retried", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.status).toBe("failed")
      expect(result.error).toBe("ProviderRejected: bad key")
      expect(yield* requestCount).toBe(1)
      expect(Testing.kinds(yield* events, ["LLMRetry"])).toEqual([])
    }).pipe(Effect.provide(Testing.layer({
      config: retryConfig(),
      script: () => ({ error: new ProviderRejected({ message: "bad key", status: 401 }) })
    }))))

  it.effect("delays are capped by maxDelay", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* received(1)
      yield* TestClock.adjust(1000 + 1500 + 1500)
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("failed")
      expect(ofKind(yield* events, "LLMRetry").map((e) => e.delayMs)).toEqual([1000, 1500, 1500])
    }).pipe(Effect.provide(Testing.layer({ config: retryConfig({ maxDelay: 1500 }), script: () => ({ error: unavailable }) }))))

  it.effect("with jitter each delay is within ±20% of the backoff, and the retry happens exactly then", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      const bounds = [[800, 1200], [1600, 2400], [3200, 4800]] as const
      for (const [i, [low, high]] of bounds.entries()) {
        yield* received(i + 1)
        const retry = yield* Testing.settled(Effect.map(events, (all) => ofKind(all, "LLMRetry")[i]))
        expect(retry.delayMs).toBeGreaterThanOrEqual(low)
        expect(retry.delayMs).toBeLessThanOrEqual(high)
        const wait = Math.ceil(retry.delayMs)
        yield* TestClock.adjust(wait - 1)
        expect(yield* requestCount).toBe(i + 1)
        yield* TestClock.adjust(1)
      }
      const result = yield* Fiber.join(turn)
      expect(yield* requestCount).toBe(4)
      expect(result.status).toBe("failed")
    }).pipe(Effect.provide(Testing.layer({ config: { retry: { ...noJitter, jitter: true } }, script: () => ({ error: unavailable }) }))))

  it.effect("a retry resends the same messages; the input is stored once", () =>
    Effect.gen(function*() {
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* received(1)
      yield* TestClock.adjust(1000)
      yield* Fiber.join(turn)
      const [first, second] = yield* Testing.requests
      expect(second!.messages).toEqual(first!.messages)
      expect(first!.messages).toEqual([Message.user("before"), Message.assistant("earlier"), Message.user("go")])
      expect(yield* stored("s")).toEqual([
        Message.user("before"),
        Message.assistant("earlier"),
        Message.user("go"),
        Message.assistant("ok")
      ])
    }).pipe(Effect.provide(Testing.layer({
      config: retryConfig(),
      sessions: { s: [Message.user("before"), Message.assistant("earlier")] },
      script: [{ error: unavailable }, { content: "ok" }]
    }))))
})

const overflow = new ContextLengthExceeded({ message: "too long" })

describe("context overflow", () => {
  it.effect("overflow once: beforeCompact, ContextCompress{overflow}, then a well-formed retry succeeds", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const compacting: Array<[string, number]> = []
      yield* loop.registerHook({ beforeCompact: ({ messages, reason }) => void compacting.push([reason, messages.length]) })
      const result = yield* loop.turn("s", "new question")
      expect(result.status).toBe("completed")
      expect(compacting).toEqual([["overflow", 11]])
      const compress = ofKind(yield* events, "ContextCompress")
      expect(compress.map((e) => [e.reason, e.dropped, e.remaining])).toEqual([["overflow", 7, 4]])
      const [first, retried] = yield* Testing.requests
      expect(first!.messages).toHaveLength(12)
      // u1, a1, u2 and the whole call/results unit went (half of 9 droppable, never half a unit),
      // then a2 too, so that what is kept starts with a user message
      expect(retried!.messages).toEqual([
        Message.system("You are a test."),
        Message.system("Earlier summary"),
        Message.user("u3"),
        Message.assistant("a3"),
        Message.user("new question")
      ])
      expectPaired(retried!.messages)
      expect(result.messages).toEqual([Message.user("new question"), Message.assistant("fits now")])
      expect(yield* stored("s")).toEqual([...retried!.messages.slice(1), Message.assistant("fits now")])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({
      config: { systemPrompt: "You are a test." },
      sessions: { s: longHistory },
      script: [{ error: overflow }, { content: "fits now" }]
    }))))

  it.effect("at most 2 compressions, then the turn fails with the overflow", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "new question")
      expect(result.status).toBe("failed")
      expect(result.error).toBe("ContextLengthExceeded: too long")
      const sent = yield* Testing.requests
      expect(sent).toHaveLength(3)
      for (const request of sent) {
        expectPaired(request.messages)
        expect(request.messages[0]).toEqual(Message.system("Earlier summary"))
        expect(request.messages.at(-1)).toEqual(Message.user("new question"))
      }
      expect(sent.map((r) => r.messages.length)).toEqual([11, 4, 2])
      const all = yield* events
      expect(ofKind(all, "ContextCompress").map((e) => [e.dropped, e.remaining])).toEqual([[7, 4], [2, 2]])
      expect(Testing.kinds(all, ["LLMRetry"])).toEqual([])
    }).pipe(Effect.provide(Testing.layer({ sessions: { s: longHistory }, script: () => ({ error: overflow }) }))))

  it.effect("nothing left to drop: the overflow fails the turn at once", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "huge input")
      expect(result.status).toBe("failed")
      expect(yield* requestCount).toBe(1)
      expect(Testing.kinds(yield* events, ["ContextCompress"])).toEqual([])
    }).pipe(Effect.provide(Testing.layer({ script: () => ({ error: overflow }) }))))

  it.effect("a beforeCompact hook that aborts fails the turn", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook({ beforeCompact: () => Hook.abortTurn("keep everything") }, { name: "archivist" })
      const result = yield* loop.turn("s", "new question")
      expect(result.status).toBe("failed")
      expect(result.error).toBe('Hook "archivist" aborted the turn at beforeCompact: keep everything')
      const all = yield* events
      expect(ofKind(all, "Error").map((e) => [e.stage, e.hook])).toEqual([["beforeCompact", "archivist"]])
      expect(Testing.kinds(all, ["ContextCompress"])).toEqual([])
      expect(yield* requestCount).toBe(1)
      expect(yield* stored("s")).toEqual([...longHistory, Message.user("new question")])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ sessions: { s: longHistory }, script: [{ error: overflow }] }))))

  it.effect("when the turn's own messages are dropped from the context, they are still the turn's (result, log); only the view loses them", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      let blocked = false
      yield* loop.registerHook({ beforeStop: () => blocked ? Hook.continue : ((blocked = true), Hook.block("say more")) })
      const result = yield* loop.turn("s", "question")
      expect(result.status).toBe("completed")
      const retried = (yield* Testing.requests)[2]!
      // droppable: old, question, first (the newest user input is the feedback): half is old and
      // question, then first too, so that what is kept starts with a user message
      expect(retried.messages).toEqual([Message.system("Earlier summary"), Message.user("say more")])
      const produced = [Message.user("question"), Message.assistant("first"), Message.user("say more"), Message.assistant("second")]
      expect(result.messages).toEqual(produced)
      expect(yield* stored("s")).toEqual([...retried.messages, Message.assistant("second")])
      // old, question and first went from the context: the cut is past them, in history + produced
      expect(yield* storedLog("s")).toEqual([
        Message.system("Earlier summary"),
        Message.user("old"),
        ...produced,
        { role: "compaction", reason: "overflow", cut: 4 }
      ])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({
      sessions: { s: [Message.system("Earlier summary"), Message.user("old")] },
      script: [{ content: "first" }, { error: overflow }, { content: "second" }]
    }))))
})

describe("truncated answers", () => {
  it.effect("finish `length` without tool calls: the recovery prompt is sent, the shorter answer is the reply", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "explain")
      const [, retry] = yield* Testing.requests
      expect(retry!.messages).toEqual([
        Message.user("explain"),
        Message.assistant("a very long answer that got cut"),
        Message.user(TRUNCATION_PROMPT)
      ])
      expect(result.finalMessage).toEqual(Message.assistant("short answer"))
      expect(result.messages).toEqual([Message.user("explain"), Message.assistant("short answer")])
      expect(yield* stored("s")).toEqual(result.messages)
      expect(ofKind(yield* events, "LLMResponse").map((e) => e.content)).toEqual(["short answer"])
      const all = yield* events
      const retries = ofKind(all, "LLMRetry")
      expect(retries.map((e) => [e.attempt, e.reason, e.delayMs])).toEqual([[1, TRUNCATION_RETRY_REASON, 0]])
      // announced after the truncated text streamed and before the new request
      expect(Testing.kinds(all, ["LLMDelta", "LLMRetry", "LLMRequest"])).toEqual(["LLMRequest", "LLMDelta", "LLMRetry", "LLMRequest", "LLMDelta"])
    }).pipe(Effect.provide(Testing.layer({
      script: [{ content: "a very long answer that got cut", finishReason: "length" }, { content: "short answer" }]
    }))))

  it.effect("at most 2 recoveries, then the last answer is kept", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "explain")
      const sent = yield* Testing.requests
      expect(sent).toHaveLength(3)
      expect(sent[2]!.messages).toEqual([Message.user("explain"), Message.assistant("cut 1"), Message.user(TRUNCATION_PROMPT)])
      expect(result.status).toBe("completed")
      expect(result.finalMessage?.content).toBe("cut 2")
      expect(yield* stored("s")).toEqual([Message.user("explain"), Message.assistant("cut 2")])
    }).pipe(Effect.provide(Testing.layer({ script: (_, i) => ({ content: `cut ${i}`, finishReason: "length" }) }))))

  it.effect("a truncated response with tool calls is not retried", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(yield* requestCount).toBe(2)
      expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"])
    }).pipe(Effect.provide(Testing.layer({
      script: [{ toolCalls: [{ id: "x", name: "missing" }], finishReason: "length" }, { content: "done" }]
    }))))
})

describe("soft context budget", () => {
  const runeHistory: ReadonlyArray<Message.Message> = [
    Message.system("keep me"),
    Message.user("1".repeat(100)),
    Message.assistant("2".repeat(100)),
    Message.assistant("", [{ id: "c1", name: "echo", arguments: "{\"text\":\"x\"}" }]),
    Message.toolResult({ id: "c1", name: "echo" }, "r".repeat(100)),
    Message.assistant("3".repeat(50))
  ]

  it.effect("over maxContextRunes: the oldest whole units go before the call (ContextCompress{budget})", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "new")
      expect(result.status).toBe("completed")
      const compress = ofKind(yield* events, "ContextCompress")
      expect(compress.map((e) => [e.reason, e.dropped, e.remaining])).toEqual([["budget", 5, 2]])
      const [sent] = yield* Testing.requests
      expect(sent!.messages).toEqual([Message.system("keep me"), Message.user("new")])
      expectPaired(sent!.messages)
      expect(Testing.kinds(yield* events).indexOf("ContextCompress")).toBeLessThan(Testing.kinds(yield* events).indexOf("LLMRequest"))
    }).pipe(Effect.provide(Testing.layer({ config: { maxContextRunes: 157 }, sessions: { s: runeHistory }, script: [{ content: "ok" }] }))))

  it.effect("within the budget nothing is dropped", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      yield* (yield* AgentLoop).turn("s", "new")
      expect(Testing.kinds(yield* events, ["ContextCompress"])).toEqual([])
      expect((yield* Testing.requests)[0]!.messages).toHaveLength(7)
    }).pipe(Effect.provide(Testing.layer({ config: { maxContextRunes: 10_000 }, sessions: { s: runeHistory }, script: [{ content: "ok" }] }))))

  it.effect("when only protected messages are over the budget, the call goes ahead unchanged", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "a long question ".repeat(10))
      expect(result.status).toBe("completed")
      expect(Testing.kinds(yield* events, ["ContextCompress"])).toEqual([])
    }).pipe(Effect.provide(Testing.layer({ config: { maxContextRunes: 20 }, script: [{ content: "ok" }] }))))
})

describe("a stream that breaks", () => {
  it.effect("after some text with a non-retryable error: failed, the partial text is stored marked partial", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "tell me")
      expect(result.status).toBe("failed")
      expect(result.error).toBe("MalformedResponse: bad frame")
      const partial = Message.assistant("Hello, wor", [], { partial: true })
      expect(partial).toEqual({ role: "assistant", content: "Hello, wor", partial: true })
      expect(yield* stored("s")).toEqual([Message.user("tell me"), partial])
      expect(result.messages).toEqual([Message.user("tell me"), partial])
      expect(ofKind(yield* events, "LLMDelta").map((e) => e.text)).toEqual(["Hello, ", "wor"])
    }).pipe(Effect.provide(Testing.layer({
      script: [{ chunks: [{ _tag: "TextDelta", text: "Hello, " }, { _tag: "TextDelta", text: "wor" }], errorAfterChunks: new MalformedResponse({ message: "bad frame" }) }]
    }))))
})
