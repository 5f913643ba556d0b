/**
 * Which MCP tools are offered to the model and which need the user's approval, from a server's
 * `approve`, `allow` and `deny` settings and the tool's own annotations.
 *
 * A server's annotations are its own claim, so only `readOnlyHint: true` lifts the approval
 * requirement (under `"approve": "auto"`); anything else a tool may do (write, delete, send, spend)
 * is asked about first. `allow` names the tools the user trusts anyway, `deny` the ones never to
 * offer.
 */
import type * as McpSchema from "effect/ai/McpSchema"
import type { McpServerConfig } from "./config.ts"

/**
 * Whether `name` matches a pattern: an exact name, or `*` standing for any run of characters. The
 * pieces between stars are found left to right with `indexOf` (the leftmost place of each is
 * always a right one), so a server's long tool name cannot make a pattern of many stars backtrack.
 */
export const matchesPattern = (pattern: string, name: string): boolean => {
  const pieces = pattern.split("*")
  if (pieces.length === 1) return pattern === name
  const first = pieces[0]!
  const last = pieces[pieces.length - 1]!
  if (name.length < first.length + last.length || !name.startsWith(first) || !name.endsWith(last)) return false
  const end = name.length - last.length
  let at = first.length
  for (let i = 1; i < pieces.length - 1; i++) {
    const found = name.indexOf(pieces[i]!, at)
    if (found < 0 || found + pieces[i]!.length > end) return false
    at = found + pieces[i]!.length
  }
  return true
}

const matchesAny = (patterns: ReadonlyArray<string> | undefined, name: string) =>
  patterns !== undefined && patterns.some((pattern) => matchesPattern(pattern, name))

/** Whether the server's `deny` list keeps the tool from the model. */
export const isDenied = (config: McpServerConfig, tool: McpSchema.Tool): boolean => matchesAny(config.deny, tool.name)

/** Whether calling the tool needs the user's approval (see the module doc). */
export const requiresApproval = (config: McpServerConfig, tool: McpSchema.Tool): boolean => {
  if (matchesAny(config.allow, tool.name)) return false
  switch (config.approve ?? "auto") {
    case "always":
      return true
    case "never":
      return false
    case "auto":
      return tool.annotations?.readOnlyHint !== true
  }
}

/** The name a tool has in tool filters such as the CLI's `--tools`: `server__tool`. */
export const qualifiedName = (server: string, tool: string) => `${server}__${tool}`

/**
 * A filter in Claude Code's spelling as ours: `mcp__server__tool` is `server__tool`, and
 * `mcp__server` (every tool of the server) is `server__*`.
 */
const ownFilter = (filter: string): string => {
  if (!filter.startsWith("mcp__")) return filter
  const rest = filter.slice("mcp__".length)
  return rest.includes("__") ? rest : `${rest}__*`
}

/**
 * Whether a filter (`server__tool`, `server__*`, `*`, or Claude Code's `mcp__server__tool` and
 * `mcp__server`) enables the tool; no filter enables all. Filters name tools by server and tool
 * name as configured, whatever name the model sees.
 */
export const isEnabled = (enable: ReadonlyArray<string> | undefined, server: string, tool: string): boolean =>
  enable === undefined || matchesAny(enable.map(ownFilter), qualifiedName(server, tool))
