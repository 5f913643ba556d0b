/**
 * The Amazon Bedrock Converse wire format: the request body of `ConverseStream` (system blocks,
 * messages of content blocks, `toolConfig`, `inferenceConfig`, Claude's thinking in
 * `additionalModelRequestFields`, `cachePoint` blocks), the decoder of its events, and the
 * mapping of its exceptions to the library's errors.
 */
import type * as Sse from "effect/encoding/Sse"
import { ContextLengthExceeded, MalformedResponse, type ProviderError, ProviderRejected, ProviderUnavailable, RateLimited } from "../../domain/errors.ts"
import { type AssistantMessage, blockFor, type Content, type ContentPart, imagePlaceholder, inlineOf, type Message } from "../../domain/Message.ts"
import type { FinishReason, ProviderChunk, ProviderRequest } from "../../domain/Provider.ts"
import type { Usage } from "../../domain/Usage.ts"
import { alternating, type Block, check as anthropicCheck, thinkingBudget, type WireMessage } from "./anthropicWire.ts"
import { fromResponse, isContextLength } from "./httpErrors.ts"
import { appendHeld, argumentsObject, excerpt, numberAt, objectAt, parseObject, type Step, stringAt, type WireDecoder } from "./sse.ts"
import { type SchemaPolicy, toolSchemaFor } from "./toolSchema.ts"


/** The `provider` of the blocks this wire keeps (`AssistantMessage.providerBlocks`). */
export const PROVIDER = "bedrock"

/** The API's limit on `cachePoint` blocks in one request. */
export const MAX_CACHE_POINTS = 4

const CACHE_POINT: Block = { cachePoint: { type: "default" } }

/** Whether a model id is one of Anthropic's Claude models, whose Converse options follow the Messages API. */
export const isClaude = (model: string): boolean => /anthropic\.claude|claude-/i.test(model)

/** Whether a model takes `cachePoint` blocks: Claude (3.5 Haiku, 3.7 Sonnet, 4 and later) and Amazon Nova. */
export const cachesPrompts = (model: string): boolean =>
  (isClaude(model) && !/claude-3-(?:haiku|sonnet|opus|5-sonnet)/i.test(model)) || /amazon\.nova/i.test(model)

/** Claude accepts JSON Schema as it is, `additionalProperties` included; `$schema` goes. */
const schemaPolicy: SchemaPolicy = { additionalProperties: true }

const FORMATS: Readonly<Record<string, string>> = { "image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif", "image/webp": "webp" }

/**
 * An image block: inline bytes (base64 in JSON). Converse takes no URLs but S3 ones, so an image
 * by URL is said in text, and the model at least knows it was there.
 */
const imageBlock = (part: Extract<ContentPart, { type: "image" }>): Block => {
  const inline = inlineOf(part)
  const format = inline === undefined ? undefined : FORMATS[inline.mediaType]
  if (inline === undefined || format === undefined) return { text: imagePlaceholder(part) }
  return { image: { format, source: { bytes: inline.data } } }
}

/** Content parts as blocks; the API refuses blank text blocks, so those go. */
const contentBlocks = (content: Content): Array<Block> =>
  typeof content === "string"
    ? (content.trim() === "" ? [] : [{ text: content }])
    : content.flatMap((part) => part.type === "text" ? (part.text.trim() === "" ? [] : [{ text: part.text }]) : [imageBlock(part)])

/** What a tool result with nothing in it says: the API refuses an empty one. */
export const EMPTY_RESULT = "(no output)"

/** A tool id as the API accepts it: letters, digits, `_` and `-`, at most 64 (ids from other providers can differ). */
export const toolUseId = (id: string): string => id.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64)

/** The signed reasoning and redacted blocks of a reply, first in its content as Claude wants them. */
const reasoningBlocksOf = (message: AssistantMessage, model: string): Array<Block> =>
  (message.providerBlocks ?? []).flatMap((block) => blockFor(block, PROVIDER, model) ? [{ reasoningContent: block.data }] : [])

/**
 * The blocks of one message. With `toolsAsText` (a request without tools, such as the summary of a
 * graceful interrupt, may not carry tool blocks), tool calls and results become text.
 */
