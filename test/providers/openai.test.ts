import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber, Redacted, Stream } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { TestClock } from "effect/testing"
import { Message, OpenAiCompatible, type ProviderError, type ProviderTypes, Secrets, SecretsLive } from "effect-agent-loop"
import { bytesEvery, data, start, type WireResponse } from "../support/wireServer.ts"
import { openAiText, openAiTextChunks, openAiTools, openAiToolsChunks } from "../support/wireFixtures.ts"
import { chunksOf, failureOf } from "../support/providerCalls.ts"

const KEY = "sk-test-0123456789abcdef"

const request: ProviderTypes.ProviderRequest = {
  model: "gpt-4o",
  messages: [
    Message.system("Be brief."),
    Message.user("read a.md"),
    Message.assistant("", [{ id: "call_1", name: "read_file", arguments: "{\"path\":\"a.md\"}" }]),
    Message.toolResult({ id: "call_1", name: "read_file" }, "hello", true),
    Message.assistant("It says hello.")
  ],
  tools: [{ name: "read_file", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } } } }],
  maxTokens: 256
}

const collect = (url: string, options: OpenAiCompatible.Options = {}) =>
  chunksOf(OpenAiCompatible.make({ baseUrl: `${url}/v1`, apiKey: Redacted.make(KEY), ...options }), request)

const failWith = (response: WireResponse, options: OpenAiCompatible.Options = {}) => failureOf(KEY, (url) => collect(url, options), response)

const openAiError = (message: string, type: string, code: string | null) =>
  JSON.stringify({ error: { message, type, param: null, code } })

