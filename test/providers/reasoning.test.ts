/**
 * Sampling and reasoning on the Chat Completions and Anthropic wires: the request fields checked
 * against what the official clients send (through pi-ai), the API's thinking constraints, and
 * signed thinking blocks kept on the reply and sent back with the tool results.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schema, Stream } from "effect"
import {
  AgentLoop,
  AgentLoopLive,
  Anthropic,
  Message,
  OpenAiCompatible,
  type ProviderTypes,
  SessionStore,
  SessionStoreMemory,
  Tool,
  ToolRegistryLive
} from "effect-agent-loop"
import { maxTokensFieldFor } from "../../src/layers/providers/openAiWire.ts"
import { piAssistant, piToolResult, piUser, referenceBody } from "../support/sdkReference.ts"
import { anthropicStream, openAiText, readFile } from "../support/wireFixtures.ts"
import { event, start } from "../support/wireServer.ts"

const KEY = "sk-reasoning-test-key"
const thinking = { provider: "anthropic", data: { type: "thinking", thinking: "I should read x.", signature: "sig-1" } }
const redacted = { provider: "anthropic", data: { type: "redacted_thinking", data: "opaque" } }

/** A conversation where the model thought, then called a tool whose result came back. */
const afterThinking: ProviderTypes.ProviderRequest = {
  model: "claude-sonnet-4-5",
  messages: [
    Message.system("Be terse."),
    Message.user("read x"),
    Message.assistant("Reading.", [{ id: "toolu_a", name: "read_file", arguments: "{\"path\":\"x\"}" }], {
      reasoning: "I should read x.",
      providerBlocks: [thinking, redacted, { provider: "openai-responses", data: { type: "reasoning", id: "rs_1" } }]
    }),
    Message.toolResult({ id: "toolu_a", name: "read_file" }, "A")
  ],
  tools: [readFile]
}

const stopped = [
  event("message_start", { type: "message_start", message: { id: "m", role: "assistant", content: [], usage: { input_tokens: 3, output_tokens: 1 } } }),
  event("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 2 } }),
  event("message_stop", { type: "message_stop" })
]

/**
 * The body the Anthropic provider sends for `request`, or the error it fails with before sending.
 * Without cache breakpoints, as the reference asks for none (prompt-caching.test.ts checks those).
 */
const anthropicBody = (request: ProviderTypes.ProviderRequest) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start([{ body: stopped }])
    const provider = yield* Anthropic.make({ baseUrl: server.url, apiKey: Redacted.make(KEY), promptCaching: false })
    const sent = yield* Stream.runCollect(provider.stream(request)).pipe(Effect.result)
    return sent._tag === "Failure" ? { error: sent.failure, sent: server.requests.length } : server.requests[0]!.json
  })).pipe(Effect.provide(NodeHttpClient.layerUndici))

