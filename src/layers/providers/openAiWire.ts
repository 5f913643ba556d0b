/**
 * The OpenAI Chat Completions wire format: the request body and the decoder of its streamed
 * chunks. Tolerant of the compatible servers (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter):
 * missing fields are skipped, comments ignored, and reasoning read from either field name.
 */
import type * as Sse from "effect/encoding/Sse"
import { MalformedResponse, type ProviderError } from "../../domain/errors.ts"
import type { ContentPart, ImagePart, Message } from "../../domain/Message.ts"
import type { FinishReason, OutputFormat, ProviderChunk, ProviderRequest } from "../../domain/Provider.ts"
import type { Usage } from "../../domain/Usage.ts"
import { describeBody, fromStreamError } from "./httpErrors.ts"
import { excerpt, numberAt, objectAt, parseObject, type Step, stringAt, type WireDecoder } from "./sse.ts"
import { isOpenAiStrict, type SchemaPolicy, toolSchemaFor } from "./toolSchema.ts"

/** Which request field carries the output limit: newer OpenAI models only accept the second. */
export type MaxTokensField = "max_tokens" | "max_completion_tokens"

/** An image as a Chat Completions `image_url` part: inline images as `data:` URLs. */
const imageUrlPart = (part: ImagePart) => ({
  type: "image_url",
  image_url: { url: "data" in part ? `data:${part.mediaType};base64,${part.data}` : part.url }
})

const userPart = (part: ContentPart) => part.type === "text" ? { type: "text", text: part.text } : imageUrlPart(part)

/** What a tool message says when its result is only images (the API wants text there). */
export const IMAGE_ONLY_RESULT = "(see attached image)"

/** The user message after a run of tool results that carries their images, which tool messages cannot. */
export const TOOL_IMAGES_INTRO = "Attached image(s) from tool result:"

/**
 * The output-limit field for a server: `max_completion_tokens` for OpenAI itself (its reasoning
 * models refuse `max_tokens`, which the API deprecated), `max_tokens` for the compatible
 * servers, which all know that one.
 */
export const maxTokensFieldFor = (baseUrl: string | undefined): MaxTokensField =>
  baseUrl === undefined || /^https:\/\/api\.openai\.com(\/|$)/.test(baseUrl) ? "max_completion_tokens" : "max_tokens"

const toWireMessage = (message: Message): Record<string, unknown> => {
  switch (message.role) {
    case "system":
      return { role: "system", content: message.content }
    case "user":
      return { role: "user", content: typeof message.content === "string" ? message.content : message.content.map(userPart) }
    case "assistant": {
      const calls = message.toolCalls ?? []
      if (calls.length === 0) return { role: "assistant", content: message.content }
      return {
        role: "assistant",
        content: message.content === "" ? null : message.content,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: "function",
          function: { name: call.name, arguments: call.arguments }
        }))
      }
    }
    case "tool": {
      if (typeof message.content === "string") return { role: "tool", tool_call_id: message.toolCallId, content: message.content }
      const text = message.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("\n")
      const images = message.content.some((part) => part.type === "image")
      return { role: "tool", tool_call_id: message.toolCallId, content: text === "" && images ? IMAGE_ONLY_RESULT : text }
    }
  }
}

/**
 * The messages in the Chat Completions shape. Tool messages take text only, so the images of a run
 * of tool results follow it in one user message (as the official clients do), after the last
 * result: the API wants every result of a batch right after the call.
 */
export const toWireMessages = (messages: ReadonlyArray<Message>): Array<Record<string, unknown>> => {
  const out: Array<Record<string, unknown>> = []
  let images: Array<Record<string, unknown>> = []
  const flush = () => {
    if (images.length === 0) return
    out.push({ role: "user", content: [{ type: "text", text: TOOL_IMAGES_INTRO }, ...images] })
    images = []
  }
  for (const message of messages) {
    if (message.role !== "tool") flush()
    out.push(toWireMessage(message))
    if (message.role === "tool" && typeof message.content !== "string") {
      for (const part of message.content) if (part.type === "image") images.push(imageUrlPart(part))
    }
  }
  flush()
  return out
}

/** What OpenAI accepts in tool schemas; compatible servers that reject `additionalProperties` opt out. */
export const openAiSchemaPolicy: SchemaPolicy = { additionalProperties: true }

