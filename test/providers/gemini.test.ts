/**
 * The Gemini provider against loopback servers: the stream decoded (thoughts, text, parallel
 * calls, signatures, usage), the request body compared field by field with what Google's own
 * client (`@google/genai`) sends for the same conversation, the finish reasons, and every error
 * class, in the response and mid-stream.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Effect, Fiber, Layer, Redacted, Stream } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { Gemini, Message, type ProviderTypes } from "effect-agent-loop"
import { chunk, geminiChunks, geminiStream, referenceRequest } from "../support/geminiWire.ts"
import { bytesEvery, type WireResponse, start } from "../support/wireServer.ts"
import { chunksOf, failureOf } from "../support/providerCalls.ts"

const KEY = "AIzaSy-gemini-secret-key-value"
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

const readImage = {
  name: "read_image",
  description: "Reads an image file",
  parameters: { type: "object", properties: { path: { type: "string", description: "Relative path" } }, required: ["path"], additionalProperties: false }
}
const listDir = {
  name: "list_dir",
  description: "Lists a directory",
  parameters: {
    type: "object",
    properties: { path: { type: ["string", "null"] }, depth: { anyOf: [{ type: "integer", minimum: 1 }, { type: "null" }] } },
    additionalProperties: false
  }
}
const answer = {
  type: "object",
  properties: { animal: { type: "string", enum: ["cat", "dog"] }, files: { type: "array", items: { type: "string" } } },
  required: ["animal", "files"],
  additionalProperties: false
}

/** The reply the model gave before: a signed thought, text, two calls with the API's ids, the first signed. */
const reply = Message.assistant("Looking.", [
  { id: "fc-1", name: "read_image", arguments: "{\"path\":\"pic.png\"}" },
  { id: "fc-2", name: "list_dir", arguments: "{\"path\":\".\"}" }
], {
  reasoning: "Plan the reads.",
  providerBlocks: [{
    provider: "gemini",
    model: "gemini-3-pro-preview",
    data: {
      thoughts: [{ text: "Plan the reads.", thoughtSignature: "dGhvdWdodA==" }],
      calls: [{ id: "fc-1", given: true, thoughtSignature: "Y2FsbA==" }, { id: "fc-2", given: true }]
    }
  }]
})

/** System prompt, two tools, a tool result with an image, thinking on, a typed answer. */
const conversation: ProviderTypes.ProviderRequest = {
  model: "gemini-3-pro-preview",
  messages: [
    Message.system("You are terse."),
    Message.user([Message.text("What is in pic.png, and what else is here?"), Message.image("image/png", PNG)]),
    reply,
    Message.toolResult({ id: "fc-1", name: "read_image" }, [Message.text("pic.png:"), Message.image("image/png", PNG)]),
    Message.toolResult({ id: "fc-2", name: "list_dir" }, "pic.png\nnotes.md")
  ],
  tools: [readImage, listDir, { name: "respond", description: "The final answer", parameters: answer }],
  temperature: 0.5,
  maxTokens: 2048,
  reasoning: { effort: "high" },
  output: { name: "respond", schema: answer }
}

/** The same conversation as a Gemini user of Google's client writes it. */
const referenceContents = [
  { role: "user", parts: [{ text: "What is in pic.png, and what else is here?" }, { inlineData: { mimeType: "image/png", data: PNG } }] },
  {
    role: "model",
    parts: [
      { text: "Plan the reads.", thought: true, thoughtSignature: "dGhvdWdodA==" },
      { text: "Looking." },
      { functionCall: { id: "fc-1", name: "read_image", args: { path: "pic.png" } }, thoughtSignature: "Y2FsbA==" },
      { functionCall: { id: "fc-2", name: "list_dir", args: { path: "." } } }
    ]
  },
  {
    role: "user",
    parts: [
      { functionResponse: { id: "fc-1", name: "read_image", response: { output: "pic.png:" }, parts: [{ inlineData: { mimeType: "image/png", data: PNG } }] } },
      { functionResponse: { id: "fc-2", name: "list_dir", response: { output: "pic.png\nnotes.md" } } }
    ]
  }
]

/** The conversation without its typed answer and thinking. */
const { output: _output, reasoning: _reasoning, ...plain } = conversation

const finished = [chunk([{ text: "ok" }], { usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2 } }, { finishReason: "STOP" })]

/** The request the provider sends for `request` (and what it decodes from `body`). */
const sent = (request: ProviderTypes.ProviderRequest, body: ReadonlyArray<string> = finished, options: Gemini.Options = {}) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start([{ body }])
    const provider = yield* Gemini.make({ baseUrl: `${server.url}/v1beta`, apiKey: Redacted.make(KEY), ...options })
    const chunks = yield* Stream.runCollect(provider.stream(request))
    return { received: server.requests[0]!, chunks }
  })).pipe(Effect.provide(NodeHttpClient.layerUndici))

