/**
 * The Vertex AI provider against a loopback server that is both Google's token endpoint and
 * Vertex: Application Default Credentials through `google-auth-library` (a credentials file whose
 * token endpoint is the loopback), Gemini on Vertex compared with what Google's own client sends in
 * Vertex mode, Claude on Vertex through `streamRawPredict`, and the failures of the setup.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { AnthropicVertex } from "@anthropic-ai/vertex-sdk"
import { GoogleGenAI } from "@google/genai"
import { GoogleAuth } from "google-auth-library"
import { ConfigProvider, Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import { Message, type ProviderTypes, RateLimited, Vertex } from "effect-agent-loop"
import { baseUrlFor } from "../../src/layers/providers/Vertex.ts"
import { chunk } from "../support/geminiWire.ts"
import {
  ACCESS_TOKEN,
  credentialsFile,
  isTokenRequest,
  SERVICE_ACCOUNT_PROJECT,
  serviceAccountFile,
  tokenResponse
} from "../support/googleAdc.ts"
import { anthropicChunks, anthropicStream, readFile } from "../support/wireFixtures.ts"
import { type ReceivedRequest, start, type WireResponse } from "../support/wireServer.ts"

const geminiDone = [chunk([{ text: "Hallo" }], { usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 1 } }, { finishReason: "STOP" })]


const request = (model: string): ProviderTypes.ProviderRequest => ({
  model,
  messages: [
    Message.system("Be brief."),
    Message.user("read x"),
    Message.assistant("", [{ id: "toolu_1", name: "read_file", arguments: "{\"path\":\"x\"}" }]),
    Message.toolResult({ id: "toolu_1", name: "read_file" }, "X")
  ],
  tools: [readFile],
  maxTokens: 1000
})

/** A loopback Vertex with its token endpoint; model calls answer with `reply`. */
const vertexServer = (reply: (request: ReceivedRequest) => WireResponse) =>
  start((received) => isTokenRequest(received) ? tokenResponse : reply(received))

/** Credentials of the host's own (the `auth` option) that name `project`, counting how often they are asked for it. */
const credentialsOf = (project: string | undefined) => {
  let asked = 0
  return {
    getRequestHeaders: () => Promise.resolve({ authorization: "Bearer host-token-0123456789" }),
    getProjectId: () => {
      asked++
      return Promise.resolve(project)
    },
    asked: () => asked
  }
}

const modelCalls = (requests: ReadonlyArray<ReceivedRequest>) => requests.filter((r) => !isTokenRequest(r))

