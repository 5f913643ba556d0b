/**
 * `fromLanguageModel`: any `effect/ai` `LanguageModel` as a Provider, so the loop can run on
 * every model Effect's AI packages support. Tool-call resolution is turned off: the model sees
 * the tools, but the loop (with its hooks, approvals and grouping) executes them.
 *
 * The `LanguageModel` is configured by its own layer, so `request.model` and the model options
 * (`maxTokens`, temperature, reasoning: `effect/ai` has no vendor-neutral knobs for them) are not
 * forwarded; choose them where the `LanguageModel` is built. The model's name comes from there
 * too: an `effect/ai` `Model` (what a provider package's `model("…")` gives) provides it as
 * `Model.ModelName`, and the provider passes it on, so `AgentLoopLive.layer` needs no `model`.
 * Usage carries the cache and reasoning token counts the model reports.
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import type { LanguageModel } from "effect/ai"
 * import { AgentLoopLive, LanguageModelProvider, SessionStoreMemory, ToolRegistryLive } from "effect-agent-loop"
 *
 * declare const myModel: Layer.Layer<LanguageModel.LanguageModel> // any effect/ai model's layer, e.g. a Model
 * const loop = AgentLoopLive.layer({ systemPrompt: "Be brief." }).pipe(
 *   Layer.provide([LanguageModelProvider.layer.pipe(Layer.provide(myModel)), ToolRegistryLive.layer([]), SessionStoreMemory.layer()])
 * )
 * ```
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as JsonSchema from "effect/JsonSchema"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as AiError from "effect/ai/AiError"
import * as LanguageModel from "effect/ai/LanguageModel"
import * as Model from "effect/ai/Model"
import type * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import * as Tool from "effect/ai/Tool"
import type * as Toolkit from "effect/ai/Toolkit"
import {
  ContextLengthExceeded,
  MalformedResponse,
  type ProviderError,
  ProviderRejected,
  ProviderUnavailable,
  RateLimited
} from "../../domain/errors.ts"
import { type Content, type Message, textOf } from "../../domain/Message.ts"
import type { FinishReason, ProviderChunk, ProviderRequest, ToolDefinition } from "../../domain/Provider.ts"
import { Provider, type ProviderShape } from "../../services/Provider.ts"
import { describeJson, fromStreamError, isContextLength } from "./httpErrors.ts"
import { argumentsObject, emitChunks } from "./sse.ts"

/** User content as `effect/ai` parts: images become file parts (base64 data, or a URL). */
const userParts = (content: Content): string | ReadonlyArray<Prompt.UserMessagePartEncoded> =>
  typeof content === "string"
    ? content
    : content.map((part): Prompt.UserMessagePartEncoded =>
      part.type === "text"
        ? { type: "text", text: part.text }
        : "data" in part
        ? { type: "file", mediaType: part.mediaType, data: part.data }
        : { type: "file", mediaType: part.mediaType ?? "image/*", data: new URL(part.url) }
    )

/**
 * A conversation message as an `effect/ai` prompt message. A tool result's images are given as
 * their text placeholders: `effect/ai` tool results are JSON values, with no place for files.
 */
export const toPromptMessage = (message: Message): Prompt.MessageEncoded => {
  switch (message.role) {
    case "system":
      return { role: "system", content: message.content }
    case "user":
      return { role: "user", content: userParts(message.content) }
    case "assistant":
      return {
        role: "assistant",
        content: [
          ...(message.content === "" ? [] : [{ type: "text" as const, text: message.content }]),
          ...(message.toolCalls ?? []).map((call) => ({
            type: "tool-call" as const,
            id: call.id,
            name: call.name,
            params: argumentsObject(call.arguments) ?? call.arguments
          }))
        ]
      }
    case "tool":
      return {
        role: "tool",
        content: [{
          type: "tool-result",
          id: message.toolCallId,
          name: message.toolName,
          isFailure: message.isError === true,
          result: textOf(message.content)
        }]
      }
  }
}

/**
 * The loop's tools as a toolkit the model can see. Its handler is never called, since
 * resolution is disabled; if it were, that would be a bug in the adapter, hence a defect.
 */
const toolkitOf = (tools: ReadonlyArray<ToolDefinition>): Toolkit.WithHandler<Record<string, Tool.Any>> => ({
  tools: Object.fromEntries(tools.map((tool) => [
    tool.name,
    Tool.dynamic(tool.name, { description: tool.description, parameters: tool.parameters as JsonSchema.JsonSchema })
  ])) as Record<string, Tool.Any>,
  handle: (name) => Effect.die(`fromLanguageModel: tool ${String(name)} must be executed by the loop`)
})

const finishReason = (reason: Response.FinishReason): FinishReason => {
  switch (reason) {
    case "stop":
    case "length":
    case "other":
      return reason
    case "tool-calls":
      return "tool_calls"
    case "content-filter":
      return "content_filter"
    default:
      return "other"
  }
}

/** The provider error for an `effect/ai` error, by its reason. */
export const fromAiError = (error: AiError.AiError): ProviderError => {
  const reason = error.reason
  const message = reason.message
  switch (reason._tag) {
    case "RateLimitError":
      return new RateLimited(
        reason.retryAfter === undefined ? { message } : { message, retryAfterMs: Duration.toMillis(reason.retryAfter) }
      )
    case "InvalidRequestError":
      return isContextLength(message) ? new ContextLengthExceeded({ message }) : new ProviderRejected({ message })
    case "InvalidResponseError":
    case "InvalidOutputError":
      return new MalformedResponse({ message })
    default:
      return reason.isRetryable ? new ProviderUnavailable({ message }) : new ProviderRejected({ message })
  }
}

