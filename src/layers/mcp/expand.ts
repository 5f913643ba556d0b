/**
 * `${VAR}` and `${VAR:-default}` in a server's config, expanded from the environment as Claude Code
 * does, so that one `.mcp.json` can be shared without the tokens in it: `command`, `args`, `cwd`,
 * `env`, `url` and `headers` are expanded. A variable that is unset (or empty) takes its default;
 * one with no default is reported with the field it is used in.
 */
import { Redacted, Result } from "effect"
import type { McpServerConfig } from "./config.ts"

const reference = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g

/** A variable that has no value and no default, and the field that uses it. */
export interface MissingVariable {
  readonly _tag: "MissingVariable"
  readonly variable: string
  readonly field: string
}

/** The config with every reference expanded, or the first variable that is missing. */
export const expandConfig = (
  config: McpServerConfig,
  env: Readonly<Record<string, string | undefined>>
): Result.Result<McpServerConfig, MissingVariable> => {
  let missing: MissingVariable | undefined
  const text = (value: string, field: string): string => {
    // A reference ends with `}`: past the last one there is none. Matching only up to it keeps
    // the pattern linear, as `[^}]*` would rescan the rest from every `${` that has no `}`.
    const end = value.lastIndexOf("}") + 1
    return value.slice(0, end).replace(reference, (_, variable: string, fallback: string | undefined) => {
      const found = env[variable]
      if (found !== undefined && found !== "") return found
      if (fallback !== undefined) return fallback
      missing ??= { _tag: "MissingVariable", variable, field }
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
      ...secrets(config.env, "env")
    }
    : { ...config, url: text(config.url, "url"), ...secrets(config.headers, "headers") }
  return missing === undefined ? Result.succeed(expanded) : Result.fail(missing)
}
