/**
 * The Anthropic Messages wire format: the request body (system prompt on top, tool results as
 * user `tool_result` blocks, tool calls as `tool_use` blocks); its event stream is decoded by
 * `anthropicStream.ts`.
 */
import { type ProviderError, ProviderRejected } from "../../domain/errors.ts"
import {
  type AssistantMessage,
  blockFor,
  type Content,
  type ContentPart,
  type ImagePart,
  type ImageUrlPart,
  inlineOf,
  type Message,
  textOf
} from "../../domain/Message.ts"
import { budgetForEffort } from "../../domain/ModelOptions.ts"
import type { ProviderRequest } from "../../domain/Provider.ts"
import { argumentsObject } from "./sse.ts"
import { type SchemaPolicy, toolSchemaFor } from "./toolSchema.ts"

/** The output limit sent when a request has none: the API requires one. */
export const defaultMaxTokens = 4096

/** A content block of a Messages-style API (Anthropic's, and Bedrock's Converse). */
export type Block = Record<string, unknown>
/** A message of a Messages-style API: a role and its blocks. */
export interface WireMessage {
  readonly role: "user" | "assistant"
  readonly content: Array<Block>
}

/**
 * The messages as alternating user and assistant messages of `blocksOf`'s blocks: system messages
 * are left out (they go apart), messages without blocks too, and consecutive messages of one role
 * merge, since these APIs require the roles to alternate.
 */
export const alternating = (
  messages: ReadonlyArray<Message>,
  blocksOf: (message: Exclude<Message, { role: "system" }>) => Array<Block>
): Array<WireMessage> => {
  const out: Array<WireMessage> = []
  for (const message of messages) {
    if (message.role === "system") continue
    const role = message.role === "assistant" ? "assistant" : "user"
    const blocks = blocksOf(message)
    if (blocks.length === 0) continue
    const last = out.at(-1)
    if (last && last.role === role) last.content.push(...blocks)
    else out.push({ role, content: blocks })
  }
  return out
}

/** An image block: inline as a `base64` source, else a `url` source (a `data:` URL is sent inline). */
const imageBlock = (part: ImagePart): Block => {
  const inline = inlineOf(part)
  if (inline) return { type: "image", source: { type: "base64", media_type: inline.mediaType, data: inline.data } }
  return { type: "image", source: { type: "url", url: (part as ImageUrlPart).url } }
}

/** Content parts as blocks; the API rejects empty text blocks, so those go. */
const contentBlocks = (parts: ReadonlyArray<ContentPart>): Array<Block> =>
  parts.flatMap((part) => part.type === "text" ? (part.text.trim() === "" ? [] : [{ type: "text", text: part.text }]) : [imageBlock(part)])

/** What the official clients write in a tool result that is only images. */
export const IMAGE_ONLY_RESULT = "(see attached image)"

/**
 * A `tool_result`'s content: text as a string; with images, blocks (a text block first when
 * there is no text, as the official clients send).
 */
const toolResultContent = (content: Content): string | Array<Block> => {
  if (typeof content === "string") return content
  if (!content.some((part) => part.type === "image")) return textOf(content)
  const blocks = contentBlocks(content)
  return blocks.some((block) => block["type"] === "text") ? blocks : [{ type: "text", text: IMAGE_ONLY_RESULT }, ...blocks]
}

/**
 * The blocks of one message. With `toolsAsText`, tool calls and results become text blocks: the
 * API rejects `tool_use` and `tool_result` blocks in a request that defines no tools (the
 * graceful-interrupt summary is such a request), and a text rendering keeps what they said.
 */
