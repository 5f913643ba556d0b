/**
 * References in a server's config, expanded when it starts, so that one file can be shared
 * without the tokens in it. `command`, `args`, `cwd`, `env`, `url` and `headers` are expanded:
 *
 * - `${VAR}` and `${VAR:-default}` (Claude Code), `${env:VAR}` (VS Code, Cursor): the environment.
 *   A variable that is unset (or empty) takes its default; one with no default is reported with the
 *   field it is used in.
 * - `${input:ID}` (VS Code's `inputs`): there is no editor to prompt in, so the answer comes from
 *   the environment variable `inputVariable(ID)` (`AGENT_LOOP_INPUT_GITHUB_TOKEN` for
 *   `github-token`); an unanswered input is reported with the variable that answers it.
 * - `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}`, `${pathSeparator}` (VS Code,
 *   Cursor): the workspace the servers run for, the home directory, the path separator.
 */
import * as os from "node:os"
import * as nodePath from "node:path"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import type { McpServerConfig } from "./config.ts"

const reference = /\$\{(env:|input:)?([A-Za-z_][\w.-]*)(?::-([^}]*))?\}/g

/** A variable (or input) that has no value and no default, and the field that uses it. */
export interface MissingVariable {
  readonly _tag: "MissingVariable"
  readonly variable: string
  readonly field: string
  /** For `${input:ID}`: the input's id. */
  readonly input?: string
}

/** The environment variable that answers VS Code's `${input:ID}`: `AGENT_LOOP_INPUT_` and the id in capitals, `_` for the rest. */
export const inputVariable = (id: string): string => `AGENT_LOOP_INPUT_${id.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`

/** What the editor variables stand for. */
export interface ExpandContext {
  /** `${workspaceFolder}`; default the current directory. */
  readonly workspaceFolder?: string
}

const builtins = (context: ExpandContext): Readonly<Record<string, string>> => {
  const workspaceFolder = context.workspaceFolder ?? process.cwd()
  return {
    workspaceFolder,
    workspaceFolderBasename: nodePath.basename(workspaceFolder),
    userHome: os.homedir(),
    pathSeparator: nodePath.sep
  }
}

/** The config with every reference expanded, or the first variable that is missing. */
export const expandConfig = (
  config: McpServerConfig,
  env: Readonly<Record<string, string | undefined>>,
  context: ExpandContext = {}
): Result.Result<McpServerConfig, MissingVariable> => {
  let missing: MissingVariable | undefined
  const editor = builtins(context)
  const text = (value: string, field: string): string => {
    // A reference ends with `}`: past the last one there is none. Matching only up to it keeps
    // the pattern linear, as `[^}]*` would rescan the rest from every `${` that has no `}`.
    const end = value.lastIndexOf("}") + 1
    return value.slice(0, end).replace(reference, (whole, prefix: string | undefined, name: string, fallback: string | undefined) => {
      if (prefix === undefined && Object.hasOwn(editor, name)) return editor[name]!
      const input = prefix === "input:" ? name : undefined
      // a plain or env: reference names a variable: a dot or dash means it is something else, left as written
      if (input === undefined && /[.-]/.test(name)) return whole
      const variable = input === undefined ? name : inputVariable(input)
      const found = env[variable]
      if (found !== undefined && found !== "") return found
      if (fallback !== undefined) return fallback
      missing ??= { _tag: "MissingVariable", variable, field, ...(input === undefined ? {} : { input }) }
      return ""
    }) + value.slice(end)
  }
  const secrets = (record: Readonly<Record<string, Redacted.Redacted<string>>> | undefined, field: string) =>
    record === undefined ? {} : {
      [field]: Object.fromEntries(
        Object.entries(record).map(([key, value]) => [key, Redacted.make(text(Redacted.value(value), `${field}.${key}`))])
      )
    }
  const expanded: McpServerConfig = config.type === "stdio"
    ? {
      ...config,
      command: text(config.command, "command"),
      ...(config.args === undefined ? {} : { args: config.args.map((arg, i) => text(arg, `args.${i}`)) }),
      ...(config.cwd === undefined ? {} : { cwd: text(config.cwd, "cwd") }),
      ...(config.envFile === undefined ? {} : { envFile: text(config.envFile, "envFile") }),
      ...secrets(config.env, "env")
    }
    : { ...config, url: text(config.url, "url"), ...secrets(config.headers, "headers") }
  return missing === undefined ? Result.succeed(expanded) : Result.fail(missing)
}
