/**
 * The decoder of the Anthropic Messages event stream: text, thinking (kept whole with its
 * signature) and tool calls as chunks, token counts, and one finish reason. The request side of
 * the wire format is `anthropicWire.ts`.
 */
import type * as Sse from "effect/encoding/Sse"
import { MalformedResponse, type ProviderError } from "../../domain/errors.ts"
import { jsonTooDeep, MAX_JSON_DEPTH } from "../../domain/text.ts"
import type { FinishReason, ProviderChunk } from "../../domain/Provider.ts"
import type { Usage } from "../../domain/Usage.ts"
import { PROVIDER } from "./anthropicWire.ts"
import { describeJson, fromStreamError } from "./httpErrors.ts"
import { appendHeld, excerpt, numberAt, objectAt, parseObject, type Step, stringAt, type WireDecoder } from "./sse.ts"

/** The nesting of an event around a tool's `input` (`content_block_start` → `content_block` → `input`). */
const EVENT_DEPTH = 8

/** The library's finish reason for an Anthropic `stop_reason`. */
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
    case "refusal":
      return "content_filter"
    default:
      return "other"
  }
}

/** An open content block; a thinking block gathers its text and signature to be kept whole. */
type BlockKind =
  | { readonly kind: "text" | "other" }
  | { readonly kind: "tool"; readonly index: number }
  | { readonly kind: "thinking"; thinking: string; signature: string }

/** The token counts of a `usage` object; each is kept from `previous` when this one lacks it. */
interface Counts {
  readonly input: number
  readonly cacheRead: number | undefined
  readonly cacheWrite: number | undefined
  readonly output: number
}

const countsOf = (usage: Record<string, unknown> | undefined, previous: Counts): Counts => ({
  input: numberAt(usage, "input_tokens") ?? previous.input,
  cacheRead: numberAt(usage, "cache_read_input_tokens") ?? previous.cacheRead,
  cacheWrite: numberAt(usage, "cache_creation_input_tokens") ?? previous.cacheWrite,
  output: numberAt(usage, "output_tokens") ?? previous.output
})

/** Input tokens are all the tokens read (the API counts cache reads and writes apart); cache counts when reported. */
const usageOf = (counts: Counts): Usage => ({
  inputTokens: counts.input + (counts.cacheRead ?? 0) + (counts.cacheWrite ?? 0),
  outputTokens: counts.output,
  ...(counts.cacheRead === undefined ? {} : { cachedInputTokens: counts.cacheRead }),
  ...(counts.cacheWrite === undefined ? {} : { cacheWriteTokens: counts.cacheWrite })
})

/**
 * A decoder for one Messages stream. Tool calls are numbered in the order of their `tool_use`
 * blocks; token counts come from `message_start`, updated by any `message_delta` that carries
 * them (output tokens always, the others on newer API versions); one `Finish` is sent at
 * `message_stop`.
 */