const blocksOf = (message: Exclude<Message, { role: "system" }>, toolsAsText: boolean, thinking: string | undefined): Array<Block> => {
  switch (message.role) {
    case "user":
      return typeof message.content === "string" ? [{ type: "text", text: message.content }] : contentBlocks(message.content)
    case "assistant":
      return [
        ...(thinking === undefined ? [] : thinkingBlocksOf(message, thinking)),
        ...(message.content === "" ? [] : [{ type: "text", text: message.content }]),
        ...(message.toolCalls ?? []).map((call) =>
          toolsAsText
            ? { type: "text", text: `[called tool ${call.name} with ${call.arguments.trim() === "" ? "{}" : call.arguments}]` }
            : { type: "tool_use", id: call.id, name: call.name, input: argumentsObject(call.arguments) ?? {} }
        )
      ]
    case "tool":
      if (toolsAsText) {
        const images = typeof message.content === "string" ? [] : message.content.flatMap((p) => p.type === "image" ? [imageBlock(p)] : [])
        const text = typeof message.content === "string"
          ? message.content
          : message.content.flatMap((p) => p.type === "text" ? [p.text] : []).join("\n")
        return [{ type: "text", text: `[${message.isError ? "error from" : "result of"} tool ${message.toolName}]\n${text}` }, ...images]
      }
      return [{
        type: "tool_result",
        tool_use_id: message.toolCallId,
        content: toolResultContent(message.content),
        ...(message.isError ? { is_error: true } : {})
      }]
  }
}

/**
 * The signed thinking and redacted thinking blocks of a reply, first in its content as the API
 * wants them: it checks their signatures when a tool result answers the reply.
 */
const thinkingBlocksOf = (message: AssistantMessage, model: string): Array<Block> =>
  (message.providerBlocks ?? []).flatMap((block) => blockFor(block, PROVIDER, model) ? [block.data] : [])

/**
 * The messages in the API's shape. Consecutive messages of one role (tool results, steering
 * after them) merge into one message, since the API wants user and assistant to alternate; a
 * lone user text stays a plain string unless `keepBlocks` (the form prompt caching needs, see
 * `markCache`). `toolsAsText` renders tool blocks as text (see `blocksOf`).
 * Thinking blocks go back only to a request with thinking on (`thinking` is then its model, and
 * only that model's blocks go): with it off the API has no use for them (it drops those of earlier
 * turns anyway).
 */
export const toWireMessages = (
  messages: ReadonlyArray<Message>,
  toolsAsText = false,
  thinking: string | undefined = undefined,
  keepBlocks = false
): Array<WireMessage | { role: "user"; content: string }> => {
  const out = alternating(messages, (message) => blocksOf(message, toolsAsText, thinking))
  if (keepBlocks) return out
  return out.map((m) =>
    m.role === "user" && m.content.length === 1 && m.content[0]!["type"] === "text" ? { role: "user", content: m.content[0]!["text"] as string } : m
  )
}

/** Anthropic accepts the whole of JSON Schema in `input_schema`, `additionalProperties` included. */
export const anthropicSchemaPolicy: SchemaPolicy = { additionalProperties: true }

/** How the request is written. */
export interface WireOptions {
  /** Mark the stable prefix for the prompt cache (`cache_control` breakpoints); default true. */
  readonly promptCaching?: boolean
}

/** The API's limit on `cache_control` breakpoints in one request. */
export const MAX_CACHE_BREAKPOINTS = 4

/** The marker of a prompt-cache breakpoint: the prefix up to and including the block is cached (5 minutes). */
const EPHEMERAL = { type: "ephemeral" } as const

/**
 * Puts the conversation's cache breakpoints on the last block of the last `count` user messages
 * (at most two). The last is the newest prefix, written to the cache for the next call; the one
 * before is where the previous call of the turn put its last breakpoint, so this call reads what
 * that one wrote even when more than the API's 20-block lookback was added since.
 */
const markCache = (messages: ReadonlyArray<WireMessage>, count: number): void => {
  let left = Math.min(count, 2)
  for (let i = messages.length - 1; i >= 0 && left > 0; i--) {
    const message = messages[i]!
    if (message.role !== "user" || message.content.length === 0) continue
    message.content[message.content.length - 1] = { ...message.content.at(-1)!, cache_control: EPHEMERAL }
    left--
  }
}

/** The `provider` of the blocks this wire keeps (`AssistantMessage.providerBlocks`). */
export const PROVIDER = "anthropic"

/** The smallest thinking budget the API accepts. */
export const minThinkingBudget = 1024

/**
 * The thinking budget of a request: `reasoning.budgetTokens`, else one derived from
 * `reasoning.effort` (`budgetForEffort`), cut to leave at least `minThinkingBudget` tokens of a
 * given `maxTokens` for the answer; `undefined`: no thinking.
 */
export const thinkingBudget = (request: ProviderRequest): number | undefined => {
  const reasoning = request.reasoning
  if (reasoning?.budgetTokens !== undefined) return reasoning.budgetTokens
  if (reasoning?.effort === undefined) return undefined
  const wanted = budgetForEffort[reasoning.effort]
  return request.maxTokens === undefined ? wanted : Math.min(wanted, request.maxTokens - minThinkingBudget)
}

