/**
 * The OpenAI Chat Completions wire format: the request body and the decoder of its streamed
 * chunks. Tolerant of the compatible servers (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter):
 * missing fields are skipped, comments ignored, and reasoning read from either field name.
 */
import type { Sse } from "effect/encoding"
import { MalformedResponse, type ProviderError } from "../../domain/errors.ts"
import type { Message } from "../../domain/Message.ts"
import type { FinishReason, ProviderChunk, ProviderRequest } from "../../domain/Provider.ts"
import type { Usage } from "../../domain/Usage.ts"
import { describeBody, fromStreamError } from "./httpErrors.ts"
import { excerpt, numberAt, objectAt, parseObject, type Step, stringAt, type WireDecoder } from "./sse.ts"
import { type SchemaPolicy, toolSchemaFor } from "./toolSchema.ts"

/** Which request field carries the output limit: newer OpenAI models only accept the second. */
export type MaxTokensField = "max_tokens" | "max_completion_tokens"

const toWireMessage = (message: Message): Record<string, unknown> => {
  switch (message.role) {
    case "system":
    case "user":
      return { role: message.role, content: message.content }
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
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content }
  }
}

/** What OpenAI accepts in tool schemas; compatible servers that reject `additionalProperties` opt out. */
export const openAiSchemaPolicy: SchemaPolicy = { additionalProperties: true }

/** The JSON body of a streaming Chat Completions request. */
export const requestBody = (
  request: ProviderRequest,
  maxTokensField: MaxTokensField = "max_tokens",
  schemaPolicy: SchemaPolicy = openAiSchemaPolicy
) => ({
  model: request.model,
  messages: request.messages.map(toWireMessage),
  stream: true,
  stream_options: { include_usage: true },
  ...(request.tools.length > 0
    ? {
      tools: request.tools.map((tool) => ({
        type: "function",
        function: { name: tool.name, description: tool.description, parameters: toolSchemaFor(tool.parameters, schemaPolicy) }
      }))
    }
    : {}),
  ...(request.maxTokens === undefined ? {} : { [maxTokensField]: request.maxTokens })
})

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
  const finished = (finalReason: FinishReason): ProviderChunk => ({ _tag: "Finish", reason: finalReason, ...(usage ? { usage } : {}) })
  const feed = (event: Sse.Event): Step | ProviderError => {
    const data = event.data.trim()
    if (data === "[DONE]") return { done: true, chunks: [finished(reason ?? (sawToolCall ? "tool_calls" : "stop"))] }
    if (data === "") return { done: false, chunks: [] }
    const chunk = parseObject(data)
    if (chunk === undefined) return new MalformedResponse({ message: `Invalid JSON in stream: ${excerpt(data)}` })
    if (chunk["error"] !== undefined && chunk["error"] !== null) return fromStreamError(describeBody(data))
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
