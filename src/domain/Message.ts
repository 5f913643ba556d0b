/**
 * Conversation messages: the history a turn reads and extends. User input and tool results are
 * text or content parts (text and images); system prompts and replies are text.
 *
 * @example
 * ```ts
 * import { Message } from "effect-agent-loop"
 * const pngBase64 = "iVBORw0KGgo="
 * const question = Message.user([Message.text("What is in this picture?"), Message.image("image/png", pngBase64)])
 * const history = [Message.system("Be brief."), question]
 * Message.textOf(question.content) // "What is in this picture?\n[image image/png, 8 bytes]"
 * ```
 */
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { ContentRejected } from "./errors.ts"

/** A piece of text in a content array. */
export const TextPart = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String
})
export type TextPart = typeof TextPart.Type

/** An image carried inline: base64 `data` (no `data:` prefix) and its media type (`image/png`). */
export const ImageDataPart = Schema.Struct({
  type: Schema.Literal("image"),
  mediaType: Schema.String,
  data: Schema.String
})
export type ImageDataPart = typeof ImageDataPart.Type

/** An image the provider fetches from a URL (`https:`, or a `data:` URL). */
export const ImageUrlPart = Schema.Struct({
  type: Schema.Literal("image"),
  url: Schema.String,
  mediaType: Schema.optionalKey(Schema.String)
})
export type ImageUrlPart = typeof ImageUrlPart.Type

/**
 * An image: inline or by URL. Encoded as one struct (the two kinds share their `type`, so the
 * cluster's binary encoding could not tell them apart as a union), decoded to one of the two.
 */
export const ImagePart = Schema.Struct({
  type: Schema.Literal("image"),
  mediaType: Schema.optionalKey(Schema.String),
  data: Schema.optionalKey(Schema.String),
  url: Schema.optionalKey(Schema.String)
}).pipe(Schema.decodeTo(
  Schema.Union([ImageDataPart, ImageUrlPart]),
  SchemaTransformation.passthroughSupertype()
))
export type ImagePart = typeof ImagePart.Type

/** One part of a user message or tool result. */
export const ContentPart = Schema.Union([TextPart, ImagePart])
export type ContentPart = typeof ContentPart.Type

/** What a user message or tool result holds: text, or parts (sessions written before parts hold text). */
export const Content = Schema.Union([Schema.String, Schema.Array(ContentPart)])
export type Content = typeof Content.Type

/** A tool call as the model produced it; `arguments` is the raw JSON text. */
export const ToolCall = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  arguments: Schema.String
})
export type ToolCall = typeof ToolCall.Type

/** The system prompt. */
export const SystemMessage = Schema.Struct({
  role: Schema.Literal("system"),
  content: Schema.String
})
export type SystemMessage = typeof SystemMessage.Type

/** Input from the user (also steering, follow-ups, hook feedback). */
export const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  content: Content
})
export type UserMessage = typeof UserMessage.Type

/**
 * Provider data that must go back to the provider with the message it came in, as it came:
 * Anthropic `thinking` blocks (with their signatures) and `redacted_thinking` blocks, OpenAI
 * Responses `reasoning` items (with their encrypted content) and the ids of the output items that
 * follow them. Opaque to the loop; `provider` names the wire that made it (`anthropic`,
 * `openai-responses`) and `model` the model (the loop sets it): the block goes back to that wire
 * and that model only, since signatures and encrypted reasoning are valid for them alone.
 */
export const ProviderBlock = Schema.Struct({
  provider: Schema.String,
  model: Schema.optionalKey(Schema.String),
  data: Schema.Record(Schema.String, Schema.Unknown)
})

/** Whether a block goes back in a request to `model` on the wire `provider` (a block of no model goes to any). */
export const blockFor = (block: ProviderBlock, provider: string, model: string): boolean =>
  block.provider === provider && (block.model === undefined || block.model === model)
export type ProviderBlock = typeof ProviderBlock.Type

