/**
 * The OpenAI Responses wire format: the request body (system prompt as `instructions`, the
 * conversation as `input` items, reasoning items sent back with their encrypted content) and the
 * decoder of its typed event stream.
 */
import type * as Sse from "effect/encoding/Sse"
import { MalformedResponse, type ProviderError, ProviderRejected } from "../../domain/errors.ts"
import {
  type AssistantMessage,
  blockFor,
  type Content,
  hasImages,
  type ImagePart,
  type Message,
  type ProviderBlock,
  textOf
} from "../../domain/Message.ts"
import { reasons } from "../../domain/ModelOptions.ts"
import type { FinishReason, ProviderChunk, ProviderRequest } from "../../domain/Provider.ts"
import type { Usage } from "../../domain/Usage.ts"
import { describeJson, fromStreamError } from "./httpErrors.ts"
import { jsonSchemaFormat, openAiSchemaPolicy, toolsBesideAnswer } from "./openAiWire.ts"
import { excerpt, numberAt, objectAt, parseObject, type Step, stringAt, type WireDecoder } from "./sse.ts"
import { type SchemaPolicy, toolSchemaFor } from "./toolSchema.ts"

/** The `provider` of the blocks this wire keeps (`AssistantMessage.providerBlocks`). */
export const PROVIDER = "openai-responses"

type Item = Record<string, unknown>

/**
 * The input items of a reply. With no blocks of this wire, its text and tool calls. With blocks,
 * the response's items in their order: reasoning items as they came, then the message and the
 * function calls under the ids they had, which the API pairs the reasoning with; the text and
 * calls come from the message as it is now, so a hook's edit is what is sent.
 */
const replyItems = (message: AssistantMessage, model: string): Array<Item> => {
  const calls = message.toolCalls ?? []
  const callItem = (call: (typeof calls)[number], id?: string): Item => ({
    type: "function_call",
    ...(id === undefined ? {} : { id }),
    call_id: call.id,
    name: call.name,
    arguments: call.arguments
  })
  const out: Array<Item> = []
  let textSent = message.content === ""
  const sentCalls = new Set<string>()
  for (const block of message.providerBlocks ?? []) {
    if (!blockFor(block, PROVIDER, model)) continue
    const data = block.data
    const id = stringAt(data, "id")
    switch (data["type"]) {
      case "reasoning":
        out.push(data)
        break
      case "message":
        if (textSent || id === undefined) break
        out.push({
          type: "message",
          id,
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: message.content, annotations: [] }]
        })
        textSent = true
        break
      case "function_call": {
        const call = calls.find((c) => c.id === stringAt(data, "call_id"))
        if (call === undefined || sentCalls.has(call.id)) break
        out.push(callItem(call, id))
        sentCalls.add(call.id)
      }
    }
  }
  if (!textSent) out.push({ role: "assistant", content: message.content })
  for (const call of calls) if (!sentCalls.has(call.id)) out.push(callItem(call))
  return out
}

/** An image as an `input_image`: inline images as `data:` URLs. */
const inputImage = (part: ImagePart): Item => ({
  type: "input_image",
  detail: "auto",
  image_url: "data" in part ? `data:${part.mediaType};base64,${part.data}` : part.url
})

/** Text and images as input content parts, in their order. */
const inputParts = (content: Content): Array<Item> =>
  typeof content === "string"
    ? [{ type: "input_text", text: content }]
    : content.map((part) => part.type === "text" ? { type: "input_text", text: part.text } : inputImage(part))

/**
 * The conversation as input items, for `model`; system messages go to `instructions` instead. A
 * reply's items go back under their ids to the model that made them only.
 */
export const toInputItems = (messages: ReadonlyArray<Message>, model: string): Array<Item> =>
  messages.flatMap((message): Array<Item> => {
    switch (message.role) {
      case "system":
        return []
      case "user":
        return [{ role: "user", content: inputParts(message.content) }]
      case "assistant":
        return replyItems(message, model)
      case "tool":
        // an output takes content parts too, so a result's images go with it
        return [{
          type: "function_call_output",
          call_id: message.toolCallId,
          output: hasImages(message.content) ? inputParts(message.content) : textOf(message.content)
        }]
    }
  })

/**
 * What the API refuses or lacks, said before sending: it has no stop sequences (a request with
 * them would run past where the caller wanted the answer to end). It has no `seed` either, which
 * is best effort by definition and is ignored.
 */
