import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Redacted, Schema, Stream } from "effect"
import {
  AgentLoop,
  AgentLoopLive,
  Message,
  OpenAiResponses,
  type ProviderTypes,
  SessionStore,
  SessionStoreMemory,
  Tool,
  ToolRegistryLive
} from "effect-agent-loop"
import { piAssistant, piToolResult, piUser, referenceBody } from "../support/sdkReference.ts"
import { readFile, responsesChunks, responsesReasoningItem, responsesStream } from "../support/wireFixtures.ts"
import { bytesEvery, event, start, type WireResponse } from "../support/wireServer.ts"
import { chunksOf, failureOf } from "../support/providerCalls.ts"

const KEY = "sk-proj-responses-secret-key"

/** A reply that reasoned, then called a tool: what the fixture stream decodes to. */
const reply = Message.assistant("Grüße", [{ id: "call_a", name: "read_file", arguments: "{\"path\":\"x\"}" }], {
  reasoning: "Plan: read.",
  providerBlocks: responsesChunks.flatMap((chunk) => chunk._tag === "ProviderBlock" ? [chunk.block] : [])
})

const request: ProviderTypes.ProviderRequest = {
  model: "gpt-5",
  messages: [
    Message.system("Be terse."),
    Message.user("read x"),
    reply,
    Message.toolResult({ id: "call_a", name: "read_file" }, "A")
  ],
  tools: [readFile],
  maxTokens: 1000,
  temperature: 0.3,
  reasoning: { effort: "high" }
}

const collect = (url: string, req: ProviderTypes.ProviderRequest = request) =>
  chunksOf(OpenAiResponses.make({ baseUrl: url, apiKey: Redacted.make(KEY) }), req)

const failWith = (response: WireResponse) => failureOf(KEY, collect, response)

/** One event of a Responses stream. */
const rs = (type: string, fields: Record<string, unknown> = {}) => event(type, { type, ...fields })