/**
 * A reply of the model. `partial` marks text that arrived before the provider
 * failed, kept so that nothing the user saw is lost. `reasoning` is the reasoning text as it
 * streamed; `providerBlocks` what the provider needs back (see `ProviderBlock`).
 */
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: Schema.String,
  reasoning: Schema.optionalKey(Schema.String),
  toolCalls: Schema.optionalKey(Schema.Array(ToolCall)),
  partial: Schema.optionalKey(Schema.Boolean),
  providerBlocks: Schema.optionalKey(Schema.Array(ProviderBlock))
})
export type AssistantMessage = typeof AssistantMessage.Type

/** The result of one tool call, answering the call with the same id. */
export const ToolResultMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  toolCallId: Schema.String,
  toolName: Schema.String,
  content: Content,
  isError: Schema.optionalKey(Schema.Boolean)
})
export type ToolResultMessage = typeof ToolResultMessage.Type

/** Any message of a conversation. */
export const Message = Schema.Union([SystemMessage, UserMessage, AssistantMessage, ToolResultMessage])
export type Message = typeof Message.Type

/**
 * Content with `f` applied to its strings that can carry text: a string, text parts, and the URLs
 * of images (a signed URL can carry a key). Inline image data is bytes, not text, and is kept. Used
 * to scrub known secrets and to cut what hooks say.
 */
export const mapStrings = <C extends Content>(content: C, f: (text: string) => string): C =>
  (typeof content === "string"
    ? f(content)
    : content.map((part) => part.type === "text" ? { type: "text", text: f(part.text) } : "url" in part ? { ...part, url: f(part.url) } : part)) as C

/** Builds a system message. */
export const system = (content: string): SystemMessage => ({ role: "system", content })

/** Builds a user message from text or parts. */
export const user = (content: Content): UserMessage => ({ role: "user", content })

/** A text part. */
export const text = (text: string): TextPart => ({ type: "text", text })

/** An inline image part from base64 data and its media type. */
export const image = (mediaType: string, data: string): ImageDataPart => ({ type: "image", mediaType, data })

/** An image part by URL; the media type is optional (the provider reads it from the response). */
export const imageUrl = (url: string, mediaType?: string): ImageUrlPart =>
  mediaType === undefined ? { type: "image", url } : { type: "image", url, mediaType }

/** Whether a part is an image. */
export const isImage = (part: ContentPart): part is ImagePart => part.type === "image"

/** Whether content holds at least one image. */
export const hasImages = (content: Content): boolean => typeof content !== "string" && content.some(isImage)

/**
 * The largest image kept inline by default, decoded: 5 MiB, what Anthropic accepts per image
 * (OpenAI takes more). Larger ones are rejected before anything is stored or sent; a host sets its
 * own cap with `AgentLoopConfig.maxImageBytes` (and MCP's `maxImageBytes`).
 */
export const DEFAULT_MAX_IMAGE_BYTES = 5 * 1024 * 1024

/** The size in bytes of base64 data once decoded (without decoding it). */
export const decodedBytes = (base64: string): number => {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0
  return Math.floor(base64.length * 3 / 4) - padding
}

/** The short text that stands for an image where only text fits (summaries, previews, text-only models). */
export const imagePlaceholder = (part: ImagePart): string =>
  "data" in part
    ? `[image ${part.mediaType}, ${decodedBytes(part.data)} bytes]`
    : `[image ${part.url.startsWith("data:") ? `${part.url.slice(5, part.url.indexOf(";"))} (data URL)` : part.url}]`

/** The image types both vendor APIs accept inline. */
export const IMAGE_MEDIA_TYPES: ReadonlyArray<string> = ["image/png", "image/jpeg", "image/gif", "image/webp"]

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const DATA_URL = /^data:([^;,]+);base64,(.*)$/s

/** The bytes of an image that carries them: inline data, or a base64 `data:` URL; `undefined` for a URL to fetch. */
export const inlineOf = (part: ImagePart): { readonly mediaType: string; readonly data: string } | undefined => {
  if ("data" in part) return part
  const dataUrl = DATA_URL.exec(part.url)
  return dataUrl ? { mediaType: dataUrl[1]!, data: dataUrl[2]! } : undefined
}