describe("Anthropic thinking and sampling", () => {
  it.live("sends thinking, the output limit and the blocks after thinking as the official client does; temperature is left out with thinking", () =>
    Effect.gen(function*() {
      const ours = yield* anthropicBody({ ...afterThinking, maxTokens: 16000, temperature: 0.5, reasoning: { budgetTokens: 8000 } })
      const sdk = yield* referenceBody("anthropic-messages", "claude-sonnet-4-5", {
        systemPrompt: "Be terse.",
        messages: [
          piUser("read x"),
          piAssistant("anthropic-messages", "claude-sonnet-4-5", [
            { type: "thinking", thinking: "I should read x.", thinkingSignature: "sig-1" },
            { type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: "opaque", redacted: true },
            { type: "text", text: "Reading." },
            { type: "toolCall", id: "toolu_a", name: "read_file", arguments: { path: "x" } }
          ]),
          piToolResult({ id: "toolu_a", name: "read_file" }, [{ text: "A" }])
        ],
        tools: [readFile]
      }, { maxTokens: 16000, temperature: 0.5, thinkingEnabled: true, thinkingBudgetTokens: 8000 })
      // the official client also sends is_error: false; the API's default is the same
      const sdkMessages = JSON.parse(JSON.stringify(sdk.messages).replaceAll(",\"is_error\":false", ""))
      expect(ours.messages).toEqual(sdkMessages)
      expect(ours.thinking).toEqual({ type: sdk.thinking.type, budget_tokens: sdk.thinking.budget_tokens })
      expect(ours.max_tokens).toBe(sdk.max_tokens)
      expect("temperature" in ours).toBe(false)
      expect("temperature" in sdk).toBe(false)
    }))

  it.live("without thinking: temperature, top_p and stop_sequences are sent, thinking blocks are not", () =>
    Effect.gen(function*() {
      const ours = yield* anthropicBody({ ...afterThinking, temperature: 0.5, topP: 0.8, stop: ["END"], seed: 7 })
      const sdk = yield* referenceBody("anthropic-messages", "claude-sonnet-4-5", { systemPrompt: "Be terse.", messages: [piUser("hi")] }, {
        maxTokens: 4096,
        temperature: 0.5
      })
      expect(ours.temperature).toBe(sdk.temperature)
      expect(ours).toMatchObject({ top_p: 0.8, stop_sequences: ["END"], max_tokens: 4096 })
      expect(ours.thinking).toBeUndefined()
      expect(ours.seed).toBeUndefined()
      expect(ours.messages[1].content.map((block: any) => block.type)).toEqual(["text", "tool_use"])
    }))

  it.live("an effort without a budget thinks with the effort's budget, on top of the default limit or within a given one", () =>
    Effect.gen(function*() {
      const free = yield* anthropicBody({ ...afterThinking, reasoning: { effort: "medium" }, topP: 0.97 })
      expect(free).toMatchObject({ thinking: { type: "enabled", budget_tokens: 8192 }, max_tokens: 4096 + 8192, top_p: 0.97 })
      const bounded = yield* anthropicBody({ ...afterThinking, reasoning: { effort: "high" }, maxTokens: 6000, topP: 0.5 })
      expect(bounded).toMatchObject({ thinking: { budget_tokens: 6000 - 1024 }, max_tokens: 6000 })
      expect(bounded.top_p).toBeUndefined()
    }))

  it.live("what the API refuses fails before sending, with the rule in the message", () =>
    Effect.gen(function*() {
      const small = yield* anthropicBody({ ...afterThinking, reasoning: { budgetTokens: 500 } })
      expect(small).toMatchObject({ error: { _tag: "ProviderRejected", message: expect.stringContaining("at least 1024") }, sent: 0 })
      const over = yield* anthropicBody({ ...afterThinking, maxTokens: 4000, reasoning: { budgetTokens: 4000 } })
      expect(over).toMatchObject({ error: { message: expect.stringContaining("must be less than maxTokens (4000)") }, sent: 0 })
      const cramped = yield* anthropicBody({ ...afterThinking, maxTokens: 1500, reasoning: { effort: "low" } })
      expect(cramped).toMatchObject({ error: { message: expect.stringContaining("leaves no room for thinking") }, sent: 0 })
      const hot = yield* anthropicBody({ ...afterThinking, temperature: 1.5 })
      expect(hot).toMatchObject({ error: { message: expect.stringContaining("between 0 and 1") }, sent: 0 })
    }))

  it.live("a thinking turn keeps the signed and redacted blocks on the reply and sends them back first, with the tool results", () =>
    Effect.gen(function*() {
      const withRedacted = anthropicStream.replace(
        "event: content_block_start",
        `${event("content_block_start", { type: "content_block_start", index: 9, content_block: { type: "redacted_thinking", data: "EmwKAhgB" } })}event: content_block_start`
      )
      const server = yield* start([{ body: [withRedacted] }, { body: stopped }])
      const tools = ["read_file", "list_dir"].map((name) =>
        Tool.make({ name, description: name, parameters: Schema.Struct({ path: Schema.String }), execute: () => Effect.succeed(`${name} ok`) })
      )
      const layer = AgentLoopLive.layer({ model: "claude-sonnet-4-5", modelOptions: { maxTokens: 8000, reasoning: { budgetTokens: 2000 } } }).pipe(
        Layer.provideMerge(SessionStoreMemory.layer()),
        Layer.provide([Anthropic.layer({ baseUrl: server.url, apiKey: Redacted.make(KEY) }), ToolRegistryLive.layer(tools)]),
        Layer.provide(NodeHttpClient.layerUndici)
      )
      const stored = yield* Effect.gen(function*() {
        expect((yield* (yield* AgentLoop).turn("s", "look")).status).toBe("completed")
        return yield* (yield* SessionStore).load("s")
      }).pipe(Effect.provide(layer))
      const blocks = [
        { provider: "anthropic", data: { type: "redacted_thinking", data: "EmwKAhgB" } },
        { provider: "anthropic", data: { type: "thinking", thinking: "Überlege…", signature: "sig" } }
      ]
      expect(stored[1]).toMatchObject({ role: "assistant", reasoning: "Überlege…", providerBlocks: blocks })
      const second = server.requests[1]!.json
      expect(second).toMatchObject({ max_tokens: 8000, thinking: { type: "enabled", budget_tokens: 2000 } })
      expect(second.messages[1].content.map((block: any) => block.type)).toEqual(["redacted_thinking", "thinking", "text", "tool_use", "tool_use"])
      expect(second.messages[1].content.slice(0, 2)).toEqual(blocks.map((block) => block.data))
      expect(second.messages[2].content.map((block: any) => block.type)).toEqual(["tool_result", "tool_result"])
    }))

  it.live("blocks go back only to the model that made them", () =>
    Effect.gen(function*() {
      const stamped = (model: string): ProviderTypes.ProviderRequest => ({
        ...afterThinking,
        reasoning: { budgetTokens: 2000 },
        messages: afterThinking.messages.map((m) =>
          m.role === "assistant" ? { ...m, providerBlocks: (m.providerBlocks ?? []).map((block) => ({ ...block, model })) } : m
        )
      })
      const same = yield* anthropicBody(stamped("claude-sonnet-4-5"))
      expect(same.messages[1].content.map((block: any) => block.type)).toEqual(["thinking", "redacted_thinking", "text", "tool_use"])
      const other = yield* anthropicBody(stamped("claude-opus-4-1"))
      expect(other.messages[1].content.map((block: any) => block.type)).toEqual(["text", "tool_use"])
    }))

  it.live("an unsigned thinking block (a cut stream) is not kept", () =>
    Effect.gen(function*() {
      const unsigned = anthropicStream.replace(/event: content_block_delta\ndata: \{[^\n]*signature_delta[^\n]*\n\n/, "")
      const server = yield* start([{ body: [unsigned] }])
      const provider = yield* Anthropic.make({ baseUrl: server.url, apiKey: Redacted.make(KEY) })
      const chunks = yield* Stream.runCollect(provider.stream(afterThinking))
      expect(chunks.some((chunk) => chunk._tag === "ReasoningDelta")).toBe(true)
      expect(chunks.some((chunk) => chunk._tag === "ProviderBlock")).toBe(false)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
})

describe("Chat Completions sampling and reasoning", () => {
  it.live("sends max_completion_tokens, temperature and reasoning_effort as the official client does; top_p, stop and seed as the API names them", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: [openAiText] }])
      const provider = yield* OpenAiCompatible.make({ baseUrl: server.url, apiKey: Redacted.make(KEY), maxTokensField: "max_completion_tokens" })
      yield* Stream.runDrain(provider.stream({
        model: "gpt-5",
        messages: [Message.system("Be terse."), Message.user("hi")],
        tools: [],
        maxTokens: 1000,
        temperature: 0.3,
        topP: 0.9,
        stop: ["END", "STOP"],
        seed: 42,
        reasoning: { effort: "low", budgetTokens: 5000 }
      }))
      const ours = server.requests[0]!.json
      const sdk = yield* referenceBody("openai-completions", "gpt-5", { systemPrompt: "Be terse.", messages: [piUser("hi")] }, {
        maxTokens: 1000,
        temperature: 0.3,
        reasoningEffort: "low"
      })
      for (const field of ["max_completion_tokens", "temperature", "reasoning_effort", "stream", "stream_options"]) {
        expect([field, ours[field]]).toEqual([field, sdk[field]])
      }
      expect(ours.messages.slice(1)).toEqual(sdk.messages.slice(1))
      expect(ours).toMatchObject({ top_p: 0.9, stop: ["END", "STOP"], seed: 42 })
      expect(ours.max_tokens).toBeUndefined()
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it("the output limit goes in max_completion_tokens on OpenAI's own URL, in max_tokens on compatible servers", () => {
    expect(maxTokensFieldFor(undefined)).toBe("max_completion_tokens")
    expect(maxTokensFieldFor("https://api.openai.com/v1")).toBe("max_completion_tokens")
    expect(maxTokensFieldFor("http://localhost:11434/v1")).toBe("max_tokens")
    expect(maxTokensFieldFor("https://api.openai.com.evil.example/v1")).toBe("max_tokens")
  })
})
