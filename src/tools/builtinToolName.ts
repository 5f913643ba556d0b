/**
 * The built-in tools' names, apart from the tools themselves so that the CLI's flag definitions
 * (and so `--help`) name them without loading any tool.
 */
import * as Schema from "effect/Schema"

/** The names of the built-in tools, in the order `builtinTools` returns them (`web_fetch` only when enabled by name). */
export const BuiltinToolName = Schema.Literals(["read_file", "list_dir", "grep", "glob", "write_file", "edit_file", "exec", "todo_write", "web_fetch"])
/** The name of a built-in tool. */
export type BuiltinToolName = typeof BuiltinToolName.Type
