/**
 * Custom slash commands from Markdown files, as Claude Code writes them: `~/.claude/commands/`,
 * `~/.config/agent-loop/commands/`, and in a trusted workspace `.claude/commands/` and
 * `.agent-loop/commands/` (later ones replace a command of the same name, so a project's wins over
 * the user's). A file in a subdirectory is namespaced: `git/commit.md` is `/git:commit` (and
 * `/commit` while no other command ends so). Front matter (all optional): `description`,
 * `argument-hint` (as written: `[file] [focus]`), `model`, `allowed-tools` (permission rules the
 * command's turn is pre-approved for, as in Claude Code: `Bash(git status:*)`, `Read`; it never
 * narrows the tools), `disable-model-invocation`, and agent-loop's own `tools` (the only tools the
 * turn is offered). The body is the prompt: `$ARGUMENTS`, `$1`…`$9`, and at invocation
 * `` !`cmd` `` and `@file` (`commands/commandPrompt.ts`).
 *
 * The files are read like agent files (`agents.ts`): through the confined reader, a workspace's
 * within the workspace and owned by the user, the user's within their directory.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { Tool } from "../../domain/Tool.ts"
import { CLAUDE_ALIASES } from "../../layers/claudeHooks/names.ts"
import * as Agents from "./agents.ts"
import * as FrontMatter from "./frontMatter.ts"
import * as MarkdownFiles from "./markdownFiles.ts"

/** The largest command file read. */
export const MAX_COMMAND_FILE_BYTES = 64 * 1024

/** A custom command and the file it came from. */
export interface CustomCommand {
  /** `commit`, or `git:commit` for `git/commit.md`. */
  readonly name: string
  readonly path: string
  readonly body: string
  readonly description?: string
  readonly argumentHint?: string
  readonly model?: string
  /** Permission rules (`allow`) the command's turn, and its `` !`cmd` `` lines, are pre-approved for. */
  readonly allowedTools?: ReadonlyArray<string>
  /** agent-loop's `tools`: the only tools the command's turn is offered; `undefined`: all. */
  readonly tools?: ReadonlyArray<string>
  /** Claude Code's `disable-model-invocation`: only the user runs it (the model never runs commands here). */
  readonly disableModelInvocation?: boolean
}

/** A command file left out, and why. */
export type CommandProblem = MarkdownFiles.FileProblem

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

const Names = Schema.Union([Schema.String, Schema.Array(Schema.String)])

const Front = Schema.Struct({
  description: Schema.optionalKey(Schema.String),
  "argument-hint": Schema.optionalKey(Names),
  model: Schema.optionalKey(Schema.String),
  "allowed-tools": Schema.optionalKey(Names),
  tools: Schema.optionalKey(Names),
  "disable-model-invocation": Schema.optionalKey(Schema.Boolean)
})

/** The command's name for the file at `relative` (inside its commands directory): `git/commit.md` is `git:commit`. */
export const nameOf = (relative: string): Result.Result<string, string> => {
  const segments = relative.replace(/\.md$/, "").split(/[\\/]/)
  const bad = segments.find((segment) => !SEGMENT.test(segment))
  return bad === undefined
    ? Result.succeed(segments.join(":"))
    : Result.fail(`name "${bad}": letters, digits, ".", "_" and "-" only, at most 64`)
}

/** Parses a command file's text (`relative`: its path inside its commands directory, for the name). */
export const parse = (path: string, text: string, relative: string = nodePath.basename(path)): Result.Result<CustomCommand, string> => {
  const name = nameOf(relative)
  if (Result.isFailure(name)) return Result.fail(name.failure)
  const parts = FrontMatter.split(text)
  if (Result.isFailure(parts)) return Result.fail(parts.failure)
  const decoded = FrontMatter.decode(Front, parts.success.data)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const front = decoded.success
  const body = parts.success.body
  if (body === "") return Result.fail("the body (the command's prompt) is empty")
  const model = front.model?.trim()
  const hint = front["argument-hint"]
  const argumentHint = typeof hint === "string" ? hint.trim() : hint?.map((word) => word.trim()).join(" ")
  return Result.succeed({
    name: name.success,
    path,
    body,
    ...(front.description === undefined ? {} : { description: front.description.trim() }),
    ...(argumentHint === undefined || argumentHint === "" ? {} : { argumentHint }),
    ...(model === undefined || model === "" ? {} : { model }),
    ...(front["allowed-tools"] === undefined ? {} : { allowedTools: FrontMatter.names(front["allowed-tools"]) }),
    ...(front.tools === undefined ? {} : { tools: FrontMatter.names(front.tools).map((tool) => CLAUDE_ALIASES[tool] ?? tool) }),
    ...(front["disable-model-invocation"] === true ? { disableModelInvocation: true } : {})
  })
}

/**
 * The command a typed `/NAME` means: the one of that name, else the one namespaced command whose
 * last part it is (`/commit` for `git:commit`); `undefined` when none or several.
 */
export const find = (commands: ReadonlyArray<CustomCommand>, name: string): CustomCommand | undefined => {
  const exact = commands.find((c) => c.name === name)
  if (exact !== undefined) return exact
  const ending = commands.filter((c) => c.name.endsWith(`:${name}`))
  return ending.length === 1 ? ending[0] : undefined
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
    MarkdownFiles.discover({ folder: "commands", workspace, trusted, env, maxBytes: MAX_COMMAND_FILE_BYTES, parse, nested: true }),
    ({ found, problems }) => ({ commands: found, problems })
  )

/**
 * `commands` with their `model` resolved for the provider in use as agents' are (`sonnet`, `opus`,
 * `haiku`: `Agents.resolveModel`); a command whose alias the provider has no model for is a problem.
 */
export const withModels = (commands: ReadonlyArray<CustomCommand>, provider: Agents.ProviderModels) => {
  const kept: Array<CustomCommand> = []
  const problems: Array<CommandProblem> = []
  for (const command of commands) {
    const model = command.model === undefined ? undefined : Agents.resolveModel(command.model, provider)
    if (model === undefined) kept.push(command)
    else if (Result.isFailure(model)) problems.push({ path: command.path, message: model.failure })
    else kept.push({ ...command, model: model.success })
  }
  return { commands: kept, problems }
}

/** A registered tool, as the narrowing of `tools` sees it: its name, and where an MCP tool comes from. */
export type Offered = Pick<Tool, "name" | "mcp">

/**
 * The tools a turn of the command is offered (`TurnOptions.tools`, which only narrows): the
 * registered ones its `tools` names, an MCP tool by its registered name, `server__tool` or
 * `mcp__server__tool`. `undefined` when the command names no tools (the configured ones all).
 */
export const turnTools = (command: CustomCommand, registered: ReadonlyArray<Offered>): ReadonlyArray<string> | undefined => {
  const allowed = command.tools
  if (allowed === undefined) return undefined
  const named = (tool: Offered) =>
    allowed.includes(tool.name) ||
    (tool.mcp !== undefined && (allowed.includes(`${tool.mcp.server}__${tool.mcp.tool}`) || allowed.includes(`mcp__${tool.mcp.server}__${tool.mcp.tool}`)))
  return registered.filter(named).map((tool) => tool.name)
}
