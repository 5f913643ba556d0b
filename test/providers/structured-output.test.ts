/**
 * Typed answers on the wires: OpenAI Chat's `response_format` json_schema and the Responses API's
 * `text.format` (checked against the official `openai` SDK's own helpers and client), strict only
 * for schemas OpenAI can enforce, the `respond` tool for servers without structured outputs,
 * Anthropic's forced answer tool (checked against the official Anthropic SDK's body through
 * pi-ai) and not forced with thinking on, and whole turns over loopback servers.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schema, Stream } from "effect"
import OpenAI from "openai"
import { zodResponseFormat, zodTextFormat } from "openai/helpers/zod"
import { z } from "zod"
import {
  AgentLoop,
  AgentLoopLive,
  Anthropic,
  Message,
  OpenAiCompatible,
  OpenAiResponses,
  type Provider,
  type ProviderTypes,
  SessionStoreMemory,
  ToolRegistryLive
} from "effect-agent-loop"
import { isOpenAiStrict } from "../../src/layers/providers/toolSchema.ts"
import * as TypedOutput from "../../src/programs/internal/typedOutput.ts"
import { echo } from "../support/fixtures.ts"
import { piUser, referenceBody } from "../support/sdkReference.ts"
import { anthropicReply, openAiReply, responsesReply } from "../support/wireReplies.ts"
import { start, type WireResponse } from "../support/wireServer.ts"

const KEY = Redacted.make("sk-test")
const Answer = Schema.Struct({ city: Schema.String, population: Schema.Finite })
const answer = TypedOutput.make(Answer)
const echoDefinition = echo.definition

/** A request of a typed turn as the loop makes it: the answer tool beside the others, and `output`. */
const typedRequest = (force = false): ProviderTypes.ProviderRequest => ({
  model: "gpt-4o",
  messages: [Message.system("Be brief."), Message.user("Largest city?")],
  tools: [echoDefinition, answer.definition],
  output: { name: TypedOutput.RESPOND_TOOL, schema: answer.schema, ...(force ? { force: true } : {}) }
})

const openAiBody = (request: ProviderTypes.ProviderRequest, options: OpenAiCompatible.Options = {}) =>
  Effect.gen(function*() {
    const server = yield* start([openAiReply({ text: "{}" })])
    const provider = yield* OpenAiCompatible.make({ baseUrl: server.url, apiKey: KEY, ...options })
    yield* Stream.runDrain(provider.stream(request))
    return server.requests[0]!.json
  }).pipe(Effect.provide(NodeHttpClient.layerUndici))

const responsesBody = (request: ProviderTypes.ProviderRequest) =>
  Effect.gen(function*() {
    const server = yield* start([responsesReply({ text: "{}" })])
    const provider = yield* OpenAiResponses.make({ baseUrl: server.url, apiKey: KEY })
    yield* Stream.runDrain(provider.stream(request))
    return server.requests[0]!.json
  }).pipe(Effect.provide(NodeHttpClient.layerUndici))

const anthropicBody = (request: ProviderTypes.ProviderRequest) =>
  Effect.gen(function*() {
    const server = yield* start([anthropicReply({ text: "{}" })])
    const provider = yield* Anthropic.make({ baseUrl: server.url, apiKey: KEY })
    yield* Stream.runDrain(provider.stream(request))
    return server.requests[0]!.json
  }).pipe(Effect.provide(NodeHttpClient.layerUndici))

/** A loop over `provider` with the echo tool. */
const loopOver = (provider: Layer.Layer<Provider>) =>
  AgentLoopLive.layer({ model: "m" }).pipe(
    Layer.provideMerge(Layer.mergeAll(provider, ToolRegistryLive.layer([echo]), SessionStoreMemory.layer())),
    Layer.orDie
  )

const typedTurn = (provider: Layer.Layer<Provider>) =>
  Effect.gen(function*() {
    return yield* (yield* AgentLoop).turn("s", "Largest city?", { output: Answer })
  }).pipe(Effect.provide(loopOver(provider)))