/**
 * How a typed answer (`ProviderRequest.output`) is asked for: `native` with `response_format`
 * json_schema (the answer tool is dropped and the reply's text is the answer), or `tool` with the
 * answer tool the loop offers (for compatible servers without structured outputs).
 */
export type StructuredOutput = "native" | "tool"

/** A typed answer as OpenAI's json_schema format (Chat's `response_format`, Responses' `text.format`). */
export const jsonSchemaFormat = (output: OutputFormat, schemaPolicy: SchemaPolicy) => {
  const schema = toolSchemaFor(output.schema, schemaPolicy)
  return { name: output.name, schema, strict: isOpenAiStrict(schema) }
}

/** The tools of a request whose typed answer comes natively: all but the answer tool. */
export const toolsBesideAnswer = (request: ProviderRequest) =>
  request.output === undefined ? request.tools : request.tools.filter((tool) => tool.name !== request.output!.name)

/** The fields a typed answer adds: `response_format`, or `tool_choice` forcing the answer when it is due. */
const outputFields = (output: OutputFormat, mode: StructuredOutput, schemaPolicy: SchemaPolicy): Record<string, unknown> => {
  if (mode === "tool") return output.force ? { tool_choice: { type: "function", function: { name: output.name } } } : {}
  return {
    response_format: { type: "json_schema", json_schema: jsonSchemaFormat(output, schemaPolicy) },
    // The answer is due now: no more tool calls, only the constrained text.
    ...(output.force ? { tool_choice: "none" } : {})
  }
}

/**
 * Where a compatible server's request differs from OpenAI's in fields, not meaning. Mistral, for
 * one, refuses fields it does not know: it has no `stream_options` (it sends the usage anyway),
 * names the seed `random_seed`, and takes no `reasoning_effort`.
 */
export interface Dialect {
  /** Send `stream_options: { include_usage: true }`; default true. */
  readonly streamOptions?: boolean
  /** The field of `seed`; default `seed`. */
  readonly seedField?: string
  /** Send `reasoning.effort` as `reasoning_effort`; default true. */
  readonly reasoningEffort?: boolean
}

/** The JSON body of a streaming Chat Completions request. */
export const requestBody = (
  request: ProviderRequest,
  maxTokensField: MaxTokensField = "max_tokens",
  schemaPolicy: SchemaPolicy = openAiSchemaPolicy,
  structuredOutput: StructuredOutput = "native",
  dialect?: Dialect
) => {
  const output = request.output
  const tools = structuredOutput === "native" ? toolsBesideAnswer(request) : request.tools
  return {
    model: request.model,
    messages: toWireMessages(request.messages),
    stream: true,
    ...(dialect?.streamOptions === false ? {} : { stream_options: { include_usage: true } }),
    ...(tools.length > 0
      ? {
        tools: tools.map((tool) => ({
          type: "function",
          function: { name: tool.name, description: tool.description, parameters: toolSchemaFor(tool.parameters, schemaPolicy) }
        }))
      }
      : {}),
    ...(request.maxTokens === undefined ? {} : { [maxTokensField]: request.maxTokens }),
    ...(dialect === undefined ? samplingFields(request) : dialectSampling(request, dialect)),
    ...(output === undefined ? {} : outputFields(output, structuredOutput, schemaPolicy))
  }
}

/** The model options but the output limit, as Chat Completions names them; absent ones are left out. */
const samplingFields = (request: ProviderRequest) => ({
  ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
  ...(request.topP === undefined ? {} : { top_p: request.topP }),
  ...(request.stop === undefined ? {} : { stop: request.stop }),
  ...(request.seed === undefined ? {} : { seed: request.seed }),
  ...(request.reasoning?.effort === undefined ? {} : { reasoning_effort: request.reasoning.effort })
})

/** The sampling fields in a dialect's names. */
const dialectSampling = (request: ProviderRequest, dialect: Dialect) => {
  const { seed, reasoning_effort, ...rest } = samplingFields(request) as Record<string, unknown>
  return {
    ...rest,
    ...(seed === undefined ? {} : { [dialect.seedField ?? "seed"]: seed }),
    ...(reasoning_effort === undefined || dialect.reasoningEffort === false ? {} : { reasoning_effort })
  }
}

/** The library's finish reason for an OpenAI one. */
export const finishReason = (reason: string): FinishReason =>
  reason === "stop" || reason === "tool_calls" || reason === "length" || reason === "content_filter"
    ? reason
    : reason === "function_call"
    ? "tool_calls"
    : "other"