describe("Vertex", () => {
  it.live("Gemini on Vertex: the token from Application Default Credentials, the publisher path, and the body Google's client sends in Vertex mode", () =>
    Effect.gen(function*() {
      const server = yield* vertexServer(() => ({ body: geminiDone }))
      const file = yield* credentialsFile(server.url)
      const provider = yield* Vertex.make({ baseUrl: server.url, project: "my-project", location: "us-central1", keyFile: file })
      const chunks = yield* Stream.runCollect(provider.stream(request("gemini-2.5-pro")))
      expect(chunks.at(-1)).toEqual({ _tag: "Finish", reason: "stop", usage: { inputTokens: 7, outputTokens: 1 }, responseId: "resp-1", responseModel: "gemini-3-pro-preview" })
      yield* Stream.runDrain(provider.stream(request("gemini-2.5-pro")))
      const calls = modelCalls(server.requests)
      expect(calls).toHaveLength(2)
      // the library keeps the token until it expires: one exchange for two calls
      expect(server.requests.filter(isTokenRequest)).toHaveLength(1)
      expect(calls[0]!.path).toBe("/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
      expect(calls[0]!.headers["authorization"]).toBe(`Bearer ${ACCESS_TOKEN}`)
      expect(calls[0]!.headers["x-goog-api-key"]).toBeUndefined()

      const reference = yield* vertexServer(() => ({ body: geminiDone }))
      const ai = new GoogleGenAI({
        vertexai: true,
        project: "my-project",
        location: "us-central1",
        googleAuthOptions: { keyFilename: yield* credentialsFile(reference.url) },
        httpOptions: { baseUrl: reference.url, apiVersion: "v1" }
      })
      yield* Effect.promise(async () => {
        const stream = await ai.models.generateContentStream({
          model: "gemini-2.5-pro",
          contents: [
            { role: "user", parts: [{ text: "read x" }] },
            { role: "model", parts: [{ functionCall: { name: "read_file", args: { path: "x" } } }] },
            { role: "user", parts: [{ functionResponse: { name: "read_file", response: { output: "X" } } }] }
          ],
          config: { systemInstruction: "Be brief.", tools: [{ functionDeclarations: [structuredClone(readFile) as never] }], maxOutputTokens: 1000 }
        })
        for await (const _ of stream) { /* drained */ }
      })
      const theirs = modelCalls(reference.requests)[0]!
      expect(calls[0]!.path).toBe(theirs.path)
      expect(theirs.headers["authorization"]).toBe(`Bearer ${ACCESS_TOKEN}`)
      expect(calls[0]!.json).toEqual(theirs.json)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("Claude on Vertex: streamRawPredict with anthropic_version and no model in the body; the Messages stream decodes", () =>
    Effect.gen(function*() {
      const server = yield* vertexServer(() => ({ body: [anthropicStream] }))
      const file = yield* credentialsFile(server.url)
      const provider = yield* Vertex.make({ baseUrl: server.url, keyFile: file, promptCaching: false })
      const chunks = yield* Stream.runCollect(provider.stream(request("claude-sonnet-4-5@20250929")))
      expect(chunks).toEqual(anthropicChunks)
      const call = modelCalls(server.requests)[0]!
      expect(call.path).toBe("/v1/projects/env-project/locations/europe-west1/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict")
      expect(call.headers["authorization"]).toBe(`Bearer ${ACCESS_TOKEN}`)
      expect(call.headers["anthropic-version"]).toBeUndefined()
      expect(call.json).toEqual({
        anthropic_version: "vertex-2023-10-16",
        max_tokens: 1000,
        stream: true,
        system: "Be brief.",
        messages: [
          { role: "user", content: "read x" },
          { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "read_file", input: { path: "x" } }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "X" }] }
        ],
        tools: [{ name: "read_file", description: "Reads a file", input_schema: readFile.parameters }]
      })
    }).pipe(
      Effect.provide(NodeHttpClient.layerUndici),
      Effect.provideService(
        ConfigProvider.ConfigProvider,
        ConfigProvider.fromEnv({ env: { GOOGLE_CLOUD_PROJECT: "env-project", GOOGLE_CLOUD_LOCATION: "europe-west1" } })
      )
    ))

  it.live("errors map as for the vendor's API, and the access token never appears in them", () =>
    Effect.gen(function*() {
      const server = yield* vertexServer((received) =>
        received.path.includes("anthropic")
          ? { status: 429, headers: { "retry-after": "4" }, body: [JSON.stringify({ type: "error", error: { type: "rate_limit_error", message: "slow" } })] }
          : received.path.includes("gemini-2.5-pro")
          ? {
            status: 429,
            body: [JSON.stringify([{
              error: {
                code: 429,
                status: "RESOURCE_EXHAUSTED",
                message: "Resource exhausted. Please try again later.",
                details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "12s" }]
              }
            }])]
          }
          : { status: 401, body: [JSON.stringify({ error: { code: 401, status: "UNAUTHENTICATED", message: `Bad token Bearer ${ACCESS_TOKEN}` } })] }
      )
      const provider = yield* Vertex.make({ baseUrl: server.url, project: "p", keyFile: yield* credentialsFile(server.url) })
      const denied = yield* Effect.flip(Stream.runDrain(provider.stream(request("gemini-2.5-flash"))))
      expect(denied).toMatchObject({ _tag: "ProviderRejected", status: 401, message: "Bad token Bearer <redacted>" })
      const limited = yield* Effect.flip(Stream.runDrain(provider.stream(request("claude-haiku-4-5"))))
      expect(limited).toMatchObject({ _tag: "RateLimited", retryAfterMs: 4_000 })
      // Vertex's streaming endpoints put the error in an array
      const exhausted = yield* Effect.flip(Stream.runDrain(provider.stream(request("gemini-2.5-pro"))))
      expect(exhausted).toEqual(new RateLimited({ message: "Resource exhausted. Please try again later.", retryAfterMs: 12_000 }))
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("no project, missing credentials or a refused token exchange fail the call clearly, before any model call", () =>
    Effect.gen(function*() {
      const refusing = yield* start((received) =>
        isTokenRequest(received)
          ? { status: 400, headers: { "content-type": "application/json" }, body: [JSON.stringify({ error: "invalid_grant", error_description: "The subject token is expired" })] }
          : { body: geminiDone }
      )
      const noProject = yield* Vertex.make({ baseUrl: refusing.url, auth: credentialsOf(undefined) }).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: {} }))
      )
      const error1 = yield* Effect.flip(Stream.runDrain(noProject.stream(request("gemini-2.5-flash"))))
      expect(error1).toMatchObject({ _tag: "ProviderRejected", message: expect.stringContaining("Vertex AI needs a project: set GOOGLE_CLOUD_PROJECT") })
      const noFile = yield* Vertex.make({ baseUrl: refusing.url, project: "p", keyFile: "/nonexistent/adc.json" })
      const error2 = yield* Effect.flip(Stream.runDrain(noFile.stream(request("gemini-2.5-flash"))))
      expect(error2).toMatchObject({ _tag: "ProviderRejected", message: expect.stringContaining("Vertex AI credentials") })
      const refused = yield* Vertex.make({ baseUrl: refusing.url, project: "p", keyFile: yield* credentialsFile(refusing.url) })
      const error3 = yield* Effect.flip(Stream.runDrain(refused.stream(request("gemini-2.5-flash"))))
      expect(error3).toMatchObject({ _tag: "ProviderRejected", status: 400, message: expect.stringContaining("Vertex AI credentials") })
      expect(modelCalls(refusing.requests)).toHaveLength(0)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("without a project, the one the credentials name is used, asked once", () =>
    Effect.gen(function*() {
      const server = yield* vertexServer(() => ({ body: geminiDone }))
      const auth = credentialsOf("from-credentials")
      const provider = yield* Vertex.make({ baseUrl: server.url, location: "us", auth }).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: {} }))
      )
      yield* Stream.runDrain(provider.stream(request("gemini-2.5-flash")))
      yield* Stream.runDrain(provider.stream(request("claude-haiku-4-5")).pipe(Stream.catch(() => Stream.empty)))
      expect(modelCalls(server.requests).map((r) => r.path)).toEqual([
        "/v1/projects/from-credentials/locations/us/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        "/v1/projects/from-credentials/locations/us/publishers/anthropic/models/claude-haiku-4-5:streamRawPredict"
      ])
      expect(modelCalls(server.requests)[0]!.headers["authorization"]).toBe("Bearer host-token-0123456789")
      expect(auth.asked()).toBe(1)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a service account file: a token signed with its key, and its project when none is given", () =>
    Effect.gen(function*() {
      const server = yield* vertexServer(() => ({ body: geminiDone }))
      const account = yield* serviceAccountFile
      const provider = yield* Vertex.make({ baseUrl: server.url, location: "europe-west4", keyFile: account.file }).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: {} }))
      )
      yield* Stream.runDrain(provider.stream(request("gemini-2.5-pro")))
      const call = modelCalls(server.requests)[0]!
      expect(call.path).toBe(`/v1/projects/${SERVICE_ACCOUNT_PROJECT}/locations/europe-west4/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse`)
      expect(account.signedByIt(call.headers["authorization"])).toBe(true)
      expect(account.signedByIt("Bearer e30.e30.c2ln")).toBe(false)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("getting credentials and the credentials' project have a deadline: the provider's timeout, on the Clock", () =>
    Effect.gen(function*() {
      const hanging = { getRequestHeaders: () => new Promise<Record<string, string>>(() => {}) }
      const provider = yield* Vertex.make({ project: "p", auth: hanging, timeout: "30 seconds" })
      const fiber = yield* Stream.runDrain(provider.stream(request("gemini-2.5-flash"))).pipe(Effect.flip, Effect.forkChild)
      yield* TestClock.adjust("29 seconds")
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "ProviderUnavailable", message: "No credentials within 30s" })
      const noAnswer = { ...hanging, getProjectId: () => new Promise<string>(() => {}) }
      const unnamed = yield* Vertex.make({ auth: noAnswer, timeout: "30 seconds" }).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: {} }))
      )
      const lookup = yield* Stream.runDrain(unnamed.stream(request("gemini-2.5-flash"))).pipe(Effect.flip, Effect.forkChild)
      yield* TestClock.adjust("30 seconds")
      expect(yield* Fiber.join(lookup)).toMatchObject({ _tag: "ProviderUnavailable", message: "No project from the credentials within 30s" })
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a token endpoint that stays down is ProviderUnavailable, which the loop retries", () =>
    Effect.gen(function*() {
      const down = yield* start((received) => isTokenRequest(received) ? { status: 503, body: ["upstream down"] } : { body: geminiDone })
      const provider = yield* Vertex.make({ baseUrl: down.url, project: "p", keyFile: yield* credentialsFile(down.url) })
      const error = yield* Effect.flip(Stream.runDrain(provider.stream(request("gemini-2.5-flash"))))
      expect(error).toMatchObject({ _tag: "ProviderUnavailable", message: expect.stringContaining("Vertex AI credentials") })
      expect(modelCalls(down.requests)).toHaveLength(0)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
})