describe("OpenAI Chat structured output", () => {
  it.live("response_format json_schema as the official SDK writes it (its zod helper, through its client); the answer tool is dropped", () =>
    Effect.gen(function*() {
      const ours = yield* openAiBody(typedRequest())
      const reference = zodResponseFormat(z.object({ city: z.string(), population: z.number() }), "respond")
      const server = yield* start([openAiReply({ text: "{}" })])
      const client = new OpenAI({ baseURL: server.url, apiKey: "sk-test" })
      yield* Effect.promise(async () => {
        for await (const _ of await client.chat.completions.create({
          model: "gpt-4o",
          messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Largest city?" }],
          stream: true,
          stream_options: { include_usage: true },
          tools: [{ type: "function", function: { name: "echo", description: echoDefinition.description, parameters: ours.tools[0].function.parameters } }],
          response_format: reference
        })) { /* drained */ }
      })
      const sdk = server.requests[0]!.json
      // The SDK's helper adds `$schema`, which the library leaves out of every schema it sends.
      const { $schema: _, ...schema } = sdk.response_format.json_schema.schema
      expect(ours.response_format).toEqual({ ...sdk.response_format, json_schema: { ...sdk.response_format.json_schema, schema } })
      expect(ours.response_format.json_schema.strict).toBe(true)
      // And the whole body is the one the official client sent for the same request.
      expect(ours).toEqual({ ...sdk, response_format: ours.response_format })
      expect(ours.tools.map((t: any) => t.function.name)).toEqual(["echo"])
      expect(ours.tool_choice).toBeUndefined()
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a forced answer allows no tool call; a schema OpenAI cannot enforce goes with strict false", () =>
    Effect.gen(function*() {
      const forced = yield* openAiBody(typedRequest(true))
      expect(forced.tool_choice).toBe("none")
      const loose = TypedOutput.make(Schema.Struct({ city: Schema.String, note: Schema.optionalKey(Schema.String) }))
      const body = yield* openAiBody({ ...typedRequest(), output: { name: "respond", schema: loose.schema } })
      expect(body.response_format.json_schema.strict).toBe(false)
      expect(body.response_format.json_schema.schema).toEqual(loose.schema)
    }))

  it.live("structuredOutput: \"tool\" keeps the respond tool and forces it by tool_choice when due", () =>
    Effect.gen(function*() {
      const offered = yield* openAiBody(typedRequest(), { structuredOutput: "tool" })
      expect(offered.response_format).toBeUndefined()
      expect(offered.tools.map((t: any) => t.function.name)).toEqual(["echo", "respond"])
      expect(offered.tool_choice).toBeUndefined()
      const forced = yield* openAiBody(typedRequest(true), { structuredOutput: "tool" })
      expect(forced.tool_choice).toEqual({ type: "function", function: { name: "respond" } })
    }))

  it.live("a typed turn over a loopback server: a tool call, then the constrained JSON text is the output", () =>
    Effect.gen(function*() {
      const server = yield* start([
        openAiReply({ toolCall: { id: "call_1", name: "echo", arguments: { text: "census" } } }),
        openAiReply({ text: "{\"city\":\"Tokyo\",\"population\":37}" })
      ])
      const provider = OpenAiCompatible.layer({ baseUrl: server.url, apiKey: KEY }).pipe(Layer.provide(NodeHttpClient.layerUndici))
      const result = yield* typedTurn(provider)
      expect([result.status, result.output]).toEqual(["completed", { city: "Tokyo", population: 37 }])
      expect(server.requests.map((r) => r.json.response_format?.json_schema.name)).toEqual(["respond", "respond"])
      expect(server.requests[1]!.json.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_1", content: "echo: census" })
    }))
})

describe("OpenAI Responses structured output", () => {
  it.live("text.format json_schema as the official SDK writes it (its zod helper, through its client); the answer tool is dropped", () =>
    Effect.gen(function*() {
      const ours = yield* responsesBody(typedRequest())
      const server = yield* start([responsesReply({ text: "{}" })])
      const client = new OpenAI({ baseURL: server.url, apiKey: "sk-test" })
      yield* Effect.promise(async () => {
        for await (const _ of await client.responses.create({
          model: "gpt-4o",
          instructions: "Be brief.",
          input: [{ role: "user", content: [{ type: "input_text", text: "Largest city?" }] }],
          stream: true,
          store: false,
          tools: [{ type: "function", name: "echo", description: echoDefinition.description, parameters: ours.tools[0].parameters, strict: false }],
          text: { format: zodTextFormat(z.object({ city: z.string(), population: z.number() }), "respond") }
        })) { /* drained */ }
      })
      const sdk = server.requests[0]!.json
      // The SDK's helper adds `$schema`, which the library leaves out of every schema it sends.
      const { $schema: _, ...schema } = sdk.text.format.schema
      expect(ours.text).toEqual({ format: { ...sdk.text.format, schema } })
      expect(ours.text.format).toMatchObject({ type: "json_schema", name: "respond", strict: true })
      // And the whole body is the one the official client sent for the same request.
      expect(ours).toEqual({ ...sdk, text: ours.text })
      expect(ours.tools.map((t: any) => t.name)).toEqual(["echo"])
      expect(ours.tool_choice).toBeUndefined()
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a forced answer allows no tool call; a schema OpenAI cannot enforce goes with strict false", () =>
    Effect.gen(function*() {
      const forced = yield* responsesBody(typedRequest(true))
      expect([forced.tool_choice, forced.tools.map((t: any) => t.name), forced.text.format.name]).toEqual(["none", ["echo"], "respond"])
      const loose = TypedOutput.make(Schema.Struct({ city: Schema.String, note: Schema.optionalKey(Schema.String) }))
      const body = yield* responsesBody({ ...typedRequest(), output: { name: "respond", schema: loose.schema } })
      expect(body.text.format.strict).toBe(false)
      expect(body.text.format.schema).toEqual(loose.schema)
      const { output: _, ...untyped } = typedRequest()
      expect((yield* responsesBody(untyped)).text).toBeUndefined()
    }))

  it.live("a typed turn over a loopback server: a tool call, a text that is not JSON sent back, then the forced JSON text is the output", () =>
    Effect.gen(function*() {
      const server = yield* start([
        responsesReply({ toolCall: { id: "call_1", name: "echo", arguments: { text: "census" } } }),
        responsesReply({ text: "Tokyo, about 37 million." }),
        responsesReply({ text: "{\"city\":\"Tokyo\",\"population\":37}" })
      ])
      const provider = OpenAiResponses.layer({ baseUrl: server.url, apiKey: KEY }).pipe(Layer.provide(NodeHttpClient.layerUndici))
      const result = yield* typedTurn(provider)
      expect([result.status, result.output]).toEqual(["completed", { city: "Tokyo", population: 37 }])
      const bodies = server.requests.map((r) => r.json)
      expect(bodies.map((b) => b.text.format.name)).toEqual(["respond", "respond", "respond"])
      expect(bodies.map((b) => b.tools.map((t: any) => t.name))).toEqual([["echo"], ["echo"], ["echo"]])
      expect(bodies.map((b) => b.tool_choice)).toEqual([undefined, undefined, "none"])
      expect(bodies[1].input.at(-1)).toEqual({ type: "function_call_output", call_id: "call_1", output: "echo: census" })
      expect(bodies[2].input.at(-1)).toMatchObject({ role: "user" })
    }))
})

describe("strict schemas", () => {
  const object = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    type: "object",
    properties,
    required: Object.keys(properties),
    additionalProperties: false,
    ...extra
  })
  it("closed objects with every property required, supported keywords, $defs: strict", () => {
    expect(isOpenAiStrict(object({ a: { type: "string", pattern: "^x" }, b: { type: "array", items: object({ c: { anyOf: [{ type: "number" }, { type: "null" }] } }) } }))).toBe(true)
    expect(isOpenAiStrict(object({ root: { $ref: "#/$defs/T" } }, { $defs: { T: object({ kids: { type: "array", items: { $ref: "#/$defs/T" } } }) } }))).toBe(true)
    expect(isOpenAiStrict(TypedOutput.make(Answer).schema)).toBe(true)
  })
  it("an open object, an optional property, an unsupported keyword, a non-object root or too deep: not strict", () => {
    expect(isOpenAiStrict({ ...object({ a: { type: "string" } }), additionalProperties: true })).toBe(false)
    expect(isOpenAiStrict({ ...object({ a: { type: "string" }, b: { type: "string" } }), required: ["a"] })).toBe(false)
    expect(isOpenAiStrict(object({ a: { type: "string", minLength: 1 } }))).toBe(false)
    expect(isOpenAiStrict(object({ a: object({ b: { type: "string" } }, { additionalProperties: true }) }))).toBe(false)
    expect(isOpenAiStrict({ anyOf: [object({})] })).toBe(false)
    expect(isOpenAiStrict(object({ a: { allOf: [{ type: "string" }] } }))).toBe(false)
    let deep: Record<string, unknown> = { type: "string" }
    for (let i = 0; i < 11; i++) deep = object({ x: deep })
    expect(isOpenAiStrict(deep)).toBe(false)
  })
})

describe("Anthropic structured output", () => {
  it.live("the answer tool is offered beside the others, and forced by tool_choice as the official SDK writes it when due", () =>
    Effect.gen(function*() {
      const offered = yield* anthropicBody(typedRequest())
      expect(offered.tools.map((t: any) => t.name)).toEqual(["echo", "respond"])
      expect(offered.tools[1].input_schema).toEqual(answer.schema)
      expect(offered.tool_choice).toBeUndefined()
      const forced = yield* anthropicBody(typedRequest(true))
      const sdk = yield* referenceBody(
        "anthropic-messages",
        "claude-sonnet-4-5",
        { systemPrompt: "Be brief.", messages: [piUser([{ text: "Largest city?" }])], tools: [answer.definition] },
        { toolChoice: { type: "tool", name: "respond" } }
      )
      expect(forced.tool_choice).toEqual(sdk.tool_choice)
      expect(forced.tool_choice).toEqual({ type: "tool", name: "respond" })
    }))

  it.live("with thinking on, a due answer is not forced (the API allows only auto or none with thinking): respond stays offered", () =>
    Effect.gen(function*() {
      const thinking = { ...typedRequest(true), model: "claude-sonnet-4-5", maxTokens: 8000, reasoning: { budgetTokens: 2048 } }
      const body = yield* anthropicBody(thinking)
      expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 })
      expect(body.tool_choice).toBeUndefined()
      expect(body.tools.map((t: any) => t.name)).toEqual(["echo", "respond"])
      const { reasoning: _, ...plain } = thinking
      expect((yield* anthropicBody(plain)).tool_choice).toEqual({ type: "tool", name: "respond" })
    }))

  it.live("a typed turn with thinking over a loopback server: the text answer is sent back unforced, the respond call is the output", () =>
    Effect.gen(function*() {
      const server = yield* start([
        anthropicReply({ text: "Tokyo, about 37 million." }),
        anthropicReply({ toolCall: { id: "toolu_r", name: "respond", arguments: { city: "Tokyo", population: 37 } } })
      ])
      const provider = Anthropic.layer({ baseUrl: server.url, apiKey: KEY }).pipe(Layer.provide(NodeHttpClient.layerUndici))
      const result = yield* Effect.gen(function*() {
        return yield* (yield* AgentLoop).turn("s", "Largest city?", { output: Answer, reasoning: { budgetTokens: 2048 } })
      }).pipe(Effect.provide(loopOver(provider)))
      expect([result.status, result.output]).toEqual(["completed", { city: "Tokyo", population: 37 }])
      const [first, second] = server.requests.map((r) => r.json)
      expect([first.thinking, second.thinking]).toEqual([{ type: "enabled", budget_tokens: 2048 }, { type: "enabled", budget_tokens: 2048 }])
      expect([first.tool_choice, second.tool_choice]).toEqual([undefined, undefined])
      expect(second.messages.at(-1).content.at(-1).text).toContain("call the \"respond\" tool")
    }))

  it.live("a typed turn over a loopback server: a text answer is sent back, the forced respond call is the output", () =>
    Effect.gen(function*() {
      const server = yield* start([
        anthropicReply({ text: "Tokyo, about 37 million." }),
        anthropicReply({ toolCall: { id: "toolu_r", name: "respond", arguments: { city: "Tokyo", population: 37 } } })
      ] satisfies ReadonlyArray<WireResponse>)
      const provider = Anthropic.layer({ baseUrl: server.url, apiKey: KEY }).pipe(Layer.provide(NodeHttpClient.layerUndici))
      const result = yield* typedTurn(provider)
      expect([result.status, result.output]).toEqual(["completed", { city: "Tokyo", population: 37 }])
      const [first, second] = server.requests.map((r) => r.json)
      expect(first.tool_choice).toBeUndefined()
      expect(first.tools.map((t: any) => t.name)).toEqual(["echo", "respond"])
      expect(second.tool_choice).toEqual({ type: "tool", name: "respond" })
      expect(second.messages.at(-1).role).toBe("user")
      expect(result.messages.at(-1)).toMatchObject({ role: "tool", toolCallId: "toolu_r", content: TypedOutput.ACCEPTED })
    }))
})