const blocksOf = (message: Exclude<Message, { role: "system" }>, toolsAsText: boolean, thinking: string | undefined): Array<Block> => {
  switch (message.role) {
    case "user":
      return contentBlocks(message.content)
    case "assistant":
      return [
        ...(thinking === undefined ? [] : reasoningBlocksOf(message, thinking)),
        ...(message.content.trim() === "" ? [] : [{ text: message.content }]),
        ...(message.toolCalls ?? []).map((call) =>
          toolsAsText
            ? { text: `[called tool ${call.name} with ${call.arguments.trim() === "" ? "{}" : call.arguments}]` }
            : { toolUse: { toolUseId: toolUseId(call.id), name: call.name, input: argumentsObject(call.arguments) ?? {} } }
        )
      ]
    case "tool": {
      const content = contentBlocks(message.content)
      if (toolsAsText) {
        return [{ text: `[${message.isError ? "error from" : "result of"} tool ${message.toolName}]` }, ...content]
      }
      return [{
        toolResult: {
          toolUseId: toolUseId(message.toolCallId),
          content: content.length === 0 ? [{ text: EMPTY_RESULT }] : content,
          status: message.isError ? "error" : "success"
        }
      }]
    }
  }
}

/** The messages in the API's shape: consecutive messages of one role merge, since the roles must alternate. */
export const toWireMessages = (messages: ReadonlyArray<Message>, toolsAsText: boolean, thinking: string | undefined): Array<WireMessage> =>
  alternating(messages, (message) => blocksOf(message, toolsAsText, thinking))

/** Puts cache points after the last block of the last `count` user messages (at most two), as the Anthropic wire does. */
const markCache = (messages: ReadonlyArray<WireMessage>, count: number): void => {
  let left = Math.min(count, 2)
  for (let i = messages.length - 1; i >= 0 && left > 0; i--) {
    const message = messages[i]!
    if (message.role !== "user") continue
    message.content.push(CACHE_POINT)
    left--
  }
}

/** How the request is written. */
export interface WireOptions {
  /** `cachePoint` blocks on the system prompt, the tools and the newest user messages; default: for the models that take them. */
  readonly promptCaching?: boolean
}

/** What the API would refuse, said before sending: Claude's limits on thinking and temperature. */
export const check = (request: ProviderRequest): ProviderError | undefined => {
  if (!isClaude(request.model)) return undefined
  const refused = anthropicCheck(request)
  return refused === undefined ? undefined : new ProviderRejected({ message: refused.message.replace(/^Anthropic/, "Bedrock (Claude)") })
}

/**
 * The JSON body of a `ConverseStream` request (the model is in the URL). Claude thinks with the
 * budget of `reasoning` (as on the Anthropic wire), sent in `additionalModelRequestFields`, and
 * gets its signed reasoning blocks back; a typed answer comes through the answer tool, forced with
 * `toolChoice` when it is due (not while thinking, which Claude refuses).
 */
export const requestBody = (request: ProviderRequest, options: WireOptions = {}) => {
  const caching = options.promptCaching ?? cachesPrompts(request.model)
  const system = request.messages.flatMap((m) => m.role === "system" ? [m.content] : []).join("\n\n")
  const budget = isClaude(request.model) ? thinkingBudget(request) : undefined
  const messages = toWireMessages(request.messages, request.tools.length === 0, budget === undefined ? undefined : request.model)
  const tools: Array<Block> = request.tools.map((tool) => ({
    toolSpec: { name: tool.name, description: tool.description, inputSchema: { json: toolSchemaFor(tool.parameters, schemaPolicy) } }
  }))
  if (caching) {
    // Claude caches the tool list too; Nova caches the system prompt and the messages only
    const toolsCached = tools.length > 0 && isClaude(request.model)
    if (toolsCached) tools.push(CACHE_POINT)
    markCache(messages, MAX_CACHE_POINTS - (system === "" ? 0 : 1) - (toolsCached ? 1 : 0))
  }
  const output = request.output
  const inferenceConfig = {
    ...(request.maxTokens === undefined ? {} : { maxTokens: request.maxTokens }),
    // with thinking on, Claude takes no temperature and no top_p below 0.95 (as on the Anthropic wire)
    ...(request.temperature === undefined || budget !== undefined ? {} : { temperature: request.temperature }),
    ...(request.topP === undefined || (budget !== undefined && request.topP < 0.95) ? {} : { topP: request.topP }),
    ...(request.stop === undefined ? {} : { stopSequences: request.stop })
  }
  const forced = output?.force === true && budget === undefined && request.tools.some((tool) => tool.name === output.name)
  return {
    messages,
    ...(system === "" ? {} : { system: caching ? [{ text: system }, CACHE_POINT] : [{ text: system }] }),
    ...(Object.keys(inferenceConfig).length === 0 ? {} : { inferenceConfig }),
    ...(tools.length === 0 ? {} : { toolConfig: { tools, ...(forced ? { toolChoice: { tool: { name: output!.name } } } : {}) } }),
    ...(budget === undefined ? {} : { additionalModelRequestFields: { thinking: { type: "enabled", budget_tokens: budget } } })
  }
}

