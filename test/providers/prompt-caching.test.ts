/**
 * Anthropic prompt caching: where the `cache_control` breakpoints go (against the official SDK's
 * body through pi-ai, and over a 20-iteration turn on a loopback server: every call's cached
 * prefix is byte for byte the start of the next call, which reads it at the same breakpoint),
 * the API's limit of 4, switching it off, and the cache tokens (Anthropic's and OpenAI's automatic
 * caching) counted at cache prices.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Stream } from "effect"
import {
  AgentLoop,
  AgentLoopLive,
  Anthropic,
  Message,
  OpenAiCompatible,
  type ProviderTypes,
  SessionStoreMemory,
  ToolRegistryLive,
  Usage
} from "effect-agent-loop"
import { MAX_CACHE_BREAKPOINTS } from "../../src/layers/providers/anthropicWire.ts"
import { echo } from "../support/fixtures.ts"
import { piToolCalls, piToolResult, piUser, referenceBody } from "../support/sdkReference.ts"
import { anthropicReply, openAiReply } from "../support/wireReplies.ts"
import { readFile } from "../support/wireFixtures.ts"
import { start } from "../support/wireServer.ts"

const KEY = Redacted.make("sk-ant-test")
const cache = { type: "ephemeral" }

/** A request body's cacheable units in the API's prefix order (tools, system, message blocks), each with its breakpoint apart. */
const units = (body: any): Array<{ readonly json: string; readonly breakpoint: boolean }> => {
  const unit = (where: unknown, value: any) => {
    const { cache_control, ...rest } = value
    return { json: JSON.stringify([where, rest]), breakpoint: cache_control !== undefined }
  }
  const system = typeof body.system === "string" ? [{ type: "text", text: body.system }] : body.system ?? []
  return [
    ...(body.tools ?? []).map((tool: any) => unit("tool", tool)),
    ...system.map((block: any) => unit("system", block)),
    ...body.messages.flatMap((message: any, i: number) =>
      // A string content is its own form (the bytes differ from a text block's): kept as it is.
      typeof message.content === "string"
        ? [{ json: JSON.stringify([[i, message.role], message.content]), breakpoint: false }]
        : message.content.map((block: any) => unit([i, message.role], block))
    )
  ]
}