describe("Claude on Vertex against Anthropic's Vertex client", () => {
  const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
  const readImage = { name: "read_image", description: "Reads an image", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } }
  const listDir = { name: "list_dir", description: "Lists a directory", parameters: { type: "object", properties: { path: { type: "string" } } } }
  const answer = { type: "object", properties: { animal: { type: "string" } }, required: ["animal"], additionalProperties: false }
  const model = "claude-sonnet-4-5@20250929"

  /** System prompt, two tools, a tool result with an image, thinking on, a typed answer (offered, not forced with thinking). */
  const conversation: ProviderTypes.ProviderRequest = {
    model,
    messages: [
      Message.system("Be brief."),
      Message.user("What is in pic.png, and what else is here?"),
      Message.assistant("Looking.", [
        { id: "toolu_1", name: "read_image", arguments: "{\"path\":\"pic.png\"}" },
        { id: "toolu_2", name: "list_dir", arguments: "{}" }
      ], { providerBlocks: [{ provider: "anthropic", model, data: { type: "thinking", thinking: "Read it first.", signature: "sig-1" } }] }),
      Message.toolResult({ id: "toolu_1", name: "read_image" }, [Message.text("pic.png:"), Message.image("image/png", PNG)]),
      Message.toolResult({ id: "toolu_2", name: "list_dir" }, "pic.png")
    ],
    tools: [readImage, listDir, { name: "respond", description: "The final answer", parameters: answer }],
    maxTokens: 8000,
    reasoning: { budgetTokens: 2000 },
    output: { name: "respond", schema: answer, force: true }
  }

  it.live("streamRawPredict: the path, the token, and the body field by field", () =>
    Effect.gen(function*() {
      const ours = yield* vertexServer(() => ({ body: [anthropicStream] }))
      const provider = yield* Vertex.make({ baseUrl: ours.url, project: "my-project", location: "us-east5", keyFile: yield* credentialsFile(ours.url), promptCaching: false })
      yield* Stream.runDrain(provider.stream(conversation))

      const theirs = yield* vertexServer(() => ({ body: [anthropicStream] }))
      const client = new AnthropicVertex({
        region: "us-east5",
        projectId: "my-project",
        baseURL: `${theirs.url}/v1`,
        googleAuth: new GoogleAuth({ scopes: "https://www.googleapis.com/auth/cloud-platform", keyFilename: yield* credentialsFile(theirs.url) })
      })
      yield* Effect.promise(async () => {
        const stream = await client.messages.create({
          model,
          max_tokens: 8000,
          stream: true,
          system: "Be brief.",
          thinking: { type: "enabled", budget_tokens: 2000 },
          messages: [
            { role: "user", content: "What is in pic.png, and what else is here?" },
            {
              role: "assistant",
              content: [
                { type: "thinking", thinking: "Read it first.", signature: "sig-1" },
                { type: "text", text: "Looking." },
                { type: "tool_use", id: "toolu_1", name: "read_image", input: { path: "pic.png" } },
                { type: "tool_use", id: "toolu_2", name: "list_dir", input: {} }
              ]
            },
            {
              role: "user",
              content: [
                {
                  type: "tool_result",
                  tool_use_id: "toolu_1",
                  content: [{ type: "text", text: "pic.png:" }, { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }]
                },
                { type: "tool_result", tool_use_id: "toolu_2", content: "pic.png" }
              ]
            }
          ],
          tools: [readImage, listDir, { name: "respond", description: "The final answer", parameters: answer }].map((tool) => ({
            name: tool.name,
            description: tool.description,
            input_schema: tool.parameters as never
          }))
        })
        for await (const _ of stream) { /* drained */ }
      })
      const [mine, reference] = [modelCalls(ours.requests)[0]!, modelCalls(theirs.requests)[0]!]
      expect(mine.path).toBe(reference.path)
      expect(mine.path).toBe(`/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/${model}:streamRawPredict`)
      expect(mine.headers["authorization"]).toBe(reference.headers["authorization"])
      expect(reference.headers["anthropic-version"]).toBeUndefined()
      // The client puts the Messages API version it speaks in `anthropic_version`; Google documents
      // `vertex-2023-10-16`, which is what is sent here (the `anthropicVersion` option changes it).
      const { anthropic_version: version, ...body } = mine.json
      const { anthropic_version: clientVersion, ...clientBody } = reference.json
      expect(version).toBe("vertex-2023-10-16")
      expect(clientVersion).toEqual(expect.any(String))
      expect(body).toEqual(clientBody)
      const pinned = yield* Vertex.make({ baseUrl: ours.url, project: "p", keyFile: yield* credentialsFile(ours.url), anthropicVersion: clientVersion })
      yield* Stream.runDrain(pinned.stream(conversation))
      expect(modelCalls(ours.requests).at(-1)!.json.anthropic_version).toBe(clientVersion)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it("the multi-region and global endpoints are the ones Google and Anthropic's client use", () => {
    expect(baseUrlFor("us")).toBe("https://aiplatform.us.rep.googleapis.com")
    expect(baseUrlFor("eu")).toBe("https://aiplatform.eu.rep.googleapis.com")
    expect(baseUrlFor("global")).toBe("https://aiplatform.googleapis.com")
    expect(baseUrlFor("europe-west1")).toBe("https://europe-west1-aiplatform.googleapis.com")
  })
})
