import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Effect, Fiber, Layer, Redacted, Schema, Stream } from "effect"
import { HttpClient } from "effect/http"
import { TestClock } from "effect/testing"
import { AgentLoop, AgentLoopLive, Anthropic, Message, type ProviderTypes, SessionStoreMemory, Tool, ToolRegistryLive } from "effect-agent-loop"
import { anthropicChunks, anthropicStream } from "../support/wireFixtures.ts"
import { bytesEvery, event, type ReceivedRequest, start, type WireResponse } from "../support/wireServer.ts"
import { chunksOf, failureOf } from "../support/providerCalls.ts"

const KEY = "sk-ant-api03-secret-key-value"

const request: ProviderTypes.ProviderRequest = {
  model: "claude-sonnet-4-5",
  messages: [
    Message.system("You are terse."),
    Message.user("read two"),
    Message.assistant("Reading.", [
      { id: "toolu_a", name: "read_file", arguments: "{\"path\":\"x\"}" },
      { id: "toolu_b", name: "list_dir", arguments: "" }
    ]),
    Message.toolResult({ id: "toolu_a", name: "read_file" }, "A"),
    Message.toolResult({ id: "toolu_b", name: "list_dir" }, "no such dir", true),
    Message.user("steer"),
    Message.assistant("done")
  ],
  tools: [{ name: "read_file", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } } } }]
}

const collect = (url: string) => chunksOf(Anthropic.make({ baseUrl: url, apiKey: Redacted.make(KEY) }), request)

const failWith = (response: WireResponse) => failureOf(KEY, collect, response)

const apiError = (type: string, message: string) => JSON.stringify({ type: "error", error: { type, message } })

const stopWith = (stopReason: string) => [
  event("message_start", { type: "message_start", message: { id: "m", role: "assistant", content: [], usage: { input_tokens: 3, output_tokens: 1 } } }),
  event("message_delta", { type: "message_delta", delta: { stop_reason: stopReason }, usage: { output_tokens: 2 } }),
  event("message_stop", { type: "message_stop" })
]

