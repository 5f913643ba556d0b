/**
 * The `Tool` namespace of the public API (`index.ts`): the names of `domain/Tool.ts` users need,
 * listed by name; the loop's reading of a tool's parameters as JSON Schema stays internal.
 */
export {
  type Any,
  make,
  type MakeOptions,
  type McpOrigin,
  type Requirements,
  type Tool,
  type ToolContext,
  type ToolOutput,
  toOutput
} from "../domain/Tool.ts"