const toolCallDeltas = (value: unknown): ReadonlyArray<ProviderChunk> => {
  if (!Array.isArray(value)) return []
  const out: Array<ProviderChunk> = []
  value.forEach((item: unknown, position) => {
    if (typeof item !== "object" || item === null) return
    const call = item as Record<string, unknown>
    const fn = objectAt(call, "function")
    const id = stringAt(call, "id")
    const name = stringAt(fn, "name")
    const args = stringAt(fn, "arguments") ?? ""
    if (id === undefined && name === undefined && args === "") return
    out.push({
      _tag: "ToolCallDelta",
      index: numberAt(call, "index") ?? position,
      ...(id === undefined || id === "" ? {} : { id }),
      ...(name === undefined || name === "" ? {} : { name }),
      argumentsDelta: args
    })
  })
  return out
}

/** Usage in the Chat Completions shape, with the cached-prompt and reasoning details when given. */
const usageOf = (wire: Record<string, unknown>): Usage => {
  const cached = numberAt(objectAt(wire, "prompt_tokens_details"), "cached_tokens")
  const reasoning = numberAt(objectAt(wire, "completion_tokens_details"), "reasoning_tokens")
  return {
    inputTokens: numberAt(wire, "prompt_tokens") ?? 0,
    outputTokens: numberAt(wire, "completion_tokens") ?? 0,
    ...(cached === undefined ? {} : { cachedInputTokens: cached }),
    ...(reasoning === undefined ? {} : { reasoningTokens: reasoning })
  }
}

/**
 * A decoder for one Chat Completions stream. The finish reason and the usage (which may come in
 * a later chunk with no choices) are held back and sent as one `Finish` at `data: [DONE]`, or
 * when the body ends after a finish reason without one (as many compatible servers do, and as the
 * official SDK accepts).
 */
export const makeDecoder = (): WireDecoder => {
  let reason: FinishReason | undefined
  let usage: Usage | undefined
  let sawToolCall = false
  // the completion's id and the model that answered, on every chunk: the first are kept
  let responseId: string | undefined
  let responseModel: string | undefined
  const finished = (finalReason: FinishReason): ProviderChunk => ({
    _tag: "Finish",
    reason: finalReason,
    ...(usage ? { usage } : {}),
    ...(responseId ? { responseId } : {}),
    ...(responseModel ? { responseModel } : {})
  })
  const feed = (event: Sse.Event): Step | ProviderError => {
    const data = event.data.trim()
    if (data === "[DONE]") return { done: true, chunks: [finished(reason ?? (sawToolCall ? "tool_calls" : "stop"))] }
    if (data === "") return { done: false, chunks: [] }
    const chunk = parseObject(data)
    if (chunk === undefined) return new MalformedResponse({ message: `Invalid JSON in stream: ${excerpt(data)}` })
    if (chunk["error"] !== undefined && chunk["error"] !== null) return fromStreamError(describeBody(data))
    responseId ??= stringAt(chunk, "id") || undefined
    responseModel ??= stringAt(chunk, "model") || undefined
    const wireUsage = objectAt(chunk, "usage")
    if (wireUsage) usage = usageOf(wireUsage)
    const choices = Array.isArray(chunk["choices"]) ? chunk["choices"] as ReadonlyArray<unknown> : []
    const choice = choices.length > 0 && typeof choices[0] === "object" && choices[0] !== null
      ? choices[0] as Record<string, unknown>
      : undefined
    const delta = objectAt(choice, "delta")
    const chunks: Array<ProviderChunk> = []
    const thinking = stringAt(delta, "reasoning_content") ?? stringAt(delta, "reasoning")
    if (thinking) chunks.push({ _tag: "ReasoningDelta", text: thinking })
    const content = stringAt(delta, "content")
    if (content) chunks.push({ _tag: "TextDelta", text: content })
    const calls = toolCallDeltas(delta?.["tool_calls"])
    if (calls.length > 0) sawToolCall = true
    chunks.push(...calls)
    const finish = stringAt(choice, "finish_reason")
    if (finish) reason = finishReason(finish)
    return { done: false, chunks }
  }
  return {
    feed,
    end: () =>
      reason === undefined
        ? new MalformedResponse({ message: "The stream ended before the response finished (no finish_reason, no [DONE])" })
        : [finished(reason)]
  }
}
