/**
 * Azure OpenAI: the URLs, query and headers the official `AzureOpenAI` client (the `openai`
 * package) sends, for both URL forms and both wires, compared with ours on a loopback server; the
 * body of a full conversation as the official Chat Completions client sends it; and Azure's error
 * bodies mapped to the library's errors.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Redacted, Stream } from "effect"
import { AzureOpenAI, default as OpenAI } from "openai"
import { Azure, Message, type ProviderTypes } from "effect-agent-loop"
import { resourceRoot, urlFor } from "../../src/layers/providers/Azure.ts"
import { piToolCalls, piToolResult, piUser, referenceBody } from "../support/sdkReference.ts"
import { openAiText, openAiTextChunks, openAiTools, openAiToolsChunks, responsesStream } from "../support/wireFixtures.ts"
import { data, start, type WireResponse } from "../support/wireServer.ts"
import { chunksOf, failureOf } from "../support/providerCalls.ts"

const KEY = "azure-key-0123456789abcdef"
const PNG = Buffer.from("\x89PNG\r\n\x1a\n not really a png").toString("base64")
const shot = { id: "call_1", name: "screenshot" }
const tools = [
  { name: "screenshot", description: "Takes a screenshot", parameters: { type: "object", properties: {} } },
  { name: "read_file", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } }
]

/** A system prompt, two tools, a tool result with an image, reasoning on. */
const conversation: ProviderTypes.ProviderRequest = {
  model: "gpt-4o",
  messages: [
    Message.system("Be brief."),
    Message.user("What is on the screen?"),
    Message.assistant("", [{ ...shot, arguments: "{}" }]),
    Message.toolResult(shot, [Message.text("the screen:"), Message.image("image/png", PNG)])
  ],
  tools,
  reasoning: { effort: "low" }
}

const answerSchema = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"], additionalProperties: false }

/** What our provider sends for `request`: path with query, headers, body. */
const sentBy = (options: Azure.Options, request: ProviderTypes.ProviderRequest, reply: string = openAiText) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start([{ body: [reply] }])
    const provider = yield* Azure.make({ baseUrl: server.url, apiKey: Redacted.make(KEY), ...options })
    yield* Stream.runDrain(provider.stream(request))
    return server.requests[0]!
  })).pipe(Effect.provide(NodeHttpClient.layerUndici))

/** What the official client sends when `send` calls it with a client pointed at a loopback server. */
const sentByOfficial = (reply: string, send: (endpoint: string) => Promise<unknown>) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start([{ body: [reply] }])
    yield* Effect.promise(() => send(server.url))
    return server.requests[0]!
  }))

/** Reads a streamed reply of the official client to its end. */
const drain = async (stream: unknown) => {
  for await (const _ of stream as AsyncIterable<unknown>) { /* read to the end */ }
}