describe("OpenAiCompatible", () => {
  it.live("decodes text, reasoning and usage split mid-JSON and mid-UTF-8, and sends the request correctly", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: bytesEvery(openAiText, 7) }])
      const chunks = yield* Effect.gen(function*() {
        const provider = yield* OpenAiCompatible.make({ baseUrl: `${server.url}/v1/`, apiKeyEnv: "OPENAI_API_KEY", headers: { "x-title": "agent" } })
        return yield* Stream.runCollect(provider.stream(request))
      }).pipe(
        Effect.provide(NodeHttpClient.layerUndici),
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { OPENAI_API_KEY: KEY } }))
      )
      expect(chunks).toEqual(openAiTextChunks)
      const received = server.requests[0]!
      expect(received.method).toBe("POST")
      expect(received.path).toBe("/v1/chat/completions")
      expect(received.headers["authorization"]).toBe(`Bearer ${KEY}`)
      expect(received.headers["x-title"]).toBe("agent")
      expect(received.json).toEqual({
        model: "gpt-4o",
        stream: true,
        stream_options: { include_usage: true },
        max_tokens: 256,
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "read a.md" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "call_1", type: "function", function: { name: "read_file", arguments: "{\"path\":\"a.md\"}" } }]
          },
          { role: "tool", tool_call_id: "call_1", content: "hello" },
          { role: "assistant", content: "It says hello." }
        ],
        tools: [{
          type: "function",
          function: { name: "read_file", description: "Reads a file", parameters: request.tools[0]!.parameters }
        }]
      })
    }))

  it.live("passes two parallel tool calls through by index, arguments interleaved", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: bytesEvery(openAiTools, 11) }])
      expect(yield* collect(server.url)).toEqual(openAiToolsChunks)
    }))

  it.live("reads `reasoning` (Ollama, OpenRouter) as well as `reasoning_content`; omits tools and auth when absent", () =>
    Effect.gen(function*() {
      const body = [
        data({ choices: [{ index: 0, delta: { role: "assistant", content: "", reasoning: "hmm" } }] }),
        data({ choices: [{ index: 0, delta: { content: "ok" }, finish_reason: "length" }] }),
        "data: [DONE]\n\n"
      ]
      const server = yield* start([{ body }])
      const chunks = yield* Effect.gen(function*() {
        const provider = yield* OpenAiCompatible.make({ baseUrl: server.url, maxTokensField: "max_completion_tokens" })
        return yield* Stream.runCollect(provider.stream({ model: "llama3", messages: [Message.user("hi")], tools: [], maxTokens: 9 }))
      }).pipe(
        Effect.provide(NodeHttpClient.layerUndici),
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: {} }))
      )
      expect(chunks).toEqual([
        { _tag: "ReasoningDelta", text: "hmm" },
        { _tag: "TextDelta", text: "ok" },
        { _tag: "Finish", reason: "length" }
      ])
      expect(server.requests[0]!.headers["authorization"]).toBeUndefined()
      expect(server.requests[0]!.json.tools).toBeUndefined()
      expect(server.requests[0]!.json.max_completion_tokens).toBe(9)
    }))

  it.live("maps finish reasons", () =>
    Effect.gen(function*() {
      const reasons: Array<string> = []
      for (const reason of ["stop", "tool_calls", "length", "content_filter", "eos"]) {
        const server = yield* start([{ body: [data({ choices: [{ index: 0, delta: {}, finish_reason: reason }] }), "data: [DONE]\n\n"] }])
        const chunks = yield* collect(server.url)
        reasons.push((chunks.at(-1) as { reason: string }).reason)
      }
      expect(reasons).toEqual(["stop", "tool_calls", "length", "content_filter", "other"])
    }))

  it.live("context length by code and by message → ContextLengthExceeded", () =>
    Effect.gen(function*() {
      const byCode = yield* failWith({
        status: 400,
        headers: { "content-type": "application/json" },
        body: [openAiError("This model's maximum context length is 128000 tokens.", "invalid_request_error", "context_length_exceeded")]
      })
      expect(byCode._tag).toBe("ContextLengthExceeded")
      expect(byCode.message).toContain("maximum context length")
      const vllm = yield* failWith({
        status: 400,
        body: [JSON.stringify({ object: "error", message: "The prompt is too long for the context window", type: "BadRequestError", code: 400 })]
      })
      expect(vllm._tag).toBe("ContextLengthExceeded")
      const tooLarge = yield* failWith({
        status: 413,
        body: [openAiError("Request too large: the prompt exceeds the model's context length", "invalid_request_error", null)]
      })
      expect(tooLarge._tag).toBe("ContextLengthExceeded")
    }))

  it.live("429 → RateLimited with Retry-After seconds or retry-after-ms; insufficient_quota → ProviderRejected", () =>
    Effect.gen(function*() {
      const body = [openAiError("Rate limit reached for gpt-4o", "requests", "rate_limit_exceeded")]
      const seconds = yield* failWith({ status: 429, headers: { "retry-after": "7" }, body })
      expect(seconds).toMatchObject({ _tag: "RateLimited", retryAfterMs: 7000, message: "Rate limit reached for gpt-4o" })
      const ms = yield* failWith({ status: 429, headers: { "retry-after": "7", "retry-after-ms": "1250" }, body })
      expect(ms).toMatchObject({ _tag: "RateLimited", retryAfterMs: 1250 })
      const none = yield* failWith({ status: 429, body })
      expect(none._tag).toBe("RateLimited")
      expect((none as { retryAfterMs?: number }).retryAfterMs).toBeUndefined()
      const quota = yield* failWith({ status: 429, body: [openAiError("You exceeded your current quota", "insufficient_quota", "insufficient_quota")] })
      expect(quota).toMatchObject({ _tag: "ProviderRejected", status: 429 })
    }))

  it.effect("Retry-After as an HTTP date is measured against the Clock", () =>
    Effect.gen(function*() {
      const now = Date.parse("2025-01-06T12:00:00Z")
      yield* TestClock.setTime(now)
      const error = yield* failWith({
        status: 429,
        headers: { "retry-after": new Date(now + 30_000).toUTCString() },
        body: [openAiError("slow down", "requests", "rate_limit_exceeded")]
      })
      expect(error).toMatchObject({ _tag: "RateLimited", retryAfterMs: 30_000 })
    }))

  it.live("5xx and 529 → ProviderUnavailable; other 4xx → ProviderRejected with the server's message", () =>
    Effect.gen(function*() {
      for (const status of [500, 502, 503, 529]) {
        const error = yield* failWith({ status, body: [openAiError("The server had an error", "server_error", null)] })
        expect(error).toMatchObject({ _tag: "ProviderUnavailable", status, message: "The server had an error" })
      }
      const notFound = yield* failWith({ status: 404, body: [openAiError("The model `gpt-9` does not exist", "invalid_request_error", "model_not_found")] })
      expect(notFound).toMatchObject({ _tag: "ProviderRejected", status: 404, message: "The model `gpt-9` does not exist" })
      const ollama = yield* failWith({ status: 400, body: [JSON.stringify({ error: "invalid tool schema" })] })
      expect(ollama).toMatchObject({ _tag: "ProviderRejected", message: "invalid tool schema" })
    }))

  it.live("an error body echoing the Authorization header never leaks the key", () =>
    Effect.gen(function*() {
      const error = yield* failWith({
        status: 401,
        body: [openAiError(`Incorrect API key provided: Bearer ${KEY}. Header was 'Authorization: Bearer ${KEY}'`, "invalid_request_error", "invalid_api_key")]
      })
      expect(error._tag).toBe("ProviderRejected")
      expect(error.message).toContain("Incorrect API key provided")
      expect(error.message).toContain("<redacted>")
      expect(error.message).not.toContain(KEY)
    }))

  it.live("error messages are cut at 500 characters after scrubbing, so a key across the cut never leaks in part", () =>
    Effect.gen(function*() {
      const straddling = yield* failWith({ status: 500, body: [`${"x".repeat(490)}${KEY}${"y".repeat(1000)}`] })
      expect(straddling.message).toBe(`${"x".repeat(490)}<redacted>…`)
      expect(straddling.message).not.toContain(KEY.slice(0, 6))
      const exact = yield* failWith({ status: 500, body: ["z".repeat(500)] })
      expect(exact.message).toBe("z".repeat(500))
      const over = yield* failWith({ status: 500, body: ["z".repeat(501)] })
      expect(over.message).toBe(`${"z".repeat(500)}…`)
      const inStream = yield* failWith({ body: [data({ error: { message: `rate limited for key ${KEY}`, code: "rate_limit_exceeded" } })] })
      expect(inStream).toMatchObject({ _tag: "RateLimited", message: "rate limited for key <redacted>" })
    }))

  it.live("an error event inside a 200 stream is mapped by its words", () =>
    Effect.gen(function*() {
      const error = yield* failWith({
        body: [
          data({ choices: [{ index: 0, delta: { content: "par" } }] }),
          data({ error: { code: 502, message: "Provider disconnected" }, choices: [{ index: 0, delta: {}, finish_reason: "error" }] })
        ]
      })
      expect(error).toMatchObject({ _tag: "ProviderUnavailable", message: "Provider disconnected" })
    }))

  it.live("in-stream errors are classified by code, type and status like HTTP errors", () =>
    Effect.gen(function*() {
      const inStream = (error: unknown) => failWith({ body: [data({ choices: [{ index: 0, delta: { content: "x" } }] }), data({ error })] })
      expect(yield* inStream({ message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" }))
        .toMatchObject({ _tag: "ProviderRejected", message: "Incorrect API key provided" })
      expect(yield* inStream({ message: "No auth credentials found", code: 401 })).toMatchObject({ _tag: "ProviderRejected", status: 401 })
      expect(yield* inStream({ message: "Forbidden", type: "permission_error" })).toMatchObject({ _tag: "ProviderRejected" })
      expect(yield* inStream({ message: "Rate limit reached", type: "tokens", code: "rate_limit_exceeded" })).toMatchObject({ _tag: "RateLimited" })
      expect(yield* inStream({ message: "Too many requests", code: 429 })).toMatchObject({ _tag: "RateLimited" })
      expect(yield* inStream({ message: "This model's maximum context length is 8192 tokens", code: "context_length_exceeded" }))
        .toMatchObject({ _tag: "ContextLengthExceeded" })
      expect(yield* inStream({ message: "quota", type: "insufficient_quota", code: 429 })).toMatchObject({ _tag: "ProviderRejected" })
      expect(yield* inStream({ message: "Overloaded", type: "overloaded_error" })).toMatchObject({ _tag: "ProviderUnavailable" })
      expect(yield* inStream({ message: "Upstream error", code: 503 })).toMatchObject({ _tag: "ProviderUnavailable", status: 503 })
      expect(yield* inStream({ message: "something odd" })).toMatchObject({ _tag: "ProviderUnavailable" })
    }))

  it.live("reads cached prompt tokens and reasoning tokens into Usage", () =>
    Effect.gen(function*() {
      const usage = {
        prompt_tokens: 2006,
        completion_tokens: 300,
        total_tokens: 2306,
        prompt_tokens_details: { cached_tokens: 1920, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 192, audio_tokens: 0 }
      }
      const server = yield* start([{
        body: [data({ choices: [{ index: 0, delta: { content: "ok" }, finish_reason: "stop" }] }), data({ choices: [], usage }), "data: [DONE]\n\n"]
      }])
      expect((yield* collect(server.url)).at(-1)).toEqual({
        _tag: "Finish",
        reason: "stop",
        usage: { inputTokens: 2006, outputTokens: 300, cachedInputTokens: 1920, reasoningTokens: 192 }
      })
    }))

  it.live("sends a User-Agent naming the library, no trace headers unless asked, and registers the key with Secrets", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: [openAiText] }])
      const secrets = yield* Secrets
      yield* collect(server.url).pipe(Effect.withSpan("caller"))
      yield* collect(server.url, { propagateTrace: true }).pipe(Effect.withSpan("caller"))
      const [plain, traced] = server.requests
      expect(plain!.headers["user-agent"]).toMatch(/^effect-agent-loop\/\d+\.\d+\.\d+/)
      expect(plain!.headers["traceparent"]).toBeUndefined()
      expect(plain!.headers["b3"]).toBeUndefined()
      expect(traced!.headers["traceparent"]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/)
      expect(secrets.scrub(`key ${KEY}`)).toBe("key <redacted>")
    }).pipe(Effect.provide(SecretsLive.layer())))

  it.live("tool schemas lose $schema at every level (never a property called so); additionalProperties only when the server rejects it", () =>
    Effect.gen(function*() {
      const parameters = {
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        properties: {
          $schema: { type: "string", description: "a property that happens to be called $schema" },
          nested: { type: "object", properties: { a: { type: "string" } }, additionalProperties: false, $schema: "x" }
        },
        required: ["nested"],
        additionalProperties: false
      }
      const withTools: ProviderTypes.ProviderRequest = { ...request, tools: [{ name: "t", description: "d", parameters }] }
      const sent = (options: OpenAiCompatible.Options) =>
        Effect.gen(function*() {
          const server = yield* start([{ body: [openAiText] }])
          const provider = yield* OpenAiCompatible.make({ baseUrl: server.url, apiKey: Redacted.make(KEY), ...options })
          yield* Stream.runDrain(provider.stream(withTools))
          return server.requests[0]!.json.tools[0].function.parameters
        }).pipe(Effect.provide(NodeHttpClient.layerUndici))
      expect(yield* sent({})).toEqual({
        type: "object",
        properties: {
          $schema: { type: "string", description: "a property that happens to be called $schema" },
          nested: { type: "object", properties: { a: { type: "string" } }, additionalProperties: false }
        },
        required: ["nested"],
        additionalProperties: false
      })
      expect(yield* sent({ additionalProperties: false })).toEqual({
        type: "object",
        properties: {
          $schema: { type: "string", description: "a property that happens to be called $schema" },
          nested: { type: "object", properties: { a: { type: "string" } } }
        },
        required: ["nested"]
      })
      expect(parameters.$schema).toBe("http://json-schema.org/draft-07/schema#")
    }))

  it.live("a dropped connection mid-stream → ProviderUnavailable; an end before any finish_reason or bad JSON → MalformedResponse", () =>
    Effect.gen(function*() {
      const dropped = yield* failWith({ body: [openAiText.slice(0, 300)], drop: true })
      expect(dropped._tag).toBe("ProviderUnavailable")
      const early = yield* failWith({ body: [openAiText.slice(0, openAiText.indexOf("\"finish_reason\":\"stop\"") - 200)] })
      expect(early._tag).toBe("MalformedResponse")
      const noFinish = yield* failWith({ body: [data({ choices: [{ index: 0, delta: { content: "a" } }] })] })
      expect(noFinish).toMatchObject({ _tag: "MalformedResponse", message: expect.stringContaining("no finish_reason") })
      const badJson = yield* failWith({ body: ["data: {\"choices\": [\n\n", "data: [DONE]\n\n"] })
      expect(badJson).toMatchObject({ _tag: "MalformedResponse", message: expect.stringContaining("Invalid JSON") })
    }))

  it.live("a stream that ends after its finish_reason without data: [DONE] completes normally, usage included", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: [openAiText.slice(0, openAiText.indexOf("data: [DONE]"))] }])
      expect(yield* collect(server.url)).toEqual(openAiTextChunks)
      const toolsOnly = openAiTools.slice(0, openAiTools.indexOf("data: [DONE]"))
      const again = yield* start([{ body: [toolsOnly] }])
      expect(yield* collect(again.url)).toEqual(openAiToolsChunks)
    }))

  it.live("a consumer that stops early (or is interrupted) aborts the HTTP request", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: [data({ choices: [{ index: 0, delta: { content: "first" } }] })], hold: true }])
      const provider = yield* OpenAiCompatible.make({ baseUrl: server.url, apiKey: Redacted.make(KEY) })
      const first = yield* Stream.runCollect(Stream.take(provider.stream(request), 1))
      expect(first).toEqual([{ _tag: "TextDelta", text: "first" }])
      yield* server.disconnected
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a refused connection → ProviderUnavailable", () =>
    Effect.gen(function*() {
      const server = yield* start([{}])
      yield* server.close
      const error = yield* Effect.flip(collect(server.url))
      expect(error._tag).toBe("ProviderUnavailable")
      expect(JSON.stringify(error)).not.toContain(KEY)
    }))

  it.effect("times out on the Clock: no response head, then a stalled body → ProviderUnavailable", () =>
    Effect.gen(function*() {
      const silent = HttpClient.make(() => Effect.never)
      const fiber = yield* OpenAiCompatible.make({ timeout: "30 seconds", apiKey: Redacted.make(KEY) }).pipe(
        Effect.flatMap((provider) => Stream.runCollect(provider.stream(request))),
        Effect.provideService(HttpClient.HttpClient, silent),
        Effect.flip,
        Effect.forkChild
      )
      yield* TestClock.adjust("29 seconds")
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 second")
      const noHead: ProviderError = yield* Fiber.join(fiber)
      expect(noHead).toMatchObject({ _tag: "ProviderUnavailable", message: expect.stringContaining("No response") })

      const stalled = HttpClient.make((req) =>
        Effect.succeed(HttpClientResponse.fromWeb(
          req,
          new Response(new ReadableStream({
            start: (controller) => controller.enqueue(new TextEncoder().encode(data({ choices: [{ index: 0, delta: { content: "a" } }] })))
          }), { status: 200 })
        ))
      )
      const chunks: Array<unknown> = []
      const fiber2 = yield* OpenAiCompatible.make({ timeout: "30 seconds" }).pipe(
        Effect.flatMap((provider) => Stream.runForEach(provider.stream(request), (c) => Effect.sync(() => chunks.push(c)))),
        Effect.provideService(HttpClient.HttpClient, stalled),
        Effect.flip,
        Effect.forkChild
      )
      // The idle timer starts once the first piece has been read.
      while (chunks.length === 0) yield* Effect.yieldNow
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      yield* TestClock.adjust("30 seconds")
      const stall = yield* Fiber.join(fiber2)
      expect(chunks).toEqual([{ _tag: "TextDelta", text: "a" }])
      expect(stall).toMatchObject({ _tag: "ProviderUnavailable", message: expect.stringContaining("stalled") })
    }))
})