/**
 * The provider error for an `error` part. Model packages put what their API sent there (an
 * `AiError`, an `Error`, or the vendor's error object), so it is classified like an in-stream
 * error of the HTTP layers: a context-length error is compacted for, a rate limit waited on.
 */
const fromErrorPart = (error: unknown): ProviderError => {
  if (AiError.isAiError(error)) return fromAiError(error)
  if (error instanceof Error) return fromStreamError({ message: error.message })
  return fromStreamError(typeof error === "string" ? { message: error } : describeJson(error, "model stream error"))
}

/**
 * Turns response parts into chunks. Tool calls are numbered in order of appearance; calls
 * streamed as parameter pieces are passed through piece by piece, a call that arrives whole is
 * one delta. Calls the provider executed itself are not the loop's to run and are skipped.
 */
const decodeParts = (parts: Stream.Stream<Response.StreamPart<any, any>, ProviderError>): Stream.Stream<ProviderChunk, ProviderError> =>
  Stream.suspend(() => {
    const indexOf = new Map<string, number>()
    const streamed = new Set<string>()
    let finished = false
    // from the `response-metadata` part: the response's id and the model that answered
    let named: { responseId?: string; responseModel?: string } = {}
    const chunksOf = (part: Response.StreamPart<any, any>): ReadonlyArray<ProviderChunk> | ProviderError => {
      switch (part.type) {
        case "text-delta":
          return part.delta === "" ? [] : [{ _tag: "TextDelta", text: part.delta }]
        case "reasoning-delta":
          return part.delta === "" ? [] : [{ _tag: "ReasoningDelta", text: part.delta }]
        case "tool-params-start": {
          if (part.providerExecuted) return []
          const index = indexOf.size
          indexOf.set(part.id, index)
          streamed.add(part.id)
          return [{ _tag: "ToolCallDelta", index, id: part.id, name: part.name, argumentsDelta: "" }]
        }
        case "tool-params-delta": {
          const index = indexOf.get(part.id)
          return index === undefined || part.delta === "" ? [] : [{ _tag: "ToolCallDelta", index, argumentsDelta: part.delta }]
        }
        case "tool-call": {
          if (part.providerExecuted || streamed.has(part.id)) return []
          const index = indexOf.size
          indexOf.set(part.id, index)
          const params: unknown = part.params
          const argumentsDelta = typeof params === "string" ? params : JSON.stringify(params ?? {})
          return [{ _tag: "ToolCallDelta", index, id: part.id, name: part.name, argumentsDelta }]
        }
        case "response-metadata":
          named = {
            ...(part.id ? { responseId: part.id } : {}),
            ...(part.modelId ? { responseModel: part.modelId } : {})
          }
          return []
        case "finish": {
          finished = true
          const input = part.usage.inputTokens
          const inputTokens = input.total ?? (input.uncached ?? 0) + (input.cacheRead ?? 0) + (input.cacheWrite ?? 0)
          const reasoning = part.usage.outputTokens.reasoning
          return [{
            _tag: "Finish",
            reason: finishReason(part.reason),
            usage: {
              inputTokens,
              outputTokens: part.usage.outputTokens.total ?? 0,
              ...(input.cacheRead === undefined ? {} : { cachedInputTokens: input.cacheRead }),
              ...(input.cacheWrite === undefined ? {} : { cacheWriteTokens: input.cacheWrite }),
              ...(reasoning === undefined ? {} : { reasoningTokens: reasoning })
            },
            ...named
          }]
        }
        case "error":
          return fromErrorPart(part.error)
        default:
          return []
      }
    }
    return emitChunks(parts, chunksOf).pipe(
      Stream.concat(Stream.suspend(() =>
        finished ? Stream.empty : Stream.fail(new MalformedResponse({ message: "The model stream ended without a finish part" }))
      ))
    )
  })

/**
 * Adapts a `LanguageModel` to a Provider; `modelName`, when given, is the provider's `model` (the
 * loop's model when its config names none).
 */
export const fromLanguageModel = (model: LanguageModel.LanguageModel, modelName?: string): ProviderShape => ({
  ...(modelName === undefined ? {} : { model: modelName }),
  stream: (request: ProviderRequest) => {
    const prompt = request.messages.map(toPromptMessage)
    // The tools' parameters are plain JSON Schema (no Schema services), so nothing is required.
    const parts: Stream.Stream<Response.StreamPart<any, any>, AiError.AiError> = request.tools.length === 0
      ? model.streamText({ prompt, disableToolCallResolution: true })
      : model.streamText({
        prompt,
        toolkit: toolkitOf(request.tools),
        disableToolCallResolution: true,
        toolCallValidation: "deferred",
        // A typed answer that is due: the model must call its tool now.
        ...(request.output?.force ? { toolChoice: { tool: request.output.name } } : {})
      }) as Stream.Stream<Response.StreamPart<any, any>, AiError.AiError>
    return decodeParts(Stream.mapError(parts, fromAiError))
  }
})

/**
 * The current `LanguageModel` as the Provider, named by `Model.ModelName` when the context has one
 * (an `effect/ai` `Model` provides it beside the `LanguageModel`).
 */
export const layer: Layer.Layer<Provider, never, LanguageModel.LanguageModel> = Layer.effect(
  Provider,
  Effect.gen(function*() {
    const model = yield* LanguageModel.LanguageModel
    const name = yield* Effect.serviceOption(Model.ModelName)
    return fromLanguageModel(model, Option.getOrUndefined(name))
  })
)
