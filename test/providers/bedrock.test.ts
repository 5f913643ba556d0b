/**
 * Amazon Bedrock (Converse): the request body compared with what AWS's own client
 * (`@aws-sdk/client-bedrock-runtime`, driven by pi-ai) sends for the same conversation — a system
 * prompt, two tools, a tool result with an image, thinking on, and a typed answer; SigV4
 * signatures recomputed by AWS's signer on the server; the credential chain (environment, shared
 * files); the binary event stream decoded in arbitrary pieces; reasoning kept and sent back;
 * prompt caching; and every error class, over HTTP and inside the stream.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { complete } from "@mariozechner/pi-ai"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Redacted, Stream } from "effect"
import { Bedrock, Message, type ProviderTypes } from "effect-agent-loop"
import { decodeEventStream } from "../../src/layers/providers/eventStream.ts"
import { fromException, makeDecoder } from "../../src/layers/providers/bedrockWire.ts"
import { piAssistant, piToolResult, piUser } from "../support/sdkReference.ts"
import { concat, exceptionFrame, frame, signatureValid, textReply, toolReply } from "../support/bedrockStream.ts"
import { start, type WireResponse } from "../support/wireServer.ts"
import { chunksOf, failureOf } from "../support/providerCalls.ts"
import { EventStreamCodec } from "@smithy/eventstream-codec"

const MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
const CREDENTIALS = { accessKeyId: "AKIDEXAMPLETEST01", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" }
const credentials: Bedrock.Credentials = { accessKeyId: CREDENTIALS.accessKeyId, secretAccessKey: Redacted.make(CREDENTIALS.secretAccessKey) }
const PNG = Buffer.from("\x89PNG\r\n\x1a\n not really a png").toString("base64")
const shot = { id: "tooluse_1", name: "screenshot" }
const tools = [
  { name: "screenshot", description: "Takes a screenshot", parameters: { type: "object", properties: {} } },
  { name: "read_file", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } }
]
const thinking = { provider: "bedrock", data: { reasoningText: { text: "I should look.", signature: "sig-bedrock-1" } } }

/** A system prompt, two tools, a reply that thought and called a tool, its result with an image. */
const conversation: ProviderTypes.ProviderRequest = {
  model: MODEL,
  messages: [
    Message.system("Be brief."),
    Message.user("What is on the screen?"),
    Message.assistant("Looking.", [{ ...shot, arguments: "{}" }], { reasoning: "I should look.", providerBlocks: [thinking] }),
    Message.toolResult(shot, [Message.text("the screen:"), Message.image("image/png", PNG)])
  ],
  tools,
  maxTokens: 8000
}

/** The same conversation for pi-ai, whose Bedrock provider drives AWS's client. */
const theirs = {
  systemPrompt: "Be brief.",
  messages: [
    piUser("What is on the screen?"),
    { ...piAssistant("anthropic-messages", MODEL, [
      { type: "thinking", thinking: "I should look.", thinkingSignature: "sig-bedrock-1" },
      { type: "text", text: "Looking." },
      { type: "toolCall", ...shot, arguments: {} }
    ]), api: "bedrock-converse-stream", provider: "amazon-bedrock" },
    piToolResult(shot, [{ text: "the screen:" }, { data: PNG, mimeType: "image/png" }])
  ],
  tools
}

/** What our provider sends for `request`, and the chunks it decodes from `reply`. */
const exchange = (request: ProviderTypes.ProviderRequest, reply: ReadonlyArray<Uint8Array> = textReply(["ok"]), options: Bedrock.Options = {}) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start([{ headers: { "content-type": "application/vnd.amazon.eventstream" }, body: reply }])
    const provider = yield* Bedrock.make({ baseUrl: server.url, region: "us-east-1", credentials, ...options })
    const chunks = yield* Stream.runCollect(provider.stream(request))
    return { received: server.requests[0]!, chunks }
  })).pipe(Effect.provide(NodeHttpClient.layerUndici))

