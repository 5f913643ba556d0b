/**
 * From an MCP `tools/call` result to the text a model reads: tool results in this library are text,
 * so text parts are kept and everything else is named and summarised rather than dropped silently,
 * and the whole is capped like the built-in tools' output.
 */
import type { McpSchema } from "effect/ai"
import type { ToolOutput } from "../../domain/Tool.ts"

const summarise = (block: McpSchema.ContentBlock): string => {
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

/**
 * Text parts joined by newlines, other parts summarised in place; an empty result falls back to the
 * structured content as JSON. `isError: true` stays an error result the model sees.
 */
export const toToolOutput = (result: McpSchema.CallToolResult): ToolOutput => {
  const parts = result.content.map(summarise)
  const content = parts.length === 0 && result.structuredContent !== undefined
    ? JSON.stringify(result.structuredContent)
    : parts.join("\n")
  return result.isError === true ? { content, isError: true } : { content }
}

/** The default cap of one MCP tool result, the same as `exec`'s output. */
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024

const encoder = new TextEncoder()

/**
 * The output cut to `maxBytes` bytes of UTF-8 (on a character boundary), with a note saying how
 * much was cut, so one huge result cannot fill the context window.
 */
export const capOutput = (output: ToolOutput, maxBytes: number): ToolOutput => {
  // Cheap first: UTF-8 takes at least one byte per UTF-16 unit, at most three.
  if (output.content.length * 3 <= maxBytes) return output
  const bytes = encoder.encode(output.content)
  if (bytes.length <= maxBytes) return output
  const kept = new TextDecoder().decode(bytes.subarray(0, maxBytes)).replace(/\uFFFD+$/, "")
  const keptBytes = encoder.encode(kept).length
  const content = `${kept}\n[output truncated: showing the first ${keptBytes} of ${bytes.length} bytes; ` +
    `${bytes.length - keptBytes} bytes were cut. Ask for less (a range, a filter, a page) to see the rest]`
  return { ...output, content }
}
