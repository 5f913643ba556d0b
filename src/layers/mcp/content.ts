/**
 * From an MCP `tools/call` result to the text a model reads: tool results in this library are text,
 * so text parts are kept and everything else is named and summarised rather than dropped silently.
 */
import type { McpSchema } from "effect/ai"
import type { ToolOutput } from "../../domain/Tool.ts"

const summarise = (block: McpSchema.ContentBlock): string => {
  switch (block.type) {
    case "text":
      return block.text
    case "image":
    case "audio":
      return `[${block.type} ${block.mimeType}, ${block.data.length} bytes]`
    case "resource_link":
      return `[resource ${block.title ?? block.name}: ${block.uri}${block.description === undefined ? "" : ` (${block.description})`}]`
    case "resource": {
      const resource = block.resource
      return "text" in resource
        ? resource.text
        : `[resource ${resource.uri}${resource.mimeType === undefined ? "" : ` ${resource.mimeType}`}, binary]`
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