/** What AWS's client sends for `theirs` with pi-ai's Bedrock `options`. */
const official = (options: Record<string, unknown>, context: unknown = theirs) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start([{ headers: { "content-type": "application/vnd.amazon.eventstream" }, body: [concat(textReply(["ok"]))] }])
    const env = { ...process.env }
    // AWS's client over HTTP/1.1 to the loopback server, with test credentials from the environment
    Object.assign(process.env, { AWS_BEDROCK_FORCE_HTTP1: "1", AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey })
    const model = {
      id: MODEL, name: MODEL, api: "bedrock-converse-stream", provider: "amazon-bedrock", baseUrl: server.url, reasoning: true,
      input: ["text", "image"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 200_000, maxTokens: 64_000
    }
    const reply = yield* Effect.promise(() => complete(model as never, context as never, { region: "us-east-1", cacheRetention: "none", ...options } as never)).pipe(
      Effect.ensuring(Effect.sync(() => {
        // as they were: later files in this worker see the environment they started with
        for (const name of ["AWS_BEDROCK_FORCE_HTTP1", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]) {
          if (env[name] === undefined) delete process.env[name]
          else process.env[name] = env[name]
        }
      }))
    )
    if ((reply as { stopReason: string }).stopReason === "error") return yield* Effect.die(new Error(`AWS's client failed: ${(reply as any).errorMessage}`))
    return server.requests[0]!
  }))

describe("Bedrock requests, as AWS's client sends them", () => {
  it.live("a system prompt, two tools, thinking sent back with its signature, a tool result with an image: field by field", () =>
    Effect.gen(function*() {
      const ours = yield* exchange({ ...conversation, reasoning: { budgetTokens: 2048 } }, textReply(["ok"]), { promptCaching: false })
      const sdk = yield* official({ reasoning: "low", maxTokens: 8000, interleavedThinking: false })
      expect(ours.received.path).toBe(sdk.path)
      expect(ours.received.path).toBe("/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream")
      expect(ours.received.json.messages).toEqual(sdk.json.messages)
      expect(ours.received.json.system).toEqual(sdk.json.system)
      expect(ours.received.json.toolConfig).toEqual(sdk.json.toolConfig)
      expect(ours.received.json.inferenceConfig).toEqual(sdk.json.inferenceConfig)
      const theirThinking = sdk.json.additionalModelRequestFields.thinking
      expect(ours.received.json.additionalModelRequestFields).toEqual({ thinking: { type: theirThinking.type, budget_tokens: theirThinking.budget_tokens } })
      // what that means: the signed reasoning first in the reply, the image inline, tool results as one user message
      expect(ours.received.json.messages[1].content[0]).toEqual({ reasoningContent: { reasoningText: { text: "I should look.", signature: "sig-bedrock-1" } } })
      expect(ours.received.json.messages[2].content[0].toolResult.content[1]).toEqual({ image: { format: "png", source: { bytes: PNG } } })
    }))

  it.live("a typed answer that is due forces its tool with toolChoice, as AWS's client sends a forced tool (thinking off)", () =>
    Effect.gen(function*() {
      const respond = { name: "respond", description: "The answer", parameters: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] } }
      const request: ProviderTypes.ProviderRequest = { ...conversation, tools: [...tools, respond], output: { name: "respond", schema: respond.parameters, force: true } }
      const ours = yield* exchange(request, textReply(["ok"]), { promptCaching: false })
      const sdk = yield* official({ maxTokens: 8000, toolChoice: { type: "tool", name: "respond" } }, { ...theirs, tools: [...tools, respond] })
      expect(ours.received.json.toolConfig).toEqual(sdk.json.toolConfig)
      expect(ours.received.json.toolConfig.toolChoice).toEqual({ tool: { name: "respond" } })
      // without thinking the reasoning blocks are not sent back, as AWS's client sends them then
      expect(ours.received.json.additionalModelRequestFields).toBeUndefined()
      const withThinking = yield* exchange({ ...request, reasoning: { budgetTokens: 2048 } }, textReply(["ok"]), { promptCaching: false })
      expect(withThinking.received.json.toolConfig.toolChoice).toBeUndefined()
    }))

  it.live("with prompt caching, cache points follow the system prompt, the tools and the newest user message, as AWS's client puts them", () =>
    Effect.gen(function*() {
      const ours = yield* exchange(conversation)
      const sdk = yield* official({ maxTokens: 8000, cacheRetention: "short" })
      expect(ours.received.json.system).toEqual(sdk.json.system)
      expect(ours.received.json.messages.at(-1)).toEqual(sdk.json.messages.at(-1))
      expect(ours.received.json.toolConfig.tools.at(-1)).toEqual({ cachePoint: { type: "default" } })
      const points = JSON.stringify(ours.received.json).split("cachePoint").length - 1
      expect(points).toBeLessThanOrEqual(4)
      const llama = yield* exchange({ ...conversation, model: "meta.llama3-3-70b-instruct-v1:0" })
      expect(JSON.stringify(llama.received.json)).not.toContain("cachePoint")
      const nova = yield* exchange({ ...conversation, model: "us.amazon.nova-pro-v1:0" })
      expect(nova.received.json.system.at(-1)).toEqual({ cachePoint: { type: "default" } })
      expect(JSON.stringify(nova.received.json.toolConfig)).not.toContain("cachePoint")
    }))

  it.live("requests are signed with SigV4 for bedrock in the region: AWS's signer, given what the server received, computes the same signature", () =>
    Effect.gen(function*() {
      const { received } = yield* exchange(conversation)
      expect(String(received.headers["authorization"])).toMatch(
        new RegExp(`^AWS4-HMAC-SHA256 Credential=${CREDENTIALS.accessKeyId}/\\d{8}/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$`)
      )
      expect(yield* Effect.promise(() => signatureValid(received, CREDENTIALS, "us-east-1"))).toBe(true)
      expect(yield* Effect.promise(() => signatureValid({ ...received, body: received.body.replace("Be brief", "Be long") }, CREDENTIALS, "us-east-1"))).toBe(false)
      const session = yield* exchange(conversation, textReply(["ok"]), {
        credentials: { ...credentials, sessionToken: Redacted.make("session-token-xyz") }
      })
      expect(session.received.headers["x-amz-security-token"]).toBe("session-token-xyz")
      expect(yield* Effect.promise(() => signatureValid(session.received, { ...CREDENTIALS, sessionToken: "session-token-xyz" }, "us-east-1"))).toBe(true)
    }))

  it.live("a base URL ending in slashes reaches the same path, signed for it", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* start([{ headers: { "content-type": "application/vnd.amazon.eventstream" }, body: textReply(["ok"]) }])
      const provider = yield* Bedrock.make({ baseUrl: `${server.url}//`, region: "us-east-1", credentials })
      yield* Stream.runDrain(provider.stream(conversation))
      const received = server.requests[0]!
      expect(received.path).toBe("/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream")
      expect(yield* Effect.promise(() => signatureValid(received, CREDENTIALS, "us-east-1"))).toBe(true)
    })).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a Bedrock API key is a bearer token: nothing is signed", () =>
    Effect.gen(function*() {
      const { received } = yield* exchange(conversation, textReply(["ok"]), { apiKey: Redacted.make("bedrock-api-key-abc") })
      expect(received.headers["authorization"]).toBe("Bearer bedrock-api-key-abc")
      expect(received.headers["x-amz-date"]).toBeUndefined()
    }))
})