describe("OpenAiResponses", () => {
  it.live("decodes reasoning summaries, text, a function call and usage split every 7 bytes, from /v1/responses with the key", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: bytesEvery(responsesStream, 7) }])
      const chunks = yield* Effect.gen(function*() {
        const provider = yield* OpenAiResponses.make({ baseUrl: `${server.url}/v1/`, apiKeyEnv: "OPENAI_API_KEY" })
        return yield* Stream.runCollect(provider.stream(request))
      }).pipe(
        Effect.provide(NodeHttpClient.layerUndici),
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { OPENAI_API_KEY: KEY } }))
      )
      expect(chunks).toEqual(responsesChunks)
      expect(server.requests[0]!.path).toBe("/v1/responses")
      expect(server.requests[0]!.headers["authorization"]).toBe(`Bearer ${KEY}`)
    }))

  it.live("sends what the official client sends for the same conversation: input items, reasoning sent back, tools, options", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: [responsesStream] }])
      yield* collect(server.url)
      const ours = server.requests[0]!.json
      const sdk = yield* referenceBody("openai-responses", "gpt-5", {
        systemPrompt: "Be terse.",
        messages: [
          piUser("read x"),
          piAssistant("openai-responses", "gpt-5", [
            { type: "thinking", thinking: "Plan: read.", thinkingSignature: JSON.stringify(responsesReasoningItem) },
            { type: "text", text: "Grüße", textSignature: JSON.stringify({ v: 1, id: "msg_01" }) },
            { type: "toolCall", id: "call_a|fc_01", name: "read_file", arguments: { path: "x" } }
          ]),
          piToolResult({ id: "call_a|fc_01", name: "read_file" }, [{ text: "A" }])
        ],
        tools: [readFile]
      }, { maxTokens: 1000, temperature: 0.3, reasoningEffort: "high" })
      // the SDK puts the system prompt first among the input items; the API's own field is `instructions`
      expect(sdk.input[0]).toEqual({ role: "developer", content: "Be terse." })
      expect(ours.instructions).toBe("Be terse.")
      const sdkMessage = sdk.input[3]
      expect(ours.input[2]).toEqual({ ...sdkMessage, phase: undefined, content: [{ ...sdkMessage.content[0], text: "Grüße" }] })
      expect(ours.input).toEqual(sdk.input.slice(1).map((item: any) => item.type === "message" ? ours.input[2] : item))
      for (const field of ["model", "stream", "store", "tools", "max_output_tokens", "temperature", "reasoning", "include"]) {
        expect([field, ours[field]]).toEqual([field, sdk[field]])
      }
      expect(Object.keys(ours).sort()).toEqual(
        ["include", "input", "instructions", "max_output_tokens", "model", "reasoning", "store", "stream", "temperature", "tools"]
      )
    }))

  it.live("another model's items are left out: the reply goes back as plain text and calls", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: [responsesStream] }])
      const fromOther = Message.assistant(reply.content, reply.toolCalls, {
        providerBlocks: (reply.providerBlocks ?? []).map((block) => ({ ...block, model: "o3" }))
      })
      yield* collect(server.url, { ...request, messages: [Message.user("read x"), fromOther] })
      expect(server.requests[0]!.json.input.slice(1)).toEqual([
        { role: "assistant", content: "Grüße" },
        { type: "function_call", call_id: "call_a", name: "read_file", arguments: "{\"path\":\"x\"}" }
      ])
    }))

  it.live("a reply without kept items goes back as plain text and calls; no reasoning asked, none included", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: [responsesStream] }])
      yield* collect(server.url, {
        model: "gpt-4.1",
        messages: [Message.user("hi"), Message.assistant("Reading.", [{ id: "call_b", name: "read_file", arguments: "{}" }])],
        tools: [],
        topP: 0.9
      })
      const body = server.requests[0]!.json
      expect(body.input).toEqual([
        { role: "user", content: [{ type: "input_text", text: "hi" }] },
        { role: "assistant", content: "Reading." },
        { type: "function_call", call_id: "call_b", name: "read_file", arguments: "{}" }
      ])
      expect(body).toMatchObject({ top_p: 0.9, store: false })
      expect(body.reasoning).toBeUndefined()
      expect(body.include).toBeUndefined()
      expect(body.tools).toBeUndefined()
    }))

  it.live("keeps no items when no reasoning came with encrypted content; arguments that come whole; an incomplete response finishes by its reason", () =>
    Effect.gen(function*() {
      const server = yield* start([{
        body: [
          rs("response.output_item.done", { output_index: 0, item: { id: "rs_x", type: "reasoning", summary: [] } }),
          rs("response.output_text.delta", { delta: "Hal" }),
          rs("response.refusal.delta", { delta: "t." }),
          rs("response.output_item.done", { output_index: 1, item: { id: "msg_x", type: "message", content: [] } }),
          rs("response.output_item.added", { output_index: 2, item: { id: "fc_x", type: "function_call", call_id: "call_x", name: "read_file", arguments: "" } }),
          rs("response.output_item.done", {
            output_index: 2,
            item: { id: "fc_x", type: "function_call", call_id: "call_x", name: "read_file", arguments: "{\"path\":\"x\"}" }
          }),
          rs("response.incomplete", {
            response: { status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, usage: { input_tokens: 5, output_tokens: 7 } }
          })
        ]
      }])
      expect(yield* collect(server.url)).toEqual([
        { _tag: "TextDelta", text: "Hal" },
        { _tag: "TextDelta", text: "t." },
        { _tag: "ToolCallDelta", index: 0, id: "call_x", name: "read_file", argumentsDelta: "" },
        { _tag: "ToolCallDelta", index: 0, argumentsDelta: "{\"path\":\"x\"}" },
        { _tag: "Finish", reason: "length", usage: { inputTokens: 5, outputTokens: 7 } }
      ])
    }))

  it.live("HTTP errors map like the chat provider's, without the key", () =>
    Effect.gen(function*() {
      const apiError = (code: string, message: string, type = "invalid_request_error") => JSON.stringify({ error: { message, type, param: null, code } })
      const overflow = yield* failWith({ status: 400, body: [apiError("context_length_exceeded", "Your input exceeds the context window of this model.")] })
      expect(overflow._tag).toBe("ContextLengthExceeded")
      const limited = yield* failWith({ status: 429, headers: { "retry-after-ms": "1500" }, body: [apiError("rate_limit_exceeded", "Rate limit reached", "requests")] })
      expect(limited).toMatchObject({ _tag: "RateLimited", retryAfterMs: 1500 })
      const auth = yield* failWith({ status: 401, body: [apiError("invalid_api_key", `Incorrect API key provided: ${KEY}`)] })
      expect(auth).toMatchObject({ _tag: "ProviderRejected", status: 401 })
      expect(auth.message).toContain("<redacted>")
      const down = yield* failWith({ status: 503, body: ["upstream connect error"] })
      expect(down).toMatchObject({ _tag: "ProviderUnavailable", status: 503 })
    }))

  it.live("in-stream failures are classified like HTTP ones: response.failed and error events", () =>
    Effect.gen(function*() {
      const failed = (code: string, message: string) => ({
        body: [rs("response.output_text.delta", { delta: "x" }), rs("response.failed", { response: { status: "failed", error: { code, message } } })]
      })
      expect((yield* failWith(failed("server_error", "The server had an error")))._tag).toBe("ProviderUnavailable")
      expect((yield* failWith(failed("rate_limit_exceeded", "Slow down")))._tag).toBe("RateLimited")
      expect((yield* failWith(failed("context_length_exceeded", "Input too long")))._tag).toBe("ContextLengthExceeded")
      const errorEvent = yield* failWith({ body: [rs("error", { code: "invalid_api_key", message: "bad key", param: null })] })
      expect(errorEvent).toMatchObject({ _tag: "ProviderRejected", message: "bad key" })
      const cut = yield* failWith({ body: [rs("response.output_text.delta", { delta: "x" })] })
      expect(cut).toMatchObject({ _tag: "MalformedResponse", message: "The stream ended before response.completed" })
      const stray = yield* failWith({ body: [rs("response.function_call_arguments.delta", { item_id: "fc_9", delta: "{" })] })
      expect(stray._tag).toBe("MalformedResponse")
    }))

  it.live("stop sequences, which the API lacks, fail before anything is sent", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: [responsesStream] }])
      const error = yield* Effect.flip(collect(server.url, { ...request, stop: ["END"] }))
      expect(error).toMatchObject({ _tag: "ProviderRejected", message: expect.stringContaining("no stop sequences") })
      expect(server.requests).toHaveLength(0)
    }))

  it.live("a turn keeps the reasoning items on the reply, in the session, and sends them back with the tool result", () =>
    Effect.gen(function*() {
      const server = yield* start([
        { body: [responsesStream] },
        {
          body: [
            rs("response.output_text.delta", { delta: "It says A." }),
            rs("response.completed", { response: { status: "completed", usage: { input_tokens: 200, output_tokens: 4 } } })
          ]
        }
      ])
      const tool = Tool.make({
        name: "read_file",
        description: "Reads a file",
        parameters: Schema.Struct({ path: Schema.String }),
        execute: () => Effect.succeed("A")
      })
      const layer = AgentLoopLive.layer({ model: "gpt-5", modelOptions: { reasoning: { effort: "low" } } }).pipe(
        Layer.provideMerge(SessionStoreMemory.layer()),
        Layer.provide([OpenAiResponses.layer({ baseUrl: server.url, apiKey: Redacted.make(KEY) }), ToolRegistryLive.layer([tool])]),
        Layer.provide(NodeHttpClient.layerUndici)
      )
      const { result, stored } = yield* Effect.gen(function*() {
        const result = yield* (yield* AgentLoop).turn("s", "read ä.md", { maxTokens: 2000 })
        return { result, stored: yield* (yield* SessionStore).load("s") }
      }).pipe(Effect.provide(layer))
      expect(result.status).toBe("completed")
      expect(result.usage).toMatchObject({ cachedInputTokens: 64, reasoningTokens: 48 })
      const first = stored.find((m) => m.role === "assistant")
      expect(first).toMatchObject({ reasoning: "Plan: read.\n\nThen answer.", providerBlocks: reply.providerBlocks })
      const second = server.requests[1]!.json
      expect(second.input).toEqual([
        { role: "user", content: [{ type: "input_text", text: "read ä.md" }] },
        responsesReasoningItem,
        {
          type: "message",
          id: "msg_01",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: "Grüße, 世界 🌍", annotations: [] }]
        },
        { type: "function_call", id: "fc_01", call_id: "call_a", name: "read_file", arguments: "{\"path\":\"ä.md\"}" },
        { type: "function_call_output", call_id: "call_a", output: "A" }
      ])
      expect(second).toMatchObject({ reasoning: { effort: "low", summary: "auto" }, include: ["reasoning.encrypted_content"], max_output_tokens: 2000 })
    }))
})