/** The library's finish reason for a Converse `stopReason`. */
export const finishReason = (reason: string): FinishReason => {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
      return "stop"
    case "tool_use":
      return "tool_calls"
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length"
    case "guardrail_intervened":
    case "content_filtered":
      return "content_filter"
    default:
      return "other"
  }
}

/** Bedrock's words for a prompt over the model's window (its own, and Claude's through it). */
const overflow = (message: string) => isContextLength(message) || /input is too long|too many input tokens/i.test(message)

/**
 * The error of an exception the API reports inside the stream, by its `:exception-type`:
 * throttling waits (its message can say "too many tokens", which is not an overflow), the
 * service's own failures are retried, a prompt over the window is an overflow, the rest is refused.
 */
export const fromException = (type: string, message: string): ProviderError => {
  const kind = type.replace(/Exception$/i, "").toLowerCase()
  if (kind === "throttling" || kind === "servicequotaexceeded") return new RateLimited({ message })
  if (overflow(message)) return new ContextLengthExceeded({ message })
  switch (kind) {
    case "internalserver":
    case "serviceunavailable":
    case "modelstreamerror":
    case "modeltimeout":
    case "modelnotready":
      return new ProviderUnavailable({ message })
    default:
      return new ProviderRejected({ message })
  }
}

/**
 * The error of a failed response: as for every HTTP API (the status decides; `Retry-After` is
 * kept), but a `ValidationException` whose words say the input is too long is an overflow, and a
 * `ModelErrorException` is the model failing, retried.
 */
export const fromHttpResponse = (response: Parameters<typeof fromResponse>[0]): ProviderError => {
  const error = fromResponse(response)
  const type = response.headers["x-amzn-errortype"] ?? ""
  if (error._tag !== "ProviderRejected") return error
  if (/^ValidationException/i.test(type) && overflow(error.message)) return new ContextLengthExceeded({ message: error.message })
  // 424 ModelErrorException: the model failed while processing, which another try can get past
  if (/^ModelErrorException/i.test(type)) return new ProviderUnavailable({ message: error.message, status: response.status })
  return error
}

/** A reasoning block being streamed: its text and signature are kept whole for the next request. */
interface Reasoning {
  text: string
  signature: string
}

/** The token counts of a `metadata` event: input counts every token read, cache reads and writes included. */
const usageOf = (usage: Record<string, unknown> | undefined): Usage | undefined => {
  if (usage === undefined) return undefined
  const input = numberAt(usage, "inputTokens") ?? 0
  const cacheRead = numberAt(usage, "cacheReadInputTokens")
  const cacheWrite = numberAt(usage, "cacheWriteInputTokens")
  return {
    inputTokens: input + (cacheRead ?? 0) + (cacheWrite ?? 0),
    outputTokens: numberAt(usage, "outputTokens") ?? 0,
    ...(cacheRead === undefined ? {} : { cachedInputTokens: cacheRead }),
    ...(cacheWrite === undefined ? {} : { cacheWriteTokens: cacheWrite })
  }
}

/**
 * A decoder for one ConverseStream response, fed one event per frame (`event` is the frame's
 * `:event-type`, `data` its JSON payload). Tool calls are numbered in the order their blocks
 * start; the stop reason of `messageStop` and the usage of the `metadata` after it make one
 * `Finish`.
 */