export const check = (request: ProviderRequest): ProviderError | undefined =>
  request.stop !== undefined && request.stop.length > 0
    ? new ProviderRejected({ message: "The Responses API has no stop sequences: leave out stop, or use the Chat Completions provider" })
    : undefined

/**
 * The JSON body of a streaming Responses request. Nothing is stored at OpenAI (`store: false`),
 * so reasoning continues across calls through the encrypted content the response includes when
 * reasoning is asked for, sent back in the reasoning items. A typed answer (`output`) comes
 * natively: its json_schema goes in `text.format`, the answer tool is left out, and when the
 * answer is due (`output.force`) `tool_choice: "none"` leaves only the constrained text.
 */
export const requestBody = (request: ProviderRequest, schemaPolicy: SchemaPolicy = openAiSchemaPolicy) => {
  const instructions = request.messages.flatMap((m) => m.role === "system" ? [m.content] : []).join("\n\n")
  const reasoning = reasons(request)
  const output = request.output
  const tools = toolsBesideAnswer(request)
  return {
    model: request.model,
    ...(instructions === "" ? {} : { instructions }),
    input: toInputItems(request.messages, request.model),
    stream: true,
    store: false,
    ...(tools.length > 0
      ? {
        tools: tools.map((tool) => ({
          type: "function",
          name: tool.name,
          description: tool.description,
          parameters: toolSchemaFor(tool.parameters, schemaPolicy),
          // tools bring any JSON Schema; strict mode accepts only a subset of it
          strict: false
        }))
      }
      : {}),
    ...(request.maxTokens === undefined ? {} : { max_output_tokens: request.maxTokens }),
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(request.topP === undefined ? {} : { top_p: request.topP }),
    ...(reasoning
      ? {
        reasoning: { ...(request.reasoning?.effort === undefined ? {} : { effort: request.reasoning.effort }), summary: "auto" },
        include: ["reasoning.encrypted_content"]
      }
      : {}),
    ...(output === undefined
      ? {}
      : { text: { format: { type: "json_schema", ...jsonSchemaFormat(output, schemaPolicy) } }, ...(output.force ? { tool_choice: "none" } : {}) })
  }
}

/** Usage of a `response` object: cached input and reasoning output tokens when reported. */
const usageOf = (usage: Record<string, unknown> | undefined): Usage | undefined => {
  if (usage === undefined) return undefined
  const cached = numberAt(objectAt(usage, "input_tokens_details"), "cached_tokens")
  const reasoning = numberAt(objectAt(usage, "output_tokens_details"), "reasoning_tokens")
  return {
    inputTokens: numberAt(usage, "input_tokens") ?? 0,
    outputTokens: numberAt(usage, "output_tokens") ?? 0,
    ...(cached === undefined ? {} : { cachedInputTokens: cached }),
    ...(reasoning === undefined ? {} : { reasoningTokens: reasoning })
  }
}

/** The library's finish reason for an incomplete response's `incomplete_details.reason`. */
export const incompleteReason = (reason: string | undefined): FinishReason =>
  reason === "max_output_tokens" ? "length" : reason === "content_filter" ? "content_filter" : "other"

/** A function call being streamed: its tool index and the arguments sent so far. */
interface OpenCall {
  readonly index: number
  args: string
}

/**
 * A decoder for one Responses stream. Function calls are numbered in the order their items are
 * added; argument deltas find their call by item id, else by output index. The response's items
 * are kept as provider blocks when a reasoning item came with encrypted content (only then can
 * anything be sent back), sent before the `Finish` of `response.completed`/`response.incomplete`.
 */