describe("Anthropic", () => {
  it.live("decodes thinking, text, two tool_use blocks and usage split every 5 bytes, and sends the request correctly", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: bytesEvery(anthropicStream, 5) }])
      const chunks = yield* Effect.gen(function*() {
        const provider = yield* Anthropic.make({ baseUrl: `${server.url}/`, apiKeyEnv: "ANTHROPIC_API_KEY", promptCaching: false })
        return yield* Stream.runCollect(provider.stream(request))
      }).pipe(
        Effect.provide(NodeHttpClient.layerUndici),
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { ANTHROPIC_API_KEY: KEY } }))
      )
      expect(chunks).toEqual(anthropicChunks)
      const received = server.requests[0]!
      expect(received.path).toBe("/v1/messages")
      expect(received.headers["x-api-key"]).toBe(KEY)
      expect(received.headers["anthropic-version"]).toBe("2023-06-01")
      expect(received.headers["authorization"]).toBeUndefined()
      expect(received.json).toEqual({
        model: "claude-sonnet-4-5",
        max_tokens: 4096,
        stream: true,
        system: "You are terse.",
        messages: [
          { role: "user", content: "read two" },
          {
            role: "assistant",
            content: [
              { type: "text", text: "Reading." },
              { type: "tool_use", id: "toolu_a", name: "read_file", input: { path: "x" } },
              { type: "tool_use", id: "toolu_b", name: "list_dir", input: {} }
            ]
          },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "toolu_a", content: "A" },
              { type: "tool_result", tool_use_id: "toolu_b", content: "no such dir", is_error: true },
              { type: "text", text: "steer" }
            ]
          },
          { role: "assistant", content: [{ type: "text", text: "done" }] }
        ],
        tools: [{ name: "read_file", description: "Reads a file", input_schema: request.tools[0]!.parameters }]
      })
    }))

  it.live("by default marks the system prompt, the last tool and the last two user messages for the prompt cache", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: stopWith("end_turn") }])
      const provider = yield* Anthropic.make({ baseUrl: server.url, apiKey: Redacted.make(KEY) })
      yield* Stream.runDrain(provider.stream({ ...request, tools: [...request.tools, { name: "list_dir", description: "Lists", parameters: { type: "object" } }] }))
      const cache = { type: "ephemeral" }
      expect(server.requests[0]!.json).toEqual({
        model: "claude-sonnet-4-5",
        max_tokens: 4096,
        stream: true,
        system: [{ type: "text", text: "You are terse.", cache_control: cache }],
        messages: [
          { role: "user", content: [{ type: "text", text: "read two", cache_control: cache }] },
          {
            role: "assistant",
            content: [
              { type: "text", text: "Reading." },
              { type: "tool_use", id: "toolu_a", name: "read_file", input: { path: "x" } },
              { type: "tool_use", id: "toolu_b", name: "list_dir", input: {} }
            ]
          },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "toolu_a", content: "A" },
              { type: "tool_result", tool_use_id: "toolu_b", content: "no such dir", is_error: true },
              { type: "text", text: "steer", cache_control: cache }
            ]
          },
          { role: "assistant", content: [{ type: "text", text: "done" }] }
        ],
        tools: [
          { name: "read_file", description: "Reads a file", input_schema: request.tools[0]!.parameters },
          { name: "list_dir", description: "Lists", input_schema: { type: "object" }, cache_control: cache }
        ]
      })
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("maps stop reasons and sends maxTokens when given", () =>
    Effect.gen(function*() {
      const reasons: Array<unknown> = []
      for (const stop of ["end_turn", "tool_use", "max_tokens", "pause_turn"]) {
        const server = yield* start([{ body: stopWith(stop) }])
        const provider = yield* Anthropic.make({ baseUrl: server.url, apiKey: Redacted.make(KEY) })
        const chunks = yield* Stream.runCollect(provider.stream({ ...request, maxTokens: 100 }))
        reasons.push(chunks.at(-1))
        expect(server.requests[0]!.json.max_tokens).toBe(100)
      }
      expect(reasons).toEqual(["stop", "tool_calls", "length", "other"].map((reason) => ({
        _tag: "Finish",
        reason,
        usage: { inputTokens: 3, outputTokens: 2 },
        responseId: "m"
      })))
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("error statuses with Anthropic error bodies map to the error classes", () =>
    Effect.gen(function*() {
      const tooLong = yield* failWith({ status: 400, body: [apiError("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum")] })
      expect(tooLong._tag).toBe("ContextLengthExceeded")
      const tooLarge = yield* failWith({ status: 413, body: [apiError("request_too_large", "Request exceeds the maximum allowed number of bytes.")] })
      expect(tooLarge._tag).toBe("ContextLengthExceeded")
      const limited = yield* failWith({
        status: 429,
        headers: { "retry-after": "12" },
        body: [apiError("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")]
      })
      expect(limited).toMatchObject({ _tag: "RateLimited", retryAfterMs: 12_000 })
      const overloaded = yield* failWith({ status: 529, body: [apiError("overloaded_error", "Overloaded")] })
      expect(overloaded).toMatchObject({ _tag: "ProviderUnavailable", status: 529, message: "Overloaded" })
      const internal = yield* failWith({ status: 500, body: [apiError("api_error", "Internal server error")] })
      expect(internal).toMatchObject({ _tag: "ProviderUnavailable", status: 500 })
      const missing = yield* failWith({ status: 404, body: [apiError("not_found_error", "model: claude-9")] })
      expect(missing).toMatchObject({ _tag: "ProviderRejected", status: 404, message: "model: claude-9" })
      const auth = yield* failWith({ status: 401, body: [apiError("authentication_error", `invalid x-api-key: ${KEY}`)] })
      expect(auth).toMatchObject({ _tag: "ProviderRejected", status: 401, message: "invalid x-api-key: <redacted>" })
    }))

  it.effect("Retry-After as an HTTP date is measured against the Clock", () =>
    Effect.gen(function*() {
      const now = Date.parse("2025-03-01T08:00:00Z")
      yield* TestClock.setTime(now)
      const error = yield* failWith({
        status: 429,
        headers: { "retry-after": new Date(now + 5_000).toUTCString() },
        body: [apiError("rate_limit_error", "slow down")]
      })
      expect(error).toMatchObject({ _tag: "RateLimited", retryAfterMs: 5_000 })
    }))

  it.live("an overloaded_error event mid-stream → ProviderUnavailable", () =>
    Effect.gen(function*() {
      const cut = anthropicStream.indexOf("event: content_block_start")
      const error = yield* failWith({
        body: [anthropicStream.slice(0, cut), event("error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } })]
      })
      expect(error).toMatchObject({ _tag: "ProviderUnavailable", message: "Overloaded" })
    }))

  it.live("a dropped connection → ProviderUnavailable; no message_stop or bad JSON → MalformedResponse", () =>
    Effect.gen(function*() {
      const dropped = yield* failWith({ body: [anthropicStream.slice(0, 700)], drop: true })
      expect(dropped._tag).toBe("ProviderUnavailable")
      const early = yield* failWith({ body: [anthropicStream.slice(0, anthropicStream.indexOf("event: message_stop"))] })
      expect(early).toMatchObject({ _tag: "MalformedResponse", message: expect.stringContaining("message_stop") })
      const bad = yield* failWith({ body: ["event: message_start\ndata: {\"type\":\"message_start\",\n\n"] })
      expect(bad).toMatchObject({ _tag: "MalformedResponse", message: expect.stringContaining("Invalid JSON") })
      const orphan = yield* failWith({
        body: [event("content_block_delta", { type: "content_block_delta", index: 4, delta: { type: "input_json_delta", partial_json: "{" } })]
      })
      expect(orphan._tag).toBe("MalformedResponse")
    }))

  it.effect("times out on the Clock when no response arrives", () =>
    Effect.gen(function*() {
      const fiber = yield* Anthropic.make({ timeout: "10 seconds", apiKey: Redacted.make(KEY) }).pipe(
        Effect.flatMap((provider) => Stream.runCollect(provider.stream(request))),
        Effect.provideService(HttpClient.HttpClient, HttpClient.make(() => Effect.never)),
        Effect.flip,
        Effect.forkChild
      )
      yield* TestClock.adjust("10 seconds")
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "ProviderUnavailable" })
    }))

  it.live("reads cache read and write tokens into Usage; input tokens include them", () =>
    Effect.gen(function*() {
      const server = yield* start([{
        body: [
          event("message_start", {
            type: "message_start",
            message: { id: "m", role: "assistant", content: [], usage: { input_tokens: 20, cache_creation_input_tokens: 1000, cache_read_input_tokens: 3000, output_tokens: 1 } }
          }),
          event("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 42 } }),
          event("message_stop", { type: "message_stop" })
        ]
      }])
      const provider = yield* Anthropic.make({ baseUrl: server.url, apiKey: Redacted.make(KEY) })
      expect((yield* Stream.runCollect(provider.stream(request))).at(-1)).toEqual({
        _tag: "Finish",
        reason: "stop",
        usage: { inputTokens: 4020, outputTokens: 42, cachedInputTokens: 3000, cacheWriteTokens: 1000 },
        responseId: "m"
      })
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a request without tools renders earlier tool calls and results as text; tool schemas lose $schema", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: stopWith("end_turn") }])
      const provider = yield* Anthropic.make({ baseUrl: server.url, apiKey: Redacted.make(KEY), promptCaching: false })
      yield* Stream.runDrain(provider.stream({ ...request, tools: [] }))
      yield* Stream.runDrain(provider.stream({
        ...request,
        tools: [{ name: "t", description: "d", parameters: { $schema: "http://json-schema.org/draft-07/schema#", type: "object", additionalProperties: false } }]
      }))
      const [summary, withTools] = server.requests
      expect(summary!.json.tools).toBeUndefined()
      expect(summary!.body).not.toMatch(/tool_use|tool_result/)
      expect(summary!.json.messages).toEqual([
        { role: "user", content: "read two" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Reading." },
            { type: "text", text: "[called tool read_file with {\"path\":\"x\"}]" },
            { type: "text", text: "[called tool list_dir with {}]" }
          ]
        },
        {
          role: "user",
          content: [
            { type: "text", text: "[result of tool read_file]\nA" },
            { type: "text", text: "[error from tool list_dir]\nno such dir" },
            { type: "text", text: "steer" }
          ]
        },
        { role: "assistant", content: [{ type: "text", text: "done" }] }
      ])
      expect(withTools!.json.tools[0].input_schema).toEqual({ type: "object", additionalProperties: false })
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
})

/** Answers like the Messages API, including its rule that tool blocks need tool definitions. */
const strictAnthropic = (request: ReceivedRequest, index: number): WireResponse => {
  if (request.json.tools === undefined && /"type":"tool_(use|result)"/.test(request.body)) {
    return {
      status: 400,
      body: [apiError("invalid_request_error", "Requests which include `tool_use` or `tool_result` blocks must define tools.")]
    }
  }
  const start = event("message_start", { type: "message_start", message: { id: `m${index}`, role: "assistant", content: [], usage: { input_tokens: 5, output_tokens: 1 } } })
  const stop = [event("message_stop", { type: "message_stop" })]
  if (index === 0) {
    return {
      body: [
        start,
        event("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_w", name: "wait", input: {} } }),
        event("message_delta", { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 3 } }),
        ...stop
      ]
    }
  }
  return {
    body: [
      start,
      event("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
      event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Stopped while waiting." } }),
      event("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 4 } }),
      ...stop
    ]
  }
}

describe("Anthropic in the loop", () => {
  it.live("the graceful-interrupt summary call (no tools, tool blocks in the history) is a request the API accepts", () =>
    Effect.gen(function*() {
      const server = yield* start(strictAnthropic)
      const running = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const wait = Tool.make({
        name: "wait",
        description: "waits",
        parameters: Schema.Struct({}),
        execute: () => Deferred.succeed(running, undefined).pipe(Effect.andThen(Deferred.await(release)), Effect.as("waited"))
      })
      const loopLayer = AgentLoopLive.layer({ model: "claude-test" }).pipe(
        Layer.provideMerge(Layer.mergeAll(
          Anthropic.layer({ baseUrl: server.url, apiKey: Redacted.make(KEY) }).pipe(Layer.provide(NodeHttpClient.layerUndici)),
          ToolRegistryLive.layer([wait]),
          SessionStoreMemory.layer()
        ))
      )
      const result = yield* Effect.gen(function*() {
        const loop = yield* AgentLoop
        const turn = yield* Effect.forkChild(loop.turn("s", "wait, then tell me"))
        yield* Deferred.await(running)
        yield* loop.interruptGraceful("s")
        yield* Deferred.succeed(release, undefined)
        return yield* Fiber.join(turn)
      }).pipe(Effect.provide(loopLayer))
      expect(result.status).toBe("interrupted")
      expect(result.finalMessage?.content).toBe("Stopped while waiting.")
      expect(server.requests).toHaveLength(2)
      expect(server.requests[1]!.json.tools).toBeUndefined()
      expect(JSON.stringify(server.requests[1]!.json.messages)).toContain("[result of tool wait]\\nwaited")
    }))
})