export const makeDecoder = (): WireDecoder => {
  const tools = new Map<number, number>()
  const reasoning = new Map<number, Reasoning>()
  // the signatures of the open reasoning blocks together: held, and not yet counted as the reply's
  let heldSignatures = 0
  let reason: FinishReason | undefined
  const next = (chunks: ReadonlyArray<ProviderChunk> = []): Step => ({ done: false, chunks })
  const feed = (event: Sse.Event): Step | ProviderError => {
    const payload = parseObject(event.data)
    if (payload === undefined) return new MalformedResponse({ message: `Invalid JSON in stream: ${excerpt(event.data)}` })
    const index = numberAt(payload, "contentBlockIndex") ?? 0
    switch (event.event) {
      case "contentBlockStart": {
        const toolUse = objectAt(objectAt(payload, "start"), "toolUse")
        if (toolUse === undefined) return next()
        const id = stringAt(toolUse, "toolUseId")
        const name = stringAt(toolUse, "name")
        if (id === undefined || name === undefined) return new MalformedResponse({ message: `toolUse block without id or name: ${excerpt(event.data)}` })
        const toolIndex = tools.size
        tools.set(index, toolIndex)
        return next([{ _tag: "ToolCallDelta", index: toolIndex, id, name, argumentsDelta: "" }])
      }
      case "contentBlockDelta": {
        const delta = objectAt(payload, "delta")
        const text = stringAt(delta, "text")
        if (text !== undefined) return next(text === "" ? [] : [{ _tag: "TextDelta", text }])
        const toolUse = objectAt(delta, "toolUse")
        if (toolUse !== undefined) {
          const toolIndex = tools.get(index)
          if (toolIndex === undefined) return new MalformedResponse({ message: `toolUse delta outside a toolUse block: ${excerpt(event.data)}` })
          const input = stringAt(toolUse, "input") ?? ""
          return next(input === "" ? [] : [{ _tag: "ToolCallDelta", index: toolIndex, argumentsDelta: input }])
        }
        const thought = objectAt(delta, "reasoningContent")
        if (thought === undefined) return next()
        const redacted = stringAt(thought, "redactedContent")
        if (redacted !== undefined) return next([{ _tag: "ProviderBlock", block: { provider: PROVIDER, data: { redactedContent: redacted } } }])
        const block = reasoning.get(index) ?? { text: "", signature: "" }
        reasoning.set(index, block)
        const piece = stringAt(thought, "text")
        const signature = appendHeld(block.signature, stringAt(thought, "signature") ?? "", "A reasoning block's signature", heldSignatures - block.signature.length)
        if (typeof signature !== "string") return signature
        heldSignatures += signature.length - block.signature.length
        block.signature = signature
        if (piece === undefined || piece === "") return next()
        block.text += piece
        return next([{ _tag: "ReasoningDelta", text: piece }])
      }
      case "contentBlockStop": {
        // reasoning is kept once complete, and only signed: Claude refuses unsigned blocks
        const block = reasoning.get(index)
        reasoning.delete(index)
        if (block !== undefined) heldSignatures -= block.signature.length
        if (block === undefined || block.signature === "") return next()
        return next([{ _tag: "ProviderBlock", block: { provider: PROVIDER, data: { reasoningText: { text: block.text, signature: block.signature } } } }])
      }
      case "messageStop": {
        reason = finishReason(stringAt(payload, "stopReason") ?? "")
        return next()
      }
      case "metadata":
        if (reason === undefined) return new MalformedResponse({ message: "metadata before messageStop" })
        return { done: true, chunks: [finished(reason, usageOf(objectAt(payload, "usage")))] }
      default:
        return next()
    }
  }
  return {
    feed,
    // The usage comes after the stop; a body that ends between them still finished.
    end: () => reason === undefined ? new MalformedResponse({ message: "The stream ended before messageStop" }) : [finished(reason, undefined)]
  }
}

const finished = (reason: FinishReason, usage: Usage | undefined): ProviderChunk => ({ _tag: "Finish", reason, ...(usage === undefined ? {} : { usage }) })
