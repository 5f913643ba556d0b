/**
 * What a Claude Code hook command reads and writes: tool names and inputs in Claude Code's
 * spelling, and the reading of its exit code and output.
 */
import * as nodePath from "node:path"
import type { McpOrigin } from "../../domain/Tool.ts"
import { CLAUDE_NAMES } from "./names.ts"

/**
 * Claude Code's name for a tool: its built-in names, `mcp__server__tool` for MCP tools (by their
 * server and own name, whatever name they are registered under).
 */
export const claudeName = (call: { readonly name: string; readonly mcp?: McpOrigin | undefined }): string =>
  call.mcp !== undefined
    ? `mcp__${call.mcp.server}__${call.mcp.tool}`
    : CLAUDE_NAMES[call.name] ?? (call.name.includes("__") && !call.name.startsWith("_") ? `mcp__${call.name}` : call.name)

const record = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}

/** Field renames between agent-loop's arguments and Claude Code's `tool_input`. */
const RENAMES: Readonly<Record<string, ReadonlyArray<readonly [ours: string, theirs: string]>>> = {
  exec: [["timeout_ms", "timeout"]],
  read_file: [["path", "file_path"]],
  write_file: [["path", "file_path"]],
  edit_file: [["path", "file_path"], ["old_text", "old_string"], ["new_text", "new_string"]],
  // Claude Code's Task: `subagent_type` is the agent, `prompt` the task
  subagent: [["agent", "subagent_type"], ["task", "prompt"]]
}

/** Fields holding a path: Claude Code gives absolute ones. */
const PATHS = new Set(["file_path", "path"])

/** A call's arguments as Claude Code's `tool_input`: its field names, absolute paths. */
export const toClaudeInput = (name: string, args: unknown, projectDir: string): Record<string, unknown> => {
  const input = { ...record(args) }
  for (const [ours, theirs] of RENAMES[name] ?? []) {
    if (!(ours in input)) continue
    input[theirs] = input[ours]
    delete input[ours]
  }
  if (name in CLAUDE_NAMES) {
    for (const field of PATHS) {
      const value = input[field]
      if (typeof value === "string") input[field] = nodePath.resolve(projectDir, value)
    }
  }
  return input
}

/**
 * A hook's `updatedInput` back in agent-loop's names, over the call's arguments: the fields it
 * gives replace the call's, paths inside the workspace become relative again.
 */
export const fromClaudeInput = (name: string, args: unknown, updated: unknown, projectDir: string): Record<string, unknown> => {
  const input = { ...toClaudeInput(name, args, projectDir), ...record(updated) }
  if (name in CLAUDE_NAMES) {
    for (const field of PATHS) {
      const value = input[field]
      if (typeof value !== "string" || !nodePath.isAbsolute(value)) continue
      const relative = nodePath.relative(projectDir, value)
      if (relative === "" || (!relative.startsWith("..") && !nodePath.isAbsolute(relative))) input[field] = relative === "" ? "." : relative
    }
  }
  for (const [ours, theirs] of RENAMES[name] ?? []) {
    if (!(theirs in input)) continue
    input[ours] = input[theirs]
    delete input[theirs]
  }
  return input
}

/** A tool's result as Claude Code's `tool_response`. */
export const toClaudeResponse = (name: string, args: unknown, output: string, projectDir: string): unknown => {
  const path = record(args)["path"]
  const filePath = typeof path === "string" ? nodePath.resolve(projectDir, path) : undefined
  switch (name) {
    case "exec":
      return { stdout: output, stderr: "", interrupted: false, isImage: false }
    case "write_file":
    case "edit_file":
      return { filePath, success: true, output }
    case "read_file":
      return { type: "text", file: { filePath, content: output } }
    default:
      return output
  }
}

/** What one command said, read from its exit code and output. */
export interface Said {
  /** Exit 2 (stderr), or `decision: "block"` (its `reason`). */
  readonly block?: string
  /** `continue: false`: its `stopReason`. */
  readonly stop?: string
  readonly permission?: { readonly decision: "allow" | "deny" | "ask"; readonly reason: string | undefined }
  /** A `PermissionRequest` hook's `decision.behavior`, with its `message`. */
  readonly behavior?: { readonly decision: "allow" | "deny"; readonly reason: string | undefined }
  readonly updatedInput?: Record<string, unknown>
  /** `additionalContext`, or (where plain output is context) the plain stdout. */
  readonly context?: string
  /** `systemMessage`: a line for the user. */
  readonly systemMessage?: string
  /** Another exit code: a non-blocking error, with stderr. */
  readonly failure?: string
}

const text = (value: unknown): string | undefined => (typeof value === "string" && value.trim() !== "" ? value : undefined)

const parseJson = (stdout: string): Record<string, unknown> | undefined => {
  const trimmed = stdout.trim()
  if (!trimmed.startsWith("{")) return undefined
  try {
    const value: unknown = JSON.parse(trimmed)
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/**
 * Reads a finished command as Claude Code does: exit 2 blocks with stderr; another non-zero exit
 * is a non-blocking error; exit 0 with JSON on stdout says what to do; exit 0 with plain text is
 * context where `plainIsContext` (UserPromptSubmit, SessionStart), else ignored.
 */
export const interpret = (exitCode: number, stdout: string, stderr: string, plainIsContext: boolean): Said => {
  if (exitCode === 2) return { block: stderr.trim() || "blocked by a hook (exit 2)" }
  if (exitCode !== 0) return { failure: `exited with code ${exitCode}${stderr.trim() === "" ? "" : `: ${stderr.trim().slice(0, 200)}`}` }
  const json = parseJson(stdout)
  if (json === undefined) return plainIsContext && stdout.trim() !== "" ? { context: stdout.trim() } : {}
  const specific = record(json["hookSpecificOutput"])
  const decision = json["decision"]
  const permission = specific["permissionDecision"] ?? (decision === "approve" ? "allow" : undefined)
  const said: {
    -readonly [K in keyof Said]: Said[K]
  } = {}
  if (json["continue"] === false) said.stop = text(json["stopReason"]) ?? "stopped by a hook (continue: false)"
  if (decision === "block") said.block = text(json["reason"]) ?? "blocked by a hook"
  if (permission === "allow" || permission === "deny" || permission === "ask") {
    said.permission = { decision: permission, reason: text(specific["permissionDecisionReason"]) ?? text(json["reason"]) }
  }
  const behavior = record(specific["decision"])
  if (behavior["behavior"] === "allow" || behavior["behavior"] === "deny") {
    said.behavior = { decision: behavior["behavior"], reason: text(behavior["message"]) }
  }
  if (typeof specific["updatedInput"] === "object" && specific["updatedInput"] !== null) said.updatedInput = record(specific["updatedInput"])
  const context = text(specific["additionalContext"])
  if (context !== undefined) said.context = context
  const message = text(json["systemMessage"])
  if (message !== undefined) said.systemMessage = message
  return said
}