/**
 * What the API refuses about thinking and sampling, said before sending: a budget under its
 * minimum or not under the output limit (thinking counts against it), a temperature over 1.
 */
export const check = (request: ProviderRequest): ProviderError | undefined => {
  const budget = thinkingBudget(request)
  if (budget !== undefined && budget < minThinkingBudget) {
    return new ProviderRejected({
      message: request.reasoning?.budgetTokens === undefined
        ? `Anthropic: maxTokens ${request.maxTokens} leaves no room for thinking (at least ${minThinkingBudget} tokens) and an answer`
        : `Anthropic: reasoning.budgetTokens must be at least ${minThinkingBudget}, got ${budget}`
    })
  }
  if (budget !== undefined && request.maxTokens !== undefined && budget >= request.maxTokens) {
    return new ProviderRejected({
      message: `Anthropic: reasoning.budgetTokens (${budget}) must be less than maxTokens (${request.maxTokens}): thinking counts against the output limit`
    })
  }
  if (request.temperature !== undefined && request.temperature > 1) {
    return new ProviderRejected({ message: `Anthropic: temperature must be between 0 and 1, got ${request.temperature}` })
  }
  return undefined
}

/**
 * The sampling fields. With thinking on, the API takes neither a temperature nor a `top_p` below
 * 0.95: those are left out rather than refused, so one configuration serves turns with and
 * without thinking. Anthropic has no `seed`; it is ignored.
 */
const samplingFields = (request: ProviderRequest, budget: number | undefined) => ({
  ...(budget === undefined ? {} : { thinking: { type: "enabled", budget_tokens: budget } }),
  ...(request.temperature === undefined || budget !== undefined ? {} : { temperature: request.temperature }),
  ...(request.topP === undefined || (budget !== undefined && request.topP < 0.95) ? {} : { top_p: request.topP }),
  ...(request.stop === undefined ? {} : { stop_sequences: request.stop })
})

/**
 * The JSON body of a streaming Messages request. The output limit is `maxTokens`, else the
 * default plus the thinking budget, so that thinking does not eat the answer's share. With prompt
 * caching (the default) the system prompt, the last tool and the last two user messages carry
 * `cache_control` breakpoints — at most `MAX_CACHE_BREAKPOINTS` — and messages keep the block
 * form, so that each call's prefix is byte for byte the start of the next one's. A typed answer
 * that is due (`output.force`) forces its tool with `tool_choice`; otherwise the answer tool is
 * offered beside the others. With thinking on the API refuses a forced tool (only `auto` and
 * `none` go with thinking), so the answer is not forced: the loop's feedback, which asks for the
 * answer tool, is what brings it.
 */
export const requestBody = (request: ProviderRequest, options: WireOptions = {}) => {
  const caching = options.promptCaching ?? true
  const system = request.messages.flatMap((m) => m.role === "system" ? [m.content] : []).join("\n\n")
  const budget = thinkingBudget(request)
  const tools = request.tools.map((tool, i, all) => ({
    name: tool.name,
    description: tool.description,
    input_schema: toolSchemaFor(tool.parameters, anthropicSchemaPolicy),
    ...(caching && i === all.length - 1 ? { cache_control: EPHEMERAL } : {})
  }))
  const messages = toWireMessages(request.messages, request.tools.length === 0, budget === undefined ? undefined : request.model, caching)
  if (caching) markCache(messages as Array<WireMessage>, MAX_CACHE_BREAKPOINTS - (system === "" ? 0 : 1) - (tools.length > 0 ? 1 : 0))
  const output = request.output
  return {
    model: request.model,
    max_tokens: request.maxTokens ?? defaultMaxTokens + (budget ?? 0),
    stream: true,
    ...(system === "" ? {} : { system: caching ? [{ type: "text", text: system, cache_control: EPHEMERAL }] : system }),
    ...samplingFields(request, budget),
    messages,
    ...(tools.length > 0 ? { tools } : {}),
    ...(output?.force && budget === undefined && tools.some((tool) => tool.name === output.name)
      ? { tool_choice: { type: "tool", name: output.name } }
      : {})
  }
}