describe("Bedrock credentials and region", () => {
  const withEnv = <A, E, R>(env: Record<string, string | undefined>, effect: Effect.Effect<A, E, R>) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const before: Record<string, string | undefined> = {}
        for (const [name, value] of Object.entries(env)) {
          before[name] = process.env[name]
          if (value === undefined) delete process.env[name]
          else process.env[name] = value
        }
        return before
      }),
      () => effect,
      (before) => Effect.sync(() => {
        for (const [name, value] of Object.entries(before)) {
          if (value === undefined) delete process.env[name]
          else process.env[name] = value
        }
      })
    )

  it.live("the default chain: a profile of the shared credentials file; none at all is a clear error", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "bedrock-creds-"))
      fs.writeFileSync(nodePath.join(dir, "credentials"), `[work]\naws_access_key_id = AKIDPROFILE0001\naws_secret_access_key = profile-secret-key\n`)
      fs.writeFileSync(nodePath.join(dir, "config"), "")
      const files = {
        AWS_SHARED_CREDENTIALS_FILE: nodePath.join(dir, "credentials"),
        AWS_CONFIG_FILE: nodePath.join(dir, "config"),
        AWS_ACCESS_KEY_ID: undefined,
        AWS_SECRET_ACCESS_KEY: undefined,
        AWS_SESSION_TOKEN: undefined,
        AWS_EC2_METADATA_DISABLED: "true",
        AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: undefined,
        AWS_CONTAINER_CREDENTIALS_FULL_URI: undefined,
        AWS_WEB_IDENTITY_TOKEN_FILE: undefined
      }
      const signed = yield* withEnv({ ...files, AWS_PROFILE: "work" }, exchange(conversation, textReply(["ok"]), { credentials: undefined as never }))
      expect(String(signed.received.headers["authorization"])).toContain("Credential=AKIDPROFILE0001/")
      expect(yield* Effect.promise(() => signatureValid(signed.received, { accessKeyId: "AKIDPROFILE0001", secretAccessKey: "profile-secret-key" }, "us-east-1"))).toBe(true)
      const none = yield* withEnv({ ...files, AWS_PROFILE: "nobody" }, Effect.flip(exchange(conversation, textReply(["ok"]), { credentials: undefined as never })))
      expect(none).toMatchObject({ _tag: "ProviderRejected", message: expect.stringMatching(/^Bedrock: no AWS credentials: /) })
    }))

  it.live("the region from AWS_REGION names the endpoint; without one, a clear error before any request", () =>
    Effect.gen(function*() {
      const noRegion = yield* Bedrock.make({ credentials }).pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: {} })))
      const error = yield* Effect.flip(Stream.runDrain(noRegion.stream(conversation)))
      expect(error).toMatchObject({ _tag: "ProviderRejected", message: expect.stringContaining("AWS_REGION") })
      const server = yield* start([{ body: textReply(["ok"]) }])
      const provider = yield* Bedrock.make({ credentials, baseUrl: server.url }).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { AWS_DEFAULT_REGION: "eu-west-3" } }))
      )
      yield* Stream.runDrain(provider.stream(conversation))
      expect(String(server.requests[0]!.headers["authorization"])).toContain("/eu-west-3/bedrock/aws4_request")
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))
})

