/**
 * The shapes a provider may take: `whole` next to `stream` (a reply handed over at once, with
 * the same events and history as a streamed one), and `Provider.fromChat` (a reply-at-a-time
 * model made a provider).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Stream } from "effect"
import {
  AgentLoop,
  AgentLoopLive,
  Message,
  Provider,
  ProviderTypes,
  ProviderRejected,
  RateLimited,
  SessionStoreMemory,
  ToolRegistryLive
} from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

describe("ProviderShape.whole", () => {
  const reply = [{ _tag: "TextDelta", text: "whole" }, { _tag: "Finish", reason: "stop" }] as const

  it.effect("Provider.fromWhole: its stream gives what its whole gives, a reply handed over as a stream, and a failure", () =>
    Effect.gen(function*() {
      const provider = Provider.fromWhole(() => Effect.succeed(reply))
      const request = { model: "m", messages: [], tools: [] }
      expect(yield* provider.whole!(request)).toEqual(reply)
      expect(yield* Stream.runCollect(provider.stream(request))).toEqual(reply)
      const handedOver = Provider.fromWhole(() => Effect.succeed(Stream.fromIterable(reply)))
      expect(yield* Stream.runCollect(handedOver.stream(request))).toEqual(reply)
      const failing = Provider.fromWhole(() => Effect.fail(new RateLimited({ message: "slow down" })))
      expect((yield* Effect.flip(Stream.runCollect(failing.stream(request))))._tag).toBe("RateLimited")
    }))

  it.effect("a turn takes a whole reply, a reply handed over as a stream, and a failed one alike, from whole and not stream", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const first = yield* loop.turn("s", "one")
      const second = yield* loop.turn("s", "two")
      const third = yield* loop.turn("s", "three")
      expect([first.status, second.status, third.status]).toEqual(["completed", "completed", "failed"])
      expect(first.finalMessage?.content).toBe("whole")
      expect(second.finalMessage?.content).toBe("streamed")
      expect(third.error).toContain("rejected")
      expect(Testing.kinds(yield* events).filter((tag) => tag === "LLMDelta")).toHaveLength(3)
    }).pipe(Effect.provide(
      AgentLoopLive.layer({ model: "m", retry: { maxAttempts: 1 } }).pipe(
        Layer.provide([
          Layer.succeed(Provider, {
            // The loop must not call it when the provider gives whole replies.
            stream: () => Stream.die("stream called"),
            whole: (request) => {
              const input = request.messages.at(-1)?.content
              return input === "one"
                ? Effect.succeed(reply)
                : input === "two"
                ? Effect.succeed(Stream.fromIterable([
                  { _tag: "TextDelta", text: "stream" },
                  { _tag: "TextDelta", text: "ed" },
                  { _tag: "Finish", reason: "stop" }
                ] as const))
                : Effect.fail(new ProviderRejected({ message: "rejected" }))
            }
          }),
          ToolRegistryLive.layer([]),
          SessionStoreMemory.layer()
        ]),
        Layer.orDie
      )
    )))

  it.effect("a provider that only streams: every chunk of a batch folds into the reply", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.finalMessage?.content).toBe("a streamed reply")
      expect(Testing.kinds(yield* events).filter((tag) => tag === "LLMDelta")).toHaveLength(3)
    }).pipe(Effect.provide(
      AgentLoopLive.layer({ model: "m" }).pipe(
        Layer.provide([
          Layer.succeed(Provider, {
            stream: () =>
              Stream.fromArray([
                { _tag: "TextDelta", text: "a " },
                { _tag: "TextDelta", text: "streamed " },
                { _tag: "TextDelta", text: "reply" },
                { _tag: "Finish", reason: "stop" }
              ] as const)
          }),
          ToolRegistryLive.layer([]),
          SessionStoreMemory.layer()
        ]),
        Layer.orDie
      )
    )))
})

describe("a streamed reply's stream", () => {
  // Each stream records its input once it is closed: a real provider's connection closes then.
  const closed: Array<string> = []
  const provider: Layer.Layer<Provider> = Layer.succeed(Provider, {
    stream: (request) => {
      const input = String(request.messages.at(-1)?.content)
      const chunks: Stream.Stream<ProviderTypes.ProviderChunk, ProviderRejected> = input === "end"
        ? Stream.fromArray([{ _tag: "TextDelta", text: "ok" }, { _tag: "Finish", reason: "stop" }])
        : input === "fail"
        ? Stream.concat(Stream.make({ _tag: "TextDelta", text: "partial" }), Stream.fail(new ProviderRejected({ message: "rejected" })))
        : input === "large"
        ? Stream.make({ _tag: "TextDelta", text: "x".repeat(5000) }, { _tag: "Finish", reason: "stop" })
        : Stream.concat(Stream.make({ _tag: "TextDelta", text: "waiting" }), Stream.never)
      return Stream.ensuring(chunks, Effect.sync(() => closed.push(input)))
    }
  })

  it.effect("is closed however the call ends: at its end, on its failure, past maxResponseBytes, and on a hard abort", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const statuses = [(yield* loop.turn("s", "end")).status, (yield* loop.turn("s", "fail")).status]
      const large = yield* loop.turn("s", "large")
      expect([...statuses, large.status]).toEqual(["completed", "failed", "failed"])
      expect(large.error).toMatch(/^ResponseTooLarge/)
      expect(closed).toEqual(["end", "fail", "large"])
      const hanging = yield* Effect.forkChild(loop.turn("s", "hang"))
      yield* Testing.settled(Effect.map(events, (all) => all.some((e) => e._tag === "LLMDelta" && e.text === "waiting")))
      expect(closed).toEqual(["end", "fail", "large"])
      yield* loop.interruptHard("s")
      expect((yield* Fiber.join(hanging)).status).toBe("aborted")
      expect(closed).toEqual(["end", "fail", "large", "hang"])
    }).pipe(Effect.provide(
      AgentLoopLive.layer({ model: "m", maxResponseBytes: 4096, retry: { maxAttempts: 1 } }).pipe(
        Layer.provide([provider, ToolRegistryLive.layer([]), SessionStoreMemory.layer()]),
        Layer.orDie
      )
    )))
})

describe("Provider.fromChat", () => {
  it.effect("a non-streaming chat function streams as deltas, tool calls and a finish", () =>
    Effect.gen(function*() {
      const provider = Provider.fromChat((request) =>
        Effect.succeed({
          content: `${request.messages.length} messages`,
          reasoning: "thinking",
          toolCalls: [{ id: "c1", name: "echo", arguments: "{\"text\":\"x\"}" }],
          usage: { inputTokens: 3, outputTokens: 4 }
        }))
      const chunks = yield* Stream.runCollect(provider.stream({ model: "m", messages: [Message.user("hi")], tools: [] }))
      expect(chunks).toEqual([
        { _tag: "ReasoningDelta", text: "thinking" },
        { _tag: "TextDelta", text: "1 messages" },
        { _tag: "ToolCallDelta", index: 0, id: "c1", name: "echo", argumentsDelta: "{\"text\":\"x\"}" },
        { _tag: "Finish", reason: "tool_calls", usage: { inputTokens: 3, outputTokens: 4 } }
      ])
      const failing = Provider.fromChat(() => Effect.fail(new RateLimited({ message: "slow down", retryAfterMs: 10 })))
      const error = yield* Effect.flip(Stream.runCollect(failing.stream({ model: "m", messages: [], tools: [] })))
      expect(error._tag).toBe("RateLimited")
    }))

  it.effect("drives a whole turn", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "hello")
      expect(result.finalMessage?.content).toBe("you said: hello")
    }).pipe(Effect.provide(
      AgentLoopLive.layer({ model: "m" }).pipe(
        Layer.provide([
          Layer.succeed(Provider, Provider.fromChat((request) => Effect.succeed({ content: `you said: ${request.messages.at(-1)?.content}` }))),
          ToolRegistryLive.layer([]),
          SessionStoreMemory.layer()
        ]),
        Layer.orDie
      )
    )))
})