export const makeDecoder = (): WireDecoder => {
  const blocks = new Map<number, BlockKind>()
  let tools = 0
  let counts: Counts = { input: 0, cacheRead: undefined, cacheWrite: undefined, output: 0 }
  let reason: FinishReason | undefined
  // the message's id and the model that answered, from `message_start`
  let named: { readonly responseId?: string; readonly responseModel?: string } = {}
  const next = (chunks: ReadonlyArray<ProviderChunk> = []): Step => ({ done: false, chunks })
  const feed = (event: Sse.Event): Step | ProviderError => {
    // a tool's `input` object is serialised again below (recursively): bound its nesting first
    if (jsonTooDeep(event.data, MAX_JSON_DEPTH + EVENT_DEPTH)) {
      return new MalformedResponse({ message: `An event nests deeper than ${MAX_JSON_DEPTH} levels: ${excerpt(event.data)}` })
    }
    const payload = parseObject(event.data)
    if (payload === undefined) return new MalformedResponse({ message: `Invalid JSON in stream: ${excerpt(event.data)}` })
    const type = event.event === "message" ? stringAt(payload, "type") : event.event
    switch (type) {
      case "message_start": {
        const message = objectAt(payload, "message")
        counts = countsOf(objectAt(message, "usage"), counts)
        const id = stringAt(message, "id")
        const model = stringAt(message, "model")
        named = { ...(id ? { responseId: id } : {}), ...(model ? { responseModel: model } : {}) }
        return next()
      }
      case "content_block_start": {
        const index = numberAt(payload, "index") ?? blocks.size
        const block = objectAt(payload, "content_block")
        switch (stringAt(block, "type")) {
          case "text": {
            blocks.set(index, { kind: "text" })
            const text = stringAt(block, "text")
            return next(text ? [{ _tag: "TextDelta", text }] : [])
          }
          case "thinking": {
            const text = stringAt(block, "thinking") ?? ""
            blocks.set(index, { kind: "thinking", thinking: text, signature: stringAt(block, "signature") ?? "" })
            return next(text ? [{ _tag: "ReasoningDelta", text }] : [])
          }
          case "redacted_thinking": {
            blocks.set(index, { kind: "other" })
            const data = stringAt(block, "data")
            return next(data === undefined ? [] : [{ _tag: "ProviderBlock", block: { provider: PROVIDER, data: { type: "redacted_thinking", data } } }])
          }
          case "tool_use": {
            const id = stringAt(block, "id")
            const name = stringAt(block, "name")
            if (id === undefined || name === undefined) return new MalformedResponse({ message: `tool_use block without id or name: ${excerpt(event.data)}` })
            const input = objectAt(block, "input")
            const toolIndex = tools++
            blocks.set(index, { kind: "tool", index: toolIndex })
            const argumentsDelta = input && Object.keys(input).length > 0 ? JSON.stringify(input) : ""
            return next([{ _tag: "ToolCallDelta", index: toolIndex, id, name, argumentsDelta }])
          }
          default:
            blocks.set(index, { kind: "other" })
            return next()
        }
      }
      case "content_block_delta": {
        const delta = objectAt(payload, "delta")
        const block = blocks.get(numberAt(payload, "index") ?? -1)
        switch (stringAt(delta, "type")) {
          case "text_delta": {
            const text = stringAt(delta, "text")
            return next(text ? [{ _tag: "TextDelta", text }] : [])
          }
          case "thinking_delta": {
            const text = stringAt(delta, "thinking")
            if (block?.kind === "thinking" && text) block.thinking += text
            return next(text ? [{ _tag: "ReasoningDelta", text }] : [])
          }
          case "signature_delta": {
            const signature = stringAt(delta, "signature")
            if (block?.kind === "thinking" && signature) {
              const held = appendHeld(block.signature, signature, "A thinking block's signature")
              if (typeof held !== "string") return held
              block.signature = held
            }
            return next()
          }
          case "input_json_delta": {
            if (block?.kind !== "tool") return new MalformedResponse({ message: `input_json_delta outside a tool_use block: ${excerpt(event.data)}` })
            const json = stringAt(delta, "partial_json")
            return next(json ? [{ _tag: "ToolCallDelta", index: block.index, argumentsDelta: json }] : [])
          }
          default:
            return next()
        }
      }
      case "content_block_stop": {
        // a thinking block is kept once complete, and only signed: the API refuses unsigned ones
        const block = blocks.get(numberAt(payload, "index") ?? -1)
        if (block?.kind !== "thinking" || block.signature === "") return next()
        return next([{
          _tag: "ProviderBlock",
          block: { provider: PROVIDER, data: { type: "thinking", thinking: block.thinking, signature: block.signature } }
        }])
      }
      case "message_delta": {
        const stop = stringAt(objectAt(payload, "delta"), "stop_reason")
        if (stop) reason = finishReason(stop)
        counts = countsOf(objectAt(payload, "usage"), counts)
        return next()
      }
      case "message_stop":
        return { done: true, chunks: [{ _tag: "Finish", reason: reason ?? "stop", usage: usageOf(counts), ...named }] }
      case "error":
        return fromStreamError(describeJson(payload, "error event"))
      default:
        return next()
    }
  }
  return {
    feed,
    end: () => new MalformedResponse({ message: "The stream ended before message_stop" })
  }
}