describe("Bedrock event streams", () => {
  const signedThinking = { text: "Two files to read.", signature: "sig-xyz" }
  const expected: ReadonlyArray<ProviderTypes.ProviderChunk> = [
    { _tag: "ReasoningDelta", text: "Two f" },
    { _tag: "ReasoningDelta", text: "iles to read." },
    { _tag: "ProviderBlock", block: { provider: "bedrock", data: { reasoningText: signedThinking } } },
    { _tag: "ToolCallDelta", index: 0, id: "tu_a", name: "read_file", argumentsDelta: "" },
    { _tag: "ToolCallDelta", index: 0, argumentsDelta: "{\"p" },
    { _tag: "ToolCallDelta", index: 0, argumentsDelta: "ath\":\"ä.md\"}" },
    { _tag: "ToolCallDelta", index: 1, id: "tu_b", name: "list_dir", argumentsDelta: "" },
    { _tag: "ToolCallDelta", index: 1, argumentsDelta: "{\"p" },
    { _tag: "ToolCallDelta", index: 1, argumentsDelta: "ath\":\".\"}" },
    { _tag: "Finish", reason: "tool_calls", usage: { inputTokens: 30, outputTokens: 12, cachedInputTokens: 0, cacheWriteTokens: 0 } }
  ]
  const reply = concat(toolReply([{ id: "tu_a", name: "read_file", input: { path: "ä.md" } }, { id: "tu_b", name: "list_dir", input: { path: "." } }], { thinking: signedThinking }))

  it.live("reasoning with its signature, parallel tool calls with streamed arguments, usage: decoded whole and cut every 7 bytes", () =>
    Effect.gen(function*() {
      expect((yield* exchange(conversation, [reply])).chunks).toEqual(expected)
      const pieces: Array<Uint8Array> = []
      for (let i = 0; i < reply.length; i += 7) pieces.push(reply.subarray(i, i + 7))
      expect((yield* exchange(conversation, pieces)).chunks).toEqual(expected)
    }))

  it.live("text with cache reads and writes counts every input token; a redacted block is kept as it came", () =>
    Effect.gen(function*() {
      const { chunks } = yield* exchange(conversation, [
        frame("messageStart", { role: "assistant" }),
        frame("contentBlockDelta", { contentBlockIndex: 0, delta: { reasoningContent: { redactedContent: "b3BhcXVl" } } }),
        frame("contentBlockDelta", { contentBlockIndex: 1, delta: { text: "Grüße" } }),
        frame("messageStop", { stopReason: "end_turn" }),
        frame("metadata", { usage: { inputTokens: 10, outputTokens: 3, cacheReadInputTokens: 900, cacheWriteInputTokens: 50 } })
      ])
      expect(chunks).toEqual([
        { _tag: "ProviderBlock", block: { provider: "bedrock", data: { redactedContent: "b3BhcXVl" } } },
        { _tag: "TextDelta", text: "Grüße" },
        { _tag: "Finish", reason: "stop", usage: { inputTokens: 960, outputTokens: 3, cachedInputTokens: 900, cacheWriteTokens: 50 } }
      ])
    }))

  it.live("stop reasons: max_tokens is length, a guardrail is content_filter", () =>
    Effect.gen(function*() {
      const stopped = (reason: string) => [frame("messageStart", { role: "assistant" }), frame("messageStop", { stopReason: reason }), frame("metadata", { usage: { inputTokens: 1, outputTokens: 1 } })]
      expect((yield* exchange(conversation, stopped("max_tokens"))).chunks.at(-1)).toMatchObject({ reason: "length" })
      expect((yield* exchange(conversation, stopped("guardrail_intervened"))).chunks.at(-1)).toMatchObject({ reason: "content_filter" })
    }))

  it.effect("a frame is bounded: one at the limit is read, one byte over is refused; a bad CRC is malformed", () =>
    Effect.gen(function*() {
      const codec = new EventStreamCodec((b) => new TextDecoder().decode(b), (t) => new TextEncoder().encode(t))
      const parse = (bytes: Uint8Array) => codec.decode(bytes)
      const text = frame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "hi" } })
      const run = (body: ReadonlyArray<Uint8Array>, max: number) =>
        Stream.runCollect(decodeEventStream(parse, fromException, max)(Stream.fromIterable(body), makeDecoder))
      const atLimit = yield* Effect.flip(run([text], text.length))
      expect(atLimit.message).toBe("The stream ended before messageStop")
      const over = yield* Effect.flip(run([text], text.length - 1))
      expect(over).toMatchObject({ _tag: "MalformedResponse", message: expect.stringContaining(`a frame of ${text.length} bytes`) })
      const corrupt = Uint8Array.from(text)
      corrupt[corrupt.length - 6] = corrupt[corrupt.length - 6]! ^ 0xff
      expect(yield* Effect.flip(run([corrupt], 1 << 20))).toMatchObject({ _tag: "MalformedResponse", message: expect.stringMatching(/^Invalid event stream frame/) })
      const cut = yield* Effect.flip(run([text.subarray(0, 20)], 1 << 20))
      expect(cut.message).toBe("The stream ended inside an event frame")
    }))
})