const checkInline = (mediaType: string, data: string, maxBytes: number, at: string): ContentRejected | undefined => {
  if (!IMAGE_MEDIA_TYPES.includes(mediaType)) {
    return new ContentRejected({ reason: "invalid", message: `${at}: media type "${mediaType}" is not one of ${IMAGE_MEDIA_TYPES.join(", ")}` })
  }
  if (data.length % 4 !== 0 || !BASE64.test(data)) return new ContentRejected({ reason: "invalid", message: `${at}: data is not base64` })
  const bytes = decodedBytes(data)
  return bytes > maxBytes
    ? new ContentRejected({ reason: "too_large", message: `${at}: ${bytes} bytes is over the limit of ${maxBytes} bytes per image` })
    : undefined
}

/**
 * Why `content` cannot be taken as input, or `undefined` when it can: parts must not be empty, and
 * every image must be a PNG, JPEG, GIF or WebP of at most `maxImageBytes` decoded bytes, inline in
 * base64 or by an `http(s):` or base64 `data:` URL (a fetched image is the provider's to limit).
 */
export const checkContent = (content: Content, maxImageBytes: number): ContentRejected | undefined => {
  if (typeof content === "string") return undefined
  if (content.length === 0) return new ContentRejected({ reason: "empty", message: "The input has no parts" })
  for (const [index, part] of content.entries()) {
    if (part.type !== "image") continue
    const at = `Image ${index + 1}`
    const inline = inlineOf(part)
    if (inline) {
      const rejected = checkInline(inline.mediaType, inline.data, maxImageBytes, at)
      if (rejected) return rejected
    } else if ("url" in part && (!/^https?:\/\/[^\s]+$/i.test(part.url) || !URL.canParse(part.url))) {
      return new ContentRejected({ reason: "invalid", message: `${at}: "${part.url.slice(0, 80)}" is not an http(s) or base64 data URL` })
    }
  }
  return undefined
}

/** Content for a model that takes no images: each image becomes its text placeholder. */
export const withoutImages = <C extends Content>(content: C): C => (hasImages(content) ? textOf(content) : content) as C

/** The text view of content: text parts as they are, images as placeholders, joined by newlines. */
export const textOf = (content: Content): string =>
  typeof content === "string"
    ? content
    : content.map((part) => part.type === "text" ? part.text : imagePlaceholder(part)).join("\n")

/** Builds an assistant message; tool calls are omitted when there are none. */
export const assistant = (
  content: string,
  toolCalls: ReadonlyArray<ToolCall> = [],
  extra: { readonly reasoning?: string; readonly partial?: boolean; readonly providerBlocks?: ReadonlyArray<ProviderBlock> } = {}
): AssistantMessage => ({
  role: "assistant",
  content,
  ...(toolCalls.length > 0 ? { toolCalls } : {}),
  ...(extra.reasoning ? { reasoning: extra.reasoning } : {}),
  ...(extra.partial ? { partial: true } : {}),
  ...(extra.providerBlocks !== undefined && extra.providerBlocks.length > 0 ? { providerBlocks: extra.providerBlocks } : {})
})

/** Builds a tool result message. */
export const toolResult = (
  call: { readonly id: string; readonly name: string },
  content: Content,
  isError = false
): ToolResultMessage => ({
  role: "tool",
  toolCallId: call.id,
  toolName: call.name,
  content,
  ...(isError ? { isError: true } : {})
})

/**
 * What one image counts for in the context budget, in runes (about four per token). Vendors bill
 * images by their pixels, not their bytes: Anthropic about 1,600 tokens for a picture at its largest
 * size, OpenAI 765 for 1024×1024 at high detail. Counting the base64 text instead would make one
 * photo look like a million tokens.
 */
export const IMAGE_RUNES = 6400

/** The runes of content: its text, and `IMAGE_RUNES` per image. */
export const contentRunes = (content: Content): number =>
  typeof content === "string"
    ? content.length
    : content.reduce((n, part) => n + (part.type === "text" ? part.text.length : IMAGE_RUNES), 0)

/** The number of characters ("runes") of a message, the unit of the context budget. */
export const runes = (message: Message): number => {
  switch (message.role) {
    case "assistant":
      return message.content.length +
        (message.toolCalls ?? []).reduce((n, c) => n + c.name.length + c.arguments.length, 0)
    case "system":
      return message.content.length
    default:
      return contentRunes(message.content)
  }
}