describe("Azure OpenAI URLs and headers, as the official client sends them", () => {
  it.live("deployment URLs: /openai/deployments/DEPLOYMENT/chat/completions?api-version, the api-key header, the same body", () =>
    Effect.gen(function*() {
      const request = { ...conversation, output: { name: "respond", schema: answerSchema } }
      const ours = yield* sentBy({ apiVersion: "2024-10-21", deployment: "prod-4o" }, request)
      const official = yield* sentByOfficial(openAiText, (endpoint) =>
        new AzureOpenAI({ endpoint, apiKey: KEY, apiVersion: "2024-10-21", deployment: "prod-4o" }).chat.completions.create({
          ...ours.json,
          stream: true
        }).then(drain))
      expect(ours.path).toBe("/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21")
      expect(ours.path).toBe(official.path)
      expect(ours.headers["api-key"]).toBe(official.headers["api-key"])
      expect(ours.headers["authorization"]).toBeUndefined()
      expect(ours.json).toEqual(official.json)
      // the deployment is the model the body names
      expect(ours.json.model).toBe("prod-4o")
      expect(ours.json.response_format).toMatchObject({ type: "json_schema", json_schema: { name: "respond", strict: true } })
      expect(ours.json.reasoning_effort).toBe("low")
    }))

  it.live("the messages and tools are those the official Chat Completions client sends for the conversation", () =>
    Effect.gen(function*() {
      const ours = yield* sentBy({}, conversation)
      const reference = yield* referenceBody("openai-completions", "gpt-4o", {
        systemPrompt: "Be brief.",
        messages: [
          piUser("What is on the screen?"),
          piToolCalls("openai-completions", "gpt-4o", [shot]),
          piToolResult(shot, [{ text: "the screen:" }, { data: PNG, mimeType: "image/png" }])
        ],
        tools
      })
      expect(ours.json.messages).toEqual(reference.messages)
      // the official client also sends strict: false on each function; the API's default is the same
      expect(reference.tools.every((tool: any) => tool.function.strict === false)).toBe(true)
      expect(ours.json.tools).toEqual(reference.tools.map(({ function: { strict: _, ...fn }, ...tool }: any) => ({ ...tool, function: fn })))
    }))

  it.live("without an api-version: the v1 API (/openai/v1/...), as the OpenAI client pointed at it sends it; the model names the deployment", () =>
    Effect.gen(function*() {
      const ours = yield* sentBy({}, conversation)
      const official = yield* sentByOfficial(openAiText, (endpoint) =>
        new OpenAI({ baseURL: `${endpoint}/openai/v1/`, apiKey: KEY }).chat.completions.create({ ...ours.json, stream: true }).then(drain))
      expect(ours.path).toBe("/openai/v1/chat/completions")
      expect(ours.path).toBe(official.path)
      expect(ours.json).toEqual(official.json)
      expect(ours.json.model).toBe("gpt-4o")
      expect(ours.headers["api-key"]).toBe(KEY)
    }))

  it.live("an endpoint given with /openai or /openai/v1 is the same resource", () =>
    Effect.gen(function*() {
      expect(resourceRoot("https://r.openai.azure.com/openai/v1/")).toBe("https://r.openai.azure.com")
      expect(resourceRoot("https://r.openai.azure.com/openai")).toBe("https://r.openai.azure.com")
      expect(urlFor("https://r.openai.azure.com", "chat-completions", "my deploy", "2025-04-01-preview")).toBe(
        "https://r.openai.azure.com/openai/deployments/my%20deploy/chat/completions?api-version=2025-04-01-preview"
      )
    }))

  it.live("Responses: /openai/responses?api-version with a version, /openai/v1/responses without; the deployment is the body's model", () =>
    Effect.gen(function*() {
      const ours = yield* sentBy({ api: "responses", apiVersion: "2025-04-01-preview", deployment: "prod-5" }, { ...conversation, model: "gpt-5" }, responsesStream)
      const official = yield* sentByOfficial(responsesStream, (endpoint) =>
        new AzureOpenAI({ endpoint, apiKey: KEY, apiVersion: "2025-04-01-preview" }).responses.create({ ...ours.json, stream: true }).then(drain))
      expect(ours.path).toBe("/openai/responses?api-version=2025-04-01-preview")
      expect(ours.path).toBe(official.path)
      expect(ours.headers["api-key"]).toBe(official.headers["api-key"])
      expect(ours.json).toEqual(official.json)
      expect(ours.json.model).toBe("prod-5")
      const v1 = yield* sentBy({ api: "responses" }, { ...conversation, model: "gpt-5" }, responsesStream)
      expect(v1.path).toBe("/openai/v1/responses")
    }))

  it.live("an Entra ID token goes as a bearer token, as the official client sends a token provider's, and no key is read", () =>
    Effect.gen(function*() {
      const token = "eyJ0eXAiOiJKV1Qi.entra.token"
      const server = yield* start([{ body: [openAiText] }])
      const provider = yield* Azure.make({ baseUrl: server.url, bearerToken: Redacted.make(token), apiVersion: "2024-10-21" }).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { AZURE_OPENAI_API_KEY: KEY } }))
      )
      yield* Stream.runDrain(provider.stream(conversation))
      const official = yield* sentByOfficial(openAiText, (endpoint) =>
        new AzureOpenAI({ endpoint, azureADTokenProvider: async () => token, apiVersion: "2024-10-21" }).chat.completions.create({
          ...server.requests[0]!.json,
          stream: true as const
        }).then(drain))
      expect(server.requests[0]!.headers["authorization"]).toBe(`Bearer ${token}`)
      expect(server.requests[0]!.headers["authorization"]).toBe(official.headers["authorization"])
      expect(server.requests[0]!.headers["api-key"]).toBeUndefined()
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("the endpoint and key come from AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY; without an endpoint, a clear error", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: [openAiText] }])
      const provider = yield* Azure.make().pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { AZURE_OPENAI_API_KEY: KEY, AZURE_OPENAI_ENDPOINT: server.url } }))
      )
      expect(yield* Stream.runCollect(provider.stream(conversation))).toEqual(openAiTextChunks)
      expect(server.requests[0]!.headers["api-key"]).toBe(KEY)
      const nowhere = yield* Azure.make().pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: {} })))
      const error = yield* Effect.flip(Stream.runDrain(nowhere.stream(conversation)))
      expect(error).toMatchObject({ _tag: "ProviderRejected", message: expect.stringContaining("AZURE_OPENAI_ENDPOINT") })
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))
})