describe("Bedrock errors", () => {
  const failWith = (response: WireResponse, options: Bedrock.Options = {}) =>
    failureOf(
      CREDENTIALS.secretAccessKey,
      (url) => chunksOf(Bedrock.make({ baseUrl: url, region: "us-east-1", credentials, ...options }), conversation),
      response
    )
  const awsError = (status: number, type: string, message: string, headers: Record<string, string> = {}): WireResponse => ({
    status,
    headers: { "content-type": "application/json", "x-amzn-errortype": `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, ...headers },
    body: [JSON.stringify({ message })]
  })

  it.live("over HTTP: throttling waits (Retry-After), overflow, access denied, unavailable", () =>
    Effect.gen(function*() {
      expect(yield* failWith(awsError(429, "ThrottlingException", "Too many requests, please wait before trying again.", { "retry-after": "3" }))).toMatchObject({
        _tag: "RateLimited",
        retryAfterMs: 3000
      })
      expect((yield* failWith(awsError(400, "ValidationException", "Input is too long for requested model.")))._tag).toBe("ContextLengthExceeded")
      expect((yield* failWith(awsError(400, "ValidationException", "prompt is too long: 250000 tokens > 200000 maximum")))._tag).toBe("ContextLengthExceeded")
      expect(yield* failWith(awsError(403, "AccessDeniedException", "You don't have access to the model with the specified model ID."))).toMatchObject({
        _tag: "ProviderRejected",
        status: 403
      })
      expect(yield* failWith(awsError(424, "ModelErrorException", "The system encountered an unexpected error during processing."))).toMatchObject({
        _tag: "ProviderUnavailable",
        status: 424
      })
      expect((yield* failWith(awsError(400, "ValidationException", "messages.1.content: Field required")))._tag).toBe("ProviderRejected")
      expect(yield* failWith(awsError(503, "ServiceUnavailableException", "Bedrock is unable to process your request."))).toMatchObject({
        _tag: "ProviderUnavailable",
        status: 503
      })
    }))

  it.live("inside the stream: exception frames after some text, and a connection cut mid-frame", () =>
    Effect.gen(function*() {
      const started = textReply(["partial "]).slice(0, 2)
      const inStream = (type: string, message: string) => failWith({ body: [...started, exceptionFrame(type, message)] })
      expect((yield* inStream("throttlingException", "Too many tokens, please wait before trying again."))._tag).toBe("RateLimited")
      expect(yield* inStream("modelStreamErrorException", "The model stream failed.")).toMatchObject({ _tag: "ProviderUnavailable", message: "The model stream failed." })
      expect((yield* inStream("validationException", "Input is too long for requested model."))._tag).toBe("ContextLengthExceeded")
      expect((yield* inStream("internalServerException", "Internal error"))._tag).toBe("ProviderUnavailable")
      const whole = concat(textReply(["cut here"]))
      expect((yield* failWith({ body: [whole.subarray(0, whole.length - 30)], drop: true }))._tag).toBe("ProviderUnavailable")
    }))
})

describe("Bedrock event streams under random splits and corruption", () => {
  /** mulberry32: a tiny seeded PRNG, so every failure is reproducible from its seed. */
  const prng = (seed: number) => () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const codec = new EventStreamCodec((b) => new TextDecoder().decode(b), (t) => new TextEncoder().encode(t))
  const body = concat(toolReply([{ id: "tu_a", name: "read_file", input: { path: "ä.md" } }], { thinking: { text: "Let me see it.", signature: "sig" } }))
  const clean = Effect.runSync(Stream.runCollect(decodeEventStream((b) => codec.decode(b), fromException)(Stream.make(body), makeDecoder)))

  it.effect("never crash or hang: the same chunks, or a tagged error; flipped bytes fail their CRC", () =>
    Effect.gen(function*() {
      const outcomes: Record<string, number> = {}
      for (let seed = 1; seed <= 150; seed++) {
        const rng = prng(seed)
        const kind = (["split", "truncate", "flip"] as const)[seed % 3]!
        let bytes: Uint8Array = body
        if (kind === "truncate") bytes = body.subarray(0, Math.floor(rng() * body.length))
        if (kind === "flip") {
          bytes = Uint8Array.from(body)
          bytes[Math.floor(rng() * bytes.length)] ^= 1 + Math.floor(rng() * 255)
        }
        const pieces: Array<Uint8Array> = []
        for (let i = 0; i < bytes.length;) {
          const size = 1 + Math.floor(rng() * (rng() < 0.7 ? 8 : 300))
          pieces.push(bytes.subarray(i, i + size))
          i += size
        }
        const exit = yield* Effect.exit(Stream.runCollect(decodeEventStream((b) => codec.decode(b), fromException)(Stream.fromIterable(pieces), makeDecoder)))
        const context = `seed=${seed} ${kind}`
        expect(exit._tag === "Failure" && exit.cause.reasons.some((reason) => reason._tag === "Die"), context).toBe(false)
        const outcome = exit._tag === "Success" ? "same" : (exit.cause.reasons[0] as any)?.error?._tag
        outcomes[`${kind}:${outcome}`] = (outcomes[`${kind}:${outcome}`] ?? 0) + 1
        if (kind === "split") expect(exit, context).toEqual(Exit.succeed(clean))
        if (kind === "flip") expect(outcome, context).toBe("MalformedResponse")
        if (kind === "truncate" && exit._tag === "Success") expect(exit.value.at(-1)?._tag, context).toBe("Finish")
      }
      expect(outcomes["truncate:MalformedResponse"]).toBeGreaterThan(0)
    }))
})
