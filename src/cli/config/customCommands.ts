/**
 * Custom slash commands from Markdown files: `~/.config/agent-loop/commands/NAME.md`, and in a
 * trusted workspace `.claude/commands/NAME.md` and `.agent-loop/commands/NAME.md` (later ones
 * replace a command of the same name, so a project's wins over the user's). Front matter (all
 * optional) `description`, `argument-hint`, `model` and `allowed-tools` (a list or a
 * comma-separated string; Claude Code's names such as `Read` are mapped to the built-in tools);
 * the body is the prompt, with `$ARGUMENTS` replaced by all the arguments and `$1`…`$9` by each.
 *
 * The files are read like agent files (`agents.ts`): through the confined reader, a workspace's
 * within the workspace and owned by the user, the user's within the configuration directory.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as Yaml from "effect/encoding/Yaml"
import type { Tool } from "../../domain/Tool.ts"
import { CLAUDE_ALIASES } from "../../layers/claudeHooks/names.ts"
import { frontMatter } from "../../layers/fileHooks/manifest.ts"
import * as MarkdownFiles from "./markdownFiles.ts"

/** The largest command file read. */
export const MAX_COMMAND_FILE_BYTES = 64 * 1024

/** A custom command and the file it came from. */
export interface CustomCommand {
  readonly name: string
  readonly path: string
  readonly body: string
  readonly description?: string
  readonly argumentHint?: string
  readonly model?: string
  /** The tools a turn of this command may use (narrows the configured ones); `undefined`: all. */
  readonly allowedTools?: ReadonlyArray<string>
}

/** A command file left out, and why. */
export type CommandProblem = MarkdownFiles.FileProblem

const FRONT_MATTER = /^\uFEFF?---[ \t]*\r?\n[\s\S]*?\r?\n---[ \t]*(?:\r?\n|$)/
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

const Front = Schema.Struct({
  description: Schema.optionalKey(Schema.String),
  "argument-hint": Schema.optionalKey(Schema.String),
  model: Schema.optionalKey(Schema.String),
  "allowed-tools": Schema.optionalKey(Schema.Union([Schema.String, Schema.Array(Schema.String)]))
})

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const toolNames = (tools: string | ReadonlyArray<string>): ReadonlyArray<string> => {
  const names = typeof tools === "string" ? tools.split(",") : tools
  return [...new Set(names.map((name) => name.trim()).filter((name) => name !== "").map((name) => CLAUDE_ALIASES[name] ?? name))]
}

/** Parses a command file's text: optional front matter, then the body as the prompt. */
export const parse = (path: string, text: string): Result.Result<CustomCommand, string> => {
  const name = nodePath.basename(path, ".md")
  if (!NAME.test(name)) return Result.fail(`name "${name}": letters, digits, ".", "_" and "-" only, at most 64`)
  const yaml = frontMatter(text)
  let data: unknown = {}
  if (yaml !== undefined) {
    try {
      data = Yaml.parse(yaml) ?? {}
    } catch (error) {
      return Result.fail(`invalid YAML: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
  const decoded = Schema.decodeUnknownResult(Front)(data, { errors: "all" })
  if (Result.isFailure(decoded)) {
    return Result.fail(formatIssues(decoded.failure.issue).issues.map((issue) =>
      `${issue.path !== undefined && issue.path.length > 0 ? issue.path.map(String).join(".") : "front matter"}: ${issue.message}`
    ).join("; "))
  }
  const front = decoded.success
  const body = (yaml === undefined ? text : text.replace(FRONT_MATTER, "")).trim()
  if (body === "") return Result.fail("the body (the command's prompt) is empty")
  const model = front.model?.trim()
  return Result.succeed({
    name,
    path,
    body,
    ...(front.description === undefined ? {} : { description: front.description.trim() }),
    ...(front["argument-hint"] === undefined ? {} : { argumentHint: front["argument-hint"].trim() }),
    ...(model === undefined || model === "" ? {} : { model }),
    ...(front["allowed-tools"] === undefined ? {} : { allowedTools: toolNames(front["allowed-tools"]) })
  })
}

/** Splits arguments on whitespace, keeping a double- or single-quoted one whole. */
export const splitArguments = (args: string): ReadonlyArray<string> =>
  [...args.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? "")

/** The command's prompt: `$ARGUMENTS` is all the arguments as typed, `$1`…`$9` each (empty when absent). */
export const expand = (body: string, args: string): string => {
  const all = args.trim()
  const each = splitArguments(all)
  // one pass, so an argument containing `$1` is not itself substituted
  return body.replace(/\$ARGUMENTS|\$([1-9])/g, (_match, digit: string | undefined) =>
    digit === undefined ? all : each[Number(digit) - 1] ?? "")
}

/** The name and arguments of a `/NAME args` line, or `undefined` when it is not one. */
export const invocation = (line: string): { readonly name: string; readonly args: string } | undefined => {
  const match = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(line.trim())
  return match === null ? undefined : { name: match[1]!, args: match[2] ?? "" }
}

/** The command directories, in the order they apply: the user's, then a trusted workspace's. */
export const directories = (workspace: string, trusted: boolean, env: NodeJS.ProcessEnv = process.env) =>
  MarkdownFiles.directories("commands", workspace, trusted, env)

/** The commands found (a later one replacing an earlier one of the same name), and the files skipped. */
export const discover = (workspace: string, trusted: boolean, env: NodeJS.ProcessEnv = process.env) =>
  Effect.map(
    MarkdownFiles.discover({ folder: "commands", workspace, trusted, env, maxBytes: MAX_COMMAND_FILE_BYTES, parse }),
    ({ found, problems }) => ({ commands: found, problems })
  )

/** A registered tool, as the narrowing sees it: its name, and where an MCP tool comes from. */
export type Offered = Pick<Tool, "name" | "mcp">

/**
 * The tools a turn of the command may use (`TurnOptions.tools`, which only narrows): the
 * registered ones its `allowed-tools` names, an MCP tool by its registered name, `server__tool` or
 * `mcp__server__tool`. `undefined` when the command names no tools (the configured ones all).
 */
export const turnTools = (command: CustomCommand, registered: ReadonlyArray<Offered>): ReadonlyArray<string> | undefined => {
  const allowed = command.allowedTools
  if (allowed === undefined) return undefined
  const named = (tool: Offered) =>
    allowed.includes(tool.name) ||
    (tool.mcp !== undefined && (allowed.includes(`${tool.mcp.server}__${tool.mcp.tool}`) || allowed.includes(`mcp__${tool.mcp.server}__${tool.mcp.tool}`)))
  return registered.filter(named).map((tool) => tool.name)
}