export const makeDecoder = (): WireDecoder => {
  const calls = new Map<string, OpenCall>()
  const byOutput = new Map<number, OpenCall>()
  const items: Array<ProviderBlock> = []
  let reasoningKept = false
  let summaryParts = 0
  const next = (chunks: ReadonlyArray<ProviderChunk> = []): Step => ({ done: false, chunks })
  const callOf = (payload: Item): OpenCall | undefined =>
    calls.get(stringAt(payload, "item_id") ?? "") ?? byOutput.get(numberAt(payload, "output_index") ?? -1)
  const keep = (data: Item) => items.push({ provider: PROVIDER, data })
  /** The rest of a call's arguments when the whole arrives (`…arguments.done`, `output_item.done`). */
  const rest = (call: OpenCall | undefined, whole: string | undefined): ReadonlyArray<ProviderChunk> => {
    if (call === undefined || whole === undefined || !whole.startsWith(call.args) || whole === call.args) return []
    const argumentsDelta = whole.slice(call.args.length)
    call.args = whole
    return [{ _tag: "ToolCallDelta", index: call.index, argumentsDelta }]
  }
  const finish = (response: Item | undefined, reason: FinishReason): Step => {
    const usage = usageOf(objectAt(response, "usage"))
    const kept: Array<ProviderChunk> = reasoningKept ? items.map((block) => ({ _tag: "ProviderBlock", block })) : []
    const responseId = stringAt(response, "id")
    const responseModel = stringAt(response, "model")
    return {
      done: true,
      chunks: [...kept, {
        _tag: "Finish",
        reason,
        ...(usage === undefined ? {} : { usage }),
        ...(responseId ? { responseId } : {}),
        ...(responseModel ? { responseModel } : {})
      }]
    }
  }
  const feed = (event: Sse.Event): Step | ProviderError => {
    const payload = parseObject(event.data)
    if (payload === undefined) return new MalformedResponse({ message: `Invalid JSON in stream: ${excerpt(event.data)}` })
    switch (stringAt(payload, "type") ?? event.event) {
      case "response.output_item.added": {
        const item = objectAt(payload, "item")
        if (stringAt(item, "type") !== "function_call") return next()
        const id = stringAt(item, "call_id")
        const name = stringAt(item, "name")
        if (id === undefined || name === undefined) return new MalformedResponse({ message: `function_call item without call_id or name: ${excerpt(event.data)}` })
        const call: OpenCall = { index: calls.size, args: stringAt(item, "arguments") ?? "" }
        calls.set(stringAt(item, "id") ?? id, call)
        const output = numberAt(payload, "output_index")
        if (output !== undefined) byOutput.set(output, call)
        return next([{ _tag: "ToolCallDelta", index: call.index, id, name, argumentsDelta: call.args }])
      }
      case "response.function_call_arguments.delta": {
        const call = callOf(payload)
        if (call === undefined) return new MalformedResponse({ message: `Arguments for an unknown function call: ${excerpt(event.data)}` })
        const delta = stringAt(payload, "delta") ?? ""
        call.args += delta
        return next(delta === "" ? [] : [{ _tag: "ToolCallDelta", index: call.index, argumentsDelta: delta }])
      }
      case "response.function_call_arguments.done":
        return next(rest(callOf(payload), stringAt(payload, "arguments")))
      case "response.output_text.delta":
      case "response.refusal.delta": {
        const text = stringAt(payload, "delta")
        return next(text ? [{ _tag: "TextDelta", text }] : [])
      }
      case "response.reasoning_summary_part.added":
        // summary parts are paragraphs: a blank line between them, as the text has none
        return next(summaryParts++ > 0 ? [{ _tag: "ReasoningDelta", text: "\n\n" }] : [])
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta": {
        const text = stringAt(payload, "delta")
        return next(text ? [{ _tag: "ReasoningDelta", text }] : [])
      }
      case "response.output_item.done": {
        const item = objectAt(payload, "item")
        const id = stringAt(item, "id")
        switch (stringAt(item, "type")) {
          case "reasoning":
            if (item === undefined || typeof item["encrypted_content"] !== "string") return next()
            reasoningKept = true
            keep(item)
            return next()
          case "message":
            if (id !== undefined) keep({ type: "message", id })
            return next()
          case "function_call": {
            const callId = stringAt(item, "call_id")
            if (id !== undefined && callId !== undefined) keep({ type: "function_call", id, call_id: callId })
            return next(rest(calls.get(id ?? callId ?? ""), stringAt(item, "arguments")))
          }
          default:
            return next()
        }
      }
      case "response.completed":
        return finish(objectAt(payload, "response"), calls.size > 0 ? "tool_calls" : "stop")
      case "response.incomplete": {
        const response = objectAt(payload, "response")
        return finish(response, incompleteReason(stringAt(objectAt(response, "incomplete_details"), "reason")))
      }
      case "response.failed": {
        const response = objectAt(payload, "response")
        return fromStreamError(describeJson({ error: objectAt(response, "error") }, "The response failed"))
      }
      case "error":
        return fromStreamError(describeJson(payload, "error event"))
      default:
        return next()
    }
  }
  return {
    feed,
    end: () => new MalformedResponse({ message: "The stream ended before response.completed" })
  }
}
