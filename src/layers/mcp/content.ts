/**
 * From an MCP `tools/call` result to what a model reads: text parts are kept, images become image
 * parts (up to a size cap; the loop turns them back into their text summary for a model that does
 * not accept images), and everything else is named and summarised rather than dropped silently.
 * The text is capped like the built-in tools' output.
 */
import type * as McpSchema from "effect/ai/McpSchema"
import * as Base64 from "effect/encoding/Base64"
import * as Message from "../../domain/Message.ts"
import { decodeUtf8Head } from "../../domain/text.ts"
import type { ToolOutput } from "../../domain/Tool.ts"

const summary = (block: McpSchema.ContentBlock): string => {
  switch (block.type) {
    case "text":
      return block.text
    case "image":
    case "audio":
      // `data` is already decoded from base64: its length is the size of the image itself.
      return `[${block.type} ${block.mimeType}, ${block.data.length} bytes]`
    case "resource_link":
      return `[resource ${block.title ?? block.name}: ${block.uri}${block.description === undefined ? "" : ` (${block.description})`}]`
    case "resource": {
      const resource = block.resource
      return "text" in resource
        ? resource.text
        : `[resource ${resource.uri}${resource.mimeType === undefined ? "" : ` ${resource.mimeType}`}, ${resource.blob.length} bytes]`
    }
  }
}

/** An image block the model can be shown: an `image/*` type within the cap. */
const showable = (block: McpSchema.ContentBlock, maxImageBytes: number): boolean =>
  block.type === "image" && block.mimeType.startsWith("image/") && block.data.length <= maxImageBytes

const part = (block: McpSchema.ContentBlock, maxImageBytes: number): Message.ContentPart => {
  if (block.type !== "image") return Message.text(summary(block))
  if (showable(block, maxImageBytes)) return Message.image(block.mimeType, Base64.encode(block.data))
  return Message.text(
    block.data.length > maxImageBytes ? `${summary(block)} (over the ${maxImageBytes}-byte limit for images, not shown)` : summary(block)
  )
}

/**
 * Without images: text parts joined by newlines, other parts summarised in place; an empty result
 * falls back to the structured content as JSON. With images: the same as content parts, images
 * no larger than `maxImageBytes` as image parts. `isError: true` stays an error result the model sees.
 */
export const toToolOutput = (result: McpSchema.CallToolResult, maxImageBytes = Message.DEFAULT_MAX_IMAGE_BYTES): ToolOutput => {
  const content: Message.Content = result.content.some((block) => showable(block, maxImageBytes))
    ? result.content.map((block) => part(block, maxImageBytes))
    : result.content.length === 0 && result.structuredContent !== undefined
    ? JSON.stringify(result.structuredContent)
    : result.content.map(summary).join("\n")
  return result.isError === true ? { content, isError: true } : { content }
}

/** The default cap of one MCP tool result's text, the same as `exec`'s output. */
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024

const encoder = new TextEncoder()

/** `text` cut to at most `maxBytes` bytes of UTF-8, on a character boundary. */
const headBytes = (text: string, maxBytes: number): string =>
  text.length * 3 <= maxBytes ? text : decodeUtf8Head(encoder.encode(text), maxBytes)

const truncationNote = (keptBytes: number, totalBytes: number) =>
  `[output truncated: showing the first ${keptBytes} of ${totalBytes} bytes; ` +
  `${totalBytes - keptBytes} bytes were cut. Ask for less (a range, a filter, a page) to see the rest]`

/**
 * The output's text cut to `maxBytes` bytes of UTF-8 (on a character boundary), with a note saying
 * how much was cut, so one huge result cannot fill the context window. Of content parts, text parts
 * share the allowance in order; images are bounded by their own cap and kept.
 */
export const capOutput = (output: ToolOutput, maxBytes: number): ToolOutput => {
  const texts = typeof output.content === "string"
    ? [output.content]
    : output.content.flatMap((part) => part.type === "text" ? [part.text] : [])
  // Cheap first: UTF-8 takes at least one byte per UTF-16 unit, at most three.
  if (texts.reduce((n, text) => n + text.length, 0) * 3 <= maxBytes) return output
  const totalBytes = texts.reduce((n, text) => n + encoder.encode(text).length, 0)
  if (totalBytes <= maxBytes) return output
  if (typeof output.content === "string") {
    const kept = headBytes(output.content, maxBytes)
    return { ...output, content: `${kept}\n${truncationNote(encoder.encode(kept).length, totalBytes)}` }
  }
  let left = maxBytes
  const parts: Array<Message.ContentPart> = []
  for (const part of output.content) {
    if (part.type !== "text") parts.push(part)
    else if (left > 0) {
      const kept = headBytes(part.text, left)
      left -= encoder.encode(kept).length
      parts.push(Message.text(kept))
    }
  }
  return { ...output, content: [...parts, Message.text(truncationNote(maxBytes - left, totalBytes))] }
}
