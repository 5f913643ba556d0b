/**
 * Tool names between Claude Code and agent-loop: its names of our built-ins, its aliases, and every
 * name a hook matcher may use for a tool.
 */
import type { McpOrigin } from "../../domain/Tool.ts"

/** Claude Code's names of agent-loop's built-in tools (its `Glob` and `LS` both list: `list_dir` is `LS`). */
export const CLAUDE_NAMES: Readonly<Record<string, string>> = {
  exec: "Bash",
  read_file: "Read",
  write_file: "Write",
  edit_file: "Edit",
  grep: "Grep",
  list_dir: "LS",
  glob: "Glob",
  web_fetch: "WebFetch",
  subagent: "Task",
  skill: "Skill"
}

/** Claude Code's tool names (`MultiEdit` and `Glob` included) to agent-loop's: for rules and matchers. */
export const CLAUDE_ALIASES: Readonly<Record<string, string>> = {
  Bash: "exec",
  Read: "read_file",
  Write: "write_file",
  Edit: "edit_file",
  MultiEdit: "edit_file",
  Grep: "grep",
  LS: "list_dir",
  Glob: "glob",
  WebFetch: "web_fetch",
  Task: "subagent",
  Skill: "skill"
}

/** Every name a matcher may use for a tool: Claude Code's (and its aliases), and agent-loop's own. */
export const namesFor = (call: { readonly name: string; readonly mcp?: McpOrigin | undefined }): ReadonlyArray<string> => {
  const { mcp, name } = call
  if (mcp !== undefined) return [`mcp__${mcp.server}__${mcp.tool}`, name]
  const names = Object.entries(CLAUDE_ALIASES).filter(([, ours]) => ours === name).map(([theirs]) => theirs)
  if (names.length === 0 && name.includes("__") && !name.startsWith("_")) names.push(`mcp__${name}`)
  return [...names, name]
}
