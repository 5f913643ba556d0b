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
import { Effect, Result, Schema, SchemaIssue } from "effect"
import { Yaml } from "effect/encoding"
import { CLAUDE_ALIASES } from "../layers/claudeHooks/names.ts"
import { frontMatter } from "../layers/fileHooks/manifest.ts"
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

/**
 * The settings of a turn of the command: its `model`, and its `allowed-tools` narrowing the
 * configured tools (never adding one the user did not enable).
 */
export const narrow = <S extends { readonly model: string; readonly tools: ReadonlyArray<string>; readonly mcpTools: ReadonlyArray<string> | undefined }>(
  settings: S,
  command: CustomCommand
): S => {
  const allowed = command.allowedTools
  return {
    ...settings,
    ...(command.model === undefined ? {} : { model: command.model }),
    ...(allowed === undefined ? {} : {
      tools: settings.tools.filter((tool) => allowed.includes(tool)),
      mcpTools: (settings.mcpTools ?? allowed.filter((name) => name.includes("__"))).filter((name) => allowed.includes(name))
    })
  }
}
