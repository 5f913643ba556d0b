import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Stream } from "effect"
import { AiError, LanguageModel, type Response } from "effect/ai"
import { LanguageModelProvider, Message, Provider, type ProviderTypes } from "effect-agent-loop"

/** A fake effect/ai model: streams scripted parts and records the options it was called with. */
const fakeModel = (script: ReadonlyArray<Response.StreamPartEncoded>, error?: AiError.AiError) => {
  const calls: Array<LanguageModel.ProviderOptions> = []
  const model = LanguageModel.make({
    generateText: () => Effect.die("not used"),
    streamText: (options) => {
      calls.push(options)
      const parts = Stream.fromIterable(script)
      return error === undefined ? parts : Stream.concat(parts, Stream.fail(error))
    }
  })
  return { model, calls }
}

const usage = { inputTokens: { uncached: 10, cacheRead: 5 }, outputTokens: { total: 7, reasoning: 3 } }

const request: ProviderTypes.ProviderRequest = {
  model: "ignored",
  messages: [
    Message.system("S"),
    Message.user("list and read"),
    Message.assistant("ok", [{ id: "c0", name: "read_file", arguments: "{\"path\":\"a\"}" }]),
    Message.toolResult({ id: "c0", name: "read_file" }, "boom", true)
  ],
  tools: [
    { name: "read_file", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
    { name: "list_dir", description: "Lists", parameters: { type: "object", properties: {} } }
  ]
}

const collect = (script: ReadonlyArray<Response.StreamPartEncoded>, req: ProviderTypes.ProviderRequest = request, error?: AiError.AiError) =>
  Effect.gen(function*() {
    const { calls, model } = fakeModel(script, error)
    const provider = yield* Effect.provide(
      Effect.service(Provider),
      LanguageModelProvider.layer.pipe(Layer.provide(Layer.effect(LanguageModel.LanguageModel, model)))
    )
    const exit = yield* Effect.exit(Stream.runCollect(provider.stream(req)))
    return { exit, calls }
  })

describe("fromLanguageModel", () => {
  it.effect("maps parts to chunks and leaves tool calls to the loop (resolution disabled)", () =>
    Effect.gen(function*() {
      const { calls, exit } = yield* collect([
        { type: "reasoning-delta", id: "r", delta: "thinking" },
        { type: "text-delta", id: "t", delta: "Hello" },
        { type: "tool-params-start", id: "call_a", name: "read_file" },
        { type: "tool-params-start", id: "call_b", name: "list_dir" },
        { type: "tool-params-delta", id: "call_a", delta: "{\"path\":" },
        { type: "tool-params-delta", id: "call_b", delta: "{}" },
        { type: "tool-params-delta", id: "call_a", delta: "\"a\"}" },
        { type: "tool-params-end", id: "call_a" },
        { type: "tool-call", id: "call_a", name: "read_file", params: { path: "a" } },
        { type: "tool-call", id: "call_b", name: "list_dir", params: {} },
        { type: "tool-call", id: "call_c", name: "read_file", params: { path: "b" } },
        { type: "finish", reason: "tool-calls", usage }
      ])
      expect(exit._tag).toBe("Success")
      expect(exit._tag === "Success" && exit.value).toEqual([
        { _tag: "ReasoningDelta", text: "thinking" },
        { _tag: "TextDelta", text: "Hello" },
        { _tag: "ToolCallDelta", index: 0, id: "call_a", name: "read_file", argumentsDelta: "" },
        { _tag: "ToolCallDelta", index: 1, id: "call_b", name: "list_dir", argumentsDelta: "" },
        { _tag: "ToolCallDelta", index: 0, argumentsDelta: "{\"path\":" },
        { _tag: "ToolCallDelta", index: 1, argumentsDelta: "{}" },
        { _tag: "ToolCallDelta", index: 0, argumentsDelta: "\"a\"}" },
        { _tag: "ToolCallDelta", index: 2, id: "call_c", name: "read_file", argumentsDelta: "{\"path\":\"b\"}" },
        { _tag: "Finish", reason: "tool_calls", usage: { inputTokens: 15, outputTokens: 7, cachedInputTokens: 5, reasoningTokens: 3 } }
      ])
      const options = calls[0]!
      expect(options.tools.map((tool) => tool.name)).toEqual(["read_file", "list_dir"])
      expect(options.prompt.content.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"])
      const assistant = options.prompt.content[2]!
      expect(assistant.role === "assistant" && assistant.content.map((p) => p.type)).toEqual(["text", "tool-call"])
      expect(assistant.role === "assistant" && assistant.content[1]).toMatchObject({ id: "c0", name: "read_file", params: { path: "a" } })
      const tool = options.prompt.content[3]!
      expect(tool.role === "tool" && tool.content[0]).toMatchObject({ type: "tool-result", id: "c0", name: "read_file", isFailure: true, result: "boom" })
    }))

  it.effect("a typed answer's tool is one of the tools, chosen by toolChoice only when the answer is due", () =>
    Effect.gen(function*() {
      const respond = { name: "respond", description: "The answer", parameters: { type: "object", properties: { n: { type: "number" } } } }
      const typed = { ...request, tools: [...request.tools, respond], output: { name: "respond", schema: respond.parameters } }
      const finish = [{ type: "finish", reason: "stop", usage }] as const
      const offered = (yield* collect(finish, typed)).calls[0]!
      expect(offered.tools.map((tool) => tool.name)).toEqual(["read_file", "list_dir", "respond"])
      expect(offered.toolChoice).toBe("auto")
      const forced = (yield* collect(finish, { ...typed, output: { ...typed.output, force: true } })).calls[0]!
      expect(forced.toolChoice).toEqual({ tool: "respond" })
    }))

  it.effect("without tools no toolkit is sent; finish reasons map", () =>
    Effect.gen(function*() {
      const reasons: Array<unknown> = []
      for (const reason of ["stop", "length", "content-filter", "pause"] as const) {
        const { calls, exit } = yield* collect(
          [{ type: "text-delta", id: "t", delta: "x" }, { type: "finish", reason, usage }],
          { model: "m", messages: [Message.user("hi")], tools: [] }
        )
        expect(calls[0]!.tools).toEqual([])
        reasons.push(exit._tag === "Success" ? (exit.value.at(-1) as { reason: string }).reason : exit)
      }
      expect(reasons).toEqual(["stop", "length", "content_filter", "other"])
    }))

  it.effect("error parts are classified by their words and code, not all as unavailable", () =>
    Effect.gen(function*() {
      const failed = (error: unknown) =>
        collect([{ type: "text-delta", id: "t", delta: "par" }, { type: "error", error }, { type: "finish", reason: "stop", usage }]).pipe(
          Effect.flatMap(({ exit }) => exit._tag === "Failure" ? Effect.flip(Effect.failCause(exit.cause)) : Effect.die("expected a failure"))
        )
      const anthropicBody = { type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 210000 tokens > 200000 maximum" } }
      expect(yield* failed(anthropicBody)).toMatchObject({ _tag: "ContextLengthExceeded", message: expect.stringContaining("prompt is too long") })
      expect(yield* failed({ error: { message: "Rate limit reached", code: "rate_limit_exceeded" } }))
        .toMatchObject({ _tag: "RateLimited", message: "Rate limit reached" })
      expect(yield* failed({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } }))
        .toMatchObject({ _tag: "ProviderRejected", message: "invalid x-api-key" })
      expect(yield* failed({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }))
        .toMatchObject({ _tag: "ProviderUnavailable", message: "Overloaded" })
      expect(yield* failed(new Error("socket hang up"))).toMatchObject({ _tag: "ProviderUnavailable", message: "socket hang up" })
      expect(yield* failed("maximum context length is 8192 tokens")).toMatchObject({ _tag: "ContextLengthExceeded" })
      expect(yield* failed(AiError.make({ module: "Fake", method: "streamText", reason: new AiError.RateLimitError({ retryAfter: Duration.seconds(2) }) })))
        .toMatchObject({ _tag: "RateLimited", retryAfterMs: 2000 })
      expect(yield* failed(undefined)).toMatchObject({ _tag: "ProviderUnavailable", message: "model stream error" })
    }))

  it.effect("AI errors map to provider errors; a stream without finish is malformed", () =>
    Effect.gen(function*() {
      const fail = (reason: AiError.AiErrorReason) =>
        collect([{ type: "text-delta", id: "t", delta: "par" }], request, AiError.make({ module: "Fake", method: "streamText", reason })).pipe(
          Effect.map(({ exit }) => exit._tag === "Failure" ? exit.cause : undefined),
          Effect.flatMap((cause) => cause === undefined ? Effect.die("expected a failure") : Effect.flip(Effect.failCause(cause)))
        )
      expect(yield* fail(new AiError.RateLimitError({ retryAfter: Duration.seconds(3) }))).toMatchObject({ _tag: "RateLimited", retryAfterMs: 3000 })
      expect(yield* fail(new AiError.InvalidRequestError({ description: "prompt is too long: 300000 tokens > 200000 maximum" })))
        .toMatchObject({ _tag: "ContextLengthExceeded" })
      expect((yield* fail(new AiError.InvalidRequestError({ description: "bad tool schema" })))._tag).toBe("ProviderRejected")
      expect((yield* fail(new AiError.AuthenticationError({ kind: "InvalidKey" })))._tag).toBe("ProviderRejected")
      expect((yield* fail(new AiError.NetworkError({ reason: "TransportError", method: "POST", url: "http://x" })))._tag).toBe("ProviderUnavailable")
      const { exit } = yield* collect([{ type: "text-delta", id: "t", delta: "par" }])
      expect(exit._tag === "Failure" && String(exit.cause)).toContain("MalformedResponse")
    }))
})