describe("prompt caching", () => {
  it.live("breakpoints where the official SDK (through pi-ai) puts them, plus the previous call's", () =>
    Effect.gen(function*() {
      const model = "claude-sonnet-4-5"
      const call = { id: "toolu_1", name: "read_file" }
      const sdk = yield* referenceBody("anthropic-messages", model, {
        systemPrompt: "You are terse.",
        messages: [piUser([{ text: "read x" }]), piToolCalls("anthropic-messages", model, [call]), piToolResult(call, [{ text: "A" }])],
        tools: [readFile]
      })
      const server = yield* start([anthropicReply({ text: "ok" })])
      const provider = yield* Anthropic.make({ baseUrl: server.url, apiKey: KEY })
      const request: ProviderTypes.ProviderRequest = {
        model,
        maxTokens: sdk.max_tokens,
        messages: [
          Message.system("You are terse."),
          Message.user([Message.text("read x")]),
          Message.assistant("", [{ ...call, arguments: "{}" }]),
          Message.toolResult(call, "A")
        ],
        tools: [readFile]
      }
      yield* Stream.runDrain(provider.stream(request))
      const ours = server.requests[0]!.json
      // Field by field: the same body but for pi-ai's own extras (a streaming flag on tools, an
      // explicit `is_error: false`) and the second message breakpoint, which is the library's.
      for (const field of ["model", "max_tokens", "stream", "system"]) expect(ours[field], field).toEqual(sdk[field])
      expect(ours.system).toEqual([{ type: "text", text: "You are terse.", cache_control: cache }])
      expect(ours.tools).toEqual(sdk.tools.map(({ eager_input_streaming: _, ...tool }: any) => tool))
      expect(ours.tools.at(-1).cache_control).toEqual(cache)
      expect(ours.messages.slice(1)).toEqual(sdk.messages.slice(1).map((message: any) => ({
        ...message,
        content: message.content.map(({ is_error, ...block }: any) => is_error ? { ...block, is_error } : block)
      })))
      expect(ours.messages.at(-1).content.at(-1).cache_control).toEqual(cache)
      // The first user message is the previous call's newest: this call reads it back at its breakpoint.
      expect(sdk.messages[0]).toEqual({ role: "user", content: [{ type: "text", text: "read x" }] })
      expect(ours.messages[0]).toEqual({ role: "user", content: [{ type: "text", text: "read x", cache_control: cache }] })
      expect(units(ours).filter((u) => u.breakpoint)).toHaveLength(MAX_CACHE_BREAKPOINTS)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a 20-iteration turn and the next one: each call's cached prefix starts the next call, which reads it; never more than 4 breakpoints; cache tokens priced", () =>
    Effect.gen(function*() {
      const iterations = 20
      const server = yield* start((_request, index) =>
        anthropicReply(
          index === iterations - 1 || index === iterations
            ? { text: "done", usage: { input: 4, output: 1, cacheRead: 1000, cacheWrite: 20 } }
            : {
              toolCall: { id: `toolu_${index}`, name: "echo", arguments: { text: `step ${index}` } },
              usage: { input: 4, output: 3, cacheRead: index * 100, cacheWrite: 100 }
            }
        )
      )
      const price = { inputPerMillion: 3, outputPerMillion: 15, cachedInputPerMillion: 0.3, cacheWritePerMillion: 3.75 }
      const loop = AgentLoopLive.layer({ model: "claude-test", systemPrompt: "You are a careful agent.", maxIterations: iterations, prices: { "claude-test": price } }).pipe(
        Layer.provideMerge(Layer.mergeAll(
          Anthropic.layer({ baseUrl: server.url, apiKey: KEY }).pipe(Layer.provide(NodeHttpClient.layerUndici)),
          ToolRegistryLive.layer([echo]),
          SessionStoreMemory.layer()
        ))
      )
      const [first, second] = yield* Effect.gen(function*() {
        const agent = yield* AgentLoop
        return [yield* agent.turn("s", "Work in 20 steps."), yield* agent.turn("s", "And now?")] as const
      }).pipe(Effect.provide(loop))
      expect([first.status, first.iterations, second.status]).toEqual(["completed", iterations, "completed"])
      const bodies = server.requests.map((r) => r.json)
      expect(bodies).toHaveLength(iterations + 1)
      for (const [i, body] of bodies.entries()) {
        const marks = units(body).filter((u) => u.breakpoint).length
        expect(marks, `request ${i}`).toBeLessThanOrEqual(MAX_CACHE_BREAKPOINTS)
        expect(body.system[0].cache_control).toEqual(cache)
        expect(body.tools.at(-1).cache_control).toEqual(cache)
        expect(body.messages.at(-1).content.at(-1).cache_control, `request ${i}`).toEqual(cache)
      }
      for (let i = 0; i + 1 < bodies.length; i++) {
        const now = units(bodies[i])
        const next = units(bodies[i + 1])
        const cut = now.findLastIndex((u) => u.breakpoint)
        expect(next.slice(0, cut + 1).map((u) => u.json).join("\n"), `request ${i} → ${i + 1}`).toBe(now.slice(0, cut + 1).map((u) => u.json).join("\n"))
        expect(next[cut]!.breakpoint, `request ${i + 1} reads request ${i}'s prefix`).toBe(true)
      }
      // The API's cache counts arrive in Usage and are priced at the cache prices.
      const expected = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0 }
      for (let i = 0; i < iterations; i++) {
        const last = i === iterations - 1
        expected.cachedInputTokens += last ? 1000 : i * 100
        expected.cacheWriteTokens += last ? 20 : 100
        expected.inputTokens += 4 + (last ? 1020 : i * 100 + 100)
        expected.outputTokens += last ? 1 : 3
      }
      expect(first.usage).toEqual({ ...expected, costUsd: expect.closeTo(Usage.cost(expected, price), 12) })
      expect(first.usage.costUsd).toBeLessThan(Usage.cost(expected, { inputPerMillion: 3, outputPerMillion: 15 }))
    }))

  it.live("OpenAI's automatic caching: cached_tokens arrive as cachedInputTokens and cost the cached price", () =>
    Effect.gen(function*() {
      const server = yield* start([
        openAiReply({ toolCall: { id: "c1", name: "echo", arguments: { text: "a" } }, usage: { input: 2000, output: 10, cacheRead: 0 } }),
        openAiReply({ text: "done", usage: { input: 2100, output: 5, cacheRead: 1920 } })
      ])
      const price = { inputPerMillion: 2, outputPerMillion: 8, cachedInputPerMillion: 0.5 }
      const loop = AgentLoopLive.layer({ model: "gpt-test", prices: { "gpt-test": price } }).pipe(
        Layer.provideMerge(Layer.mergeAll(
          OpenAiCompatible.layer({ baseUrl: server.url, apiKey: KEY }).pipe(Layer.provide(NodeHttpClient.layerUndici)),
          ToolRegistryLive.layer([echo]),
          SessionStoreMemory.layer()
        ))
      )
      const result = yield* Effect.gen(function*() {
        return yield* (yield* AgentLoop).turn("s", "go")
      }).pipe(Effect.provide(loop))
      const usage = { inputTokens: 4100, outputTokens: 15, cachedInputTokens: 1920 }
      expect(result.usage).toEqual({ ...usage, costUsd: expect.closeTo((2180 * 2 + 1920 * 0.5 + 15 * 8) / 1e6, 12) })
    }))

  it.live("promptCaching: false sends no breakpoint and keeps the plain forms", () =>
    Effect.gen(function*() {
      const server = yield* start([anthropicReply({ text: "ok" })])
      const provider = yield* Anthropic.make({ baseUrl: server.url, apiKey: KEY, promptCaching: false })
      yield* Stream.runDrain(provider.stream({ model: "m", messages: [Message.system("S"), Message.user("hi")], tools: [readFile] }))
      const body = server.requests[0]!.json
      expect(server.requests[0]!.body).not.toContain("cache_control")
      expect([body.system, body.messages]).toEqual(["S", [{ role: "user", content: "hi" }]])
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
})