/** Azure's error bodies: `code` is often a string of the status, or a name of Azure's own. */
const azureError = (code: string, message: string) => JSON.stringify({ error: { code, message } })

const failWith = (response: WireResponse) =>
  failureOf(KEY, (url) => chunksOf(Azure.make({ baseUrl: url, apiKey: Redacted.make(KEY), apiVersion: "2024-10-21" }), conversation), response)

describe("Azure OpenAI errors", () => {
  it.live("429 with Retry-After is a rate limit to wait on; 401 and a missing deployment are refused; 503 is unavailable", () =>
    Effect.gen(function*() {
      const limited = yield* failWith({
        status: 429,
        headers: { "retry-after": "6", "content-type": "application/json" },
        body: [azureError("429", "Requests to the ChatCompletions_Create Operation have exceeded call rate limit. Please retry after 6 seconds.")]
      })
      expect(limited).toMatchObject({ _tag: "RateLimited", retryAfterMs: 6000 })
      const denied = yield* failWith({ status: 401, body: [azureError("401", `Access denied due to invalid subscription key ${KEY} or wrong API endpoint.`)] })
      expect(denied).toMatchObject({ _tag: "ProviderRejected", status: 401 })
      expect(denied.message).toContain("<redacted>")
      const missing = yield* failWith({ status: 404, body: [azureError("DeploymentNotFound", "The API deployment for this resource does not exist.")] })
      expect(missing).toMatchObject({ _tag: "ProviderRejected", status: 404, message: expect.stringContaining("deployment") })
      const down = yield* failWith({ status: 503, body: [azureError("ServiceUnavailable", "The service is temporarily unable to process your request.")] })
      expect(down).toMatchObject({ _tag: "ProviderUnavailable", status: 503 })
    }))

  it.live("a prompt over the window is an overflow; an error inside the stream and a cut stream are classified too", () =>
    Effect.gen(function*() {
      const overflow = yield* failWith({
        status: 400,
        body: [JSON.stringify({ error: { message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", type: "invalid_request_error", param: "messages", code: "context_length_exceeded" } })]
      })
      expect(overflow._tag).toBe("ContextLengthExceeded")
      const midStream = yield* failWith({ body: [openAiTools.split("data: ").slice(0, 4).join("data: "), data({ error: { code: "server_error", message: "The server had an error processing your request." } })] })
      expect(midStream).toMatchObject({ _tag: "ProviderUnavailable", message: expect.stringContaining("server had an error") })
      const cut = yield* failWith({ body: [openAiTools.slice(0, 200)], drop: true })
      expect(cut._tag).toBe("ProviderUnavailable")
    }))

  it.live("parallel tool calls stream their arguments through the deployment URL", () =>
    Effect.gen(function*() {
      const server = yield* start([{ body: [openAiTools] }])
      const provider = yield* Azure.make({ baseUrl: server.url, apiKey: Redacted.make(KEY), apiVersion: "2024-10-21" })
      expect(yield* Stream.runCollect(provider.stream(conversation))).toEqual(openAiToolsChunks)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))
})