const failWith = (response: WireResponse) =>
  failureOf(KEY, (url) => chunksOf(Gemini.make({ baseUrl: url, apiKey: Redacted.make(KEY) }), conversation), response)

const googleError = (code: number, status: string, message: string, details?: ReadonlyArray<unknown>) =>
  JSON.stringify({ error: { code, message, status, ...(details === undefined ? {} : { details }) } })

const stopWith = (finishReason: string, extra: Record<string, unknown> = {}) => [
  chunk([{ text: "partial" }], { usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 1 } }, { finishReason, ...extra })
]

describe("Gemini", () => {
  it.live("decodes thoughts, text, two parallel calls, signatures and usage split every 5 bytes; the key goes in x-goog-api-key", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: bytesEvery(geminiStream, 5) }])
      const chunks = yield* Effect.gen(function*() {
        const provider = yield* Gemini.make({ baseUrl: `${server.url}/v1beta/`, apiKeyEnv: "GEMINI_API_KEY" })
        return yield* Stream.runCollect(provider.stream(conversation))
      }).pipe(
        Effect.provide(NodeHttpClient.layerUndici),
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { GOOGLE_API_KEY: "other", GEMINI_API_KEY: KEY } }))
      )
      expect(chunks).toEqual(geminiChunks)
      const received = server.requests[0]!
      expect(received.path).toBe("/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse")
      expect(received.headers["x-goog-api-key"]).toBe(KEY)
      expect(received.headers["authorization"]).toBeUndefined()
    }))

  it.live("GOOGLE_API_KEY is read when GEMINI_API_KEY is not set, for Google's own URL", () =>
    Effect.gen(function*() {
      const seen: Array<Readonly<Record<string, string>>> = []
      const google = HttpClient.make((req) => {
        seen.push(req.headers)
        return Effect.succeed(HttpClientResponse.fromWeb(req, new Response(finished.join(""), { headers: { "content-type": "text/event-stream" } })))
      })
      yield* Effect.gen(function*() {
        const provider = yield* Gemini.make()
        yield* Stream.runDrain(provider.stream(conversation))
      }).pipe(
        Effect.provide(Layer.succeed(HttpClient.HttpClient, google)),
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { GOOGLE_API_KEY: KEY } }))
      )
      expect(seen[0]!["x-goog-api-key"]).toBe(KEY)
    }))

  it.live("sends what Google's client sends for the same conversation: system prompt, two tools, an image result, thinking, a typed answer", () =>
    Effect.gen(function*() {
      const ours = (yield* sent(conversation)).received
      const reference = yield* referenceRequest({
        model: "gemini-3-pro-preview",
        contents: referenceContents,
        config: {
          systemInstruction: "You are terse.",
          tools: [{ functionDeclarations: [readImage, listDir].map((tool) => ({ ...tool, parameters: structuredClone(tool.parameters) })) }],
          temperature: 0.5,
          maxOutputTokens: 2048,
          thinkingConfig: { includeThoughts: true, thinkingLevel: "HIGH" },
          responseMimeType: "application/json",
          responseSchema: structuredClone(answer)
        }
      })
      expect(ours.path).toBe(reference.path)
      expect(ours.headers["x-goog-api-key"]).toBe(KEY)
      expect(reference.headers["x-goog-api-key"]).toBe("reference-key")
      expect(ours.json).toEqual(reference.json)
      // the answer tool is not offered: the reply's text is the answer
      expect(ours.json.tools[0].functionDeclarations.map((d: { name: string }) => d.name)).toEqual(["read_image", "list_dir"])
    }))

  it.live("a due answer allows no function call (mode NONE), as Google's client writes it", () =>
    Effect.gen(function*() {
      const ours = (yield* sent({ ...conversation, output: { name: "respond", schema: answer, force: true } })).received
      const reference = yield* referenceRequest({
        model: "gemini-3-pro-preview",
        contents: [{ role: "user", parts: [{ text: "x" }] }],
        config: { toolConfig: { functionCallingConfig: { mode: "NONE" } } }
      })
      expect(ours.json.toolConfig).toEqual(reference.json.toolConfig)
    }))

  it.live("Gemini 2.x: a result's images go beside its function response; the typed answer is the respond tool, forced when due; an effort is a budget", () =>
    Effect.gen(function*() {
      const older = {
        ...conversation,
        model: "gemini-2.5-flash",
        messages: conversation.messages.map((m) => m === reply ? { ...reply, providerBlocks: [{ ...reply.providerBlocks![0]!, model: "gemini-2.5-flash" }] } : m),
        output: { name: "respond", schema: answer, force: true }
      }
      const ours = (yield* sent(older)).received.json
      const reference = yield* referenceRequest({
        model: "gemini-2.5-flash",
        contents: [
          referenceContents[0],
          referenceContents[1],
          {
            role: "user",
            parts: [
              { functionResponse: { id: "fc-1", name: "read_image", response: { output: "pic.png:" } } },
              { inlineData: { mimeType: "image/png", data: PNG } },
              { functionResponse: { id: "fc-2", name: "list_dir", response: { output: "pic.png\nnotes.md" } } }
            ]
          }
        ],
        config: {
          systemInstruction: "You are terse.",
          tools: [{ functionDeclarations: [readImage, listDir, { name: "respond", description: "The final answer", parameters: answer }].map((t) => structuredClone(t)) }],
          toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["respond"] } },
          temperature: 0.5,
          maxOutputTokens: 2048,
          thinkingConfig: { includeThoughts: true, thinkingBudget: 16384 }
        }
      })
      expect(ours).toEqual(reference.json)
    }))

  it.live("signatures and ids go back only to the model that made them; Gemini 3 gets the documented skip signature on foreign calls", () =>
    Effect.gen(function*() {
      const foreign = { ...plain, model: "gemini-3-flash-preview" }
      const body = (yield* sent(foreign)).received.json
      expect(body.contents[1]).toEqual({
        role: "model",
        parts: [
          { text: "Looking." },
          { functionCall: { name: "read_image", args: { path: "pic.png" } }, thoughtSignature: "skip_thought_signature_validator" },
          { functionCall: { name: "list_dir", args: { path: "." } } }
        ]
      })
      expect(body.contents[2].parts.map((p: any) => p.functionResponse.id)).toEqual([undefined, undefined])
      expect(body.generationConfig).toEqual({ temperature: 0.5, maxOutputTokens: 2048 })
      const older = (yield* sent({ ...foreign, model: "gemini-2.5-pro" })).received.json
      expect(older.contents[1].parts[1]).toEqual({ functionCall: { name: "read_image", args: { path: "pic.png" } } })
    }))

  it.live("without tools (a summary request), calls and results are sent as text", () =>
    Effect.gen(function*() {
      const body = (yield* sent({ ...plain, tools: [] })).received.json
      expect(body.tools).toBeUndefined()
      expect(body.contents[1].parts.at(-1)).toEqual({ text: "[called tool list_dir with {\"path\":\".\"}]" })
      expect(body.contents[2].parts[0]).toEqual({ text: "[result of tool read_image]\npic.png:" })
    }))

  it.live("maps finish reasons: MAX_TOKENS, SAFETY, RECITATION, a blocked prompt; a malformed function call fails clearly", () =>
    Effect.gen(function*() {
      const last = (body: ReadonlyArray<string>) => Effect.map(sent(conversation, body), ({ chunks }) => chunks.at(-1))
      expect(yield* last(stopWith("MAX_TOKENS"))).toMatchObject({ _tag: "Finish", reason: "length", usage: { inputTokens: 5, outputTokens: 1 } })
      expect(yield* last(stopWith("SAFETY"))).toMatchObject({ _tag: "Finish", reason: "content_filter" })
      expect(yield* last(stopWith("RECITATION"))).toMatchObject({ _tag: "Finish", reason: "content_filter" })
      expect(yield* last(stopWith("LANGUAGE"))).toMatchObject({ _tag: "Finish", reason: "other" })
      const blocked = [`data: ${JSON.stringify({ promptFeedback: { blockReason: "PROHIBITED_CONTENT" }, usageMetadata: { promptTokenCount: 9 } })}\n\n`]
      expect(yield* last(blocked)).toEqual({ _tag: "Finish", reason: "content_filter", usage: { inputTokens: 9, outputTokens: 0 } })
      const malformed = yield* failWith({ body: stopWith("MALFORMED_FUNCTION_CALL", { finishMessage: "Malformed function call: read_image(path=)" }) })
      expect(malformed).toMatchObject({ _tag: "MalformedResponse", message: expect.stringContaining("MALFORMED_FUNCTION_CALL") })
      expect(malformed.message).toContain("read_image(path=)")
    }))

  it.live("error statuses with Google error bodies map to the error classes; RetryInfo and Retry-After give the wait", () =>
    Effect.gen(function*() {
      const overflow = yield* failWith({
        status: 400,
        body: [googleError(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).")]
      })
      expect(overflow._tag).toBe("ContextLengthExceeded")
      const quota = yield* failWith({
        status: 429,
        body: [googleError(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.", [
          { "@type": "type.googleapis.com/google.rpc.QuotaFailure", violations: [] },
          { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "37.5s" }
        ])]
      })
      expect(quota).toMatchObject({ _tag: "RateLimited", retryAfterMs: 37_500 })
      const header = yield* failWith({ status: 429, headers: { "retry-after": "3" }, body: [googleError(429, "RESOURCE_EXHAUSTED", "slow down")] })
      expect(header).toMatchObject({ _tag: "RateLimited", retryAfterMs: 3_000 })
      const badKey = yield* failWith({ status: 400, body: [googleError(400, "INVALID_ARGUMENT", `API key not valid: ${KEY}`)] })
      expect(badKey).toMatchObject({ _tag: "ProviderRejected", status: 400, message: "API key not valid: <redacted>" })
      const denied = yield* failWith({ status: 403, body: [googleError(403, "PERMISSION_DENIED", "Permission denied")] })
      expect(denied).toMatchObject({ _tag: "ProviderRejected", status: 403 })
      const missing = yield* failWith({ status: 404, body: [googleError(404, "NOT_FOUND", "models/gemini-9 is not found")] })
      expect(missing).toMatchObject({ _tag: "ProviderRejected", status: 404, message: "models/gemini-9 is not found" })
      const overloaded = yield* failWith({ status: 503, body: [googleError(503, "UNAVAILABLE", "The model is overloaded.")] })
      expect(overloaded).toMatchObject({ _tag: "ProviderUnavailable", status: 503, message: "The model is overloaded." })
      const internal = yield* failWith({ status: 500, body: [googleError(500, "INTERNAL", "An internal error has occurred.")] })
      expect(internal).toMatchObject({ _tag: "ProviderUnavailable", status: 500 })
    }))

  it.live("an error mid-stream is classified like an HTTP one, and the text before it was streamed", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: [chunk([{ text: "Half an answer" }]), `data: ${googleError(503, "UNAVAILABLE", "The model is overloaded.")}\n\n`] }])
      const provider = yield* Gemini.make({ baseUrl: server.url, apiKey: Redacted.make(KEY) })
      const seen: Array<unknown> = []
      const error = yield* Effect.flip(Stream.runForEach(provider.stream(conversation), (c) => Effect.sync(() => seen.push(c))))
      expect(seen).toEqual([{ _tag: "TextDelta", text: "Half an answer" }])
      expect(error).toMatchObject({ _tag: "ProviderUnavailable", status: 503, message: "The model is overloaded." })
      const limited = yield* failWith({ body: [`data: ${googleError(429, "RESOURCE_EXHAUSTED", "quota", [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "2s" }])}\n\n`] })
      expect(limited).toMatchObject({ _tag: "RateLimited", retryAfterMs: 2_000 })
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("an interrupted stream: a body that ends before a finish reason is malformed, a dropped connection is retryable", () =>
    Effect.gen(function*() {
      const cut = yield* failWith({ body: [chunk([{ text: "Half" }])] })
      expect(cut).toMatchObject({ _tag: "MalformedResponse", message: "The stream ended before a finish reason" })
      const dropped = yield* failWith({ body: [chunk([{ text: "Half" }])], drop: true })
      expect(dropped._tag).toBe("ProviderUnavailable")
      const garbage = yield* failWith({ body: ["data: {not json\n\n"] })
      expect(garbage._tag).toBe("MalformedResponse")
    }))

  it.live("interrupting the consumer mid-stream closes the connection", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: [chunk([{ text: "Thinking aloud" }])], hold: true }])
      const provider = yield* Gemini.make({ baseUrl: server.url, apiKey: Redacted.make(KEY) })
      const first = yield* Deferred.make<void>()
      const fiber = yield* Stream.runForEach(provider.stream(conversation), () => Deferred.succeed(first, undefined)).pipe(Effect.forkChild)
      yield* Deferred.await(first)
      yield* Fiber.interrupt(fiber)
      yield* server.disconnected.pipe(Effect.timeout("10 seconds"))
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("more stop sequences than the API takes fail before anything is sent", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: finished }])
      const provider = yield* Gemini.make({ baseUrl: server.url, apiKey: Redacted.make(KEY) })
      const error = yield* Effect.flip(Stream.runDrain(provider.stream({ ...conversation, stop: ["a", "b", "c", "d", "e", "f"] })))
      expect(error).toMatchObject({ _tag: "ProviderRejected", message: expect.stringContaining("at most 5 stop sequences") })
      expect(server.requests).toHaveLength(0)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
})
