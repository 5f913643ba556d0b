/**
 * Claude Code's settings files at every level (`settingsLevels.ts`): `~/.claude/settings.json`,
 * `.claude/settings.json` and `.claude/settings.local.json` (`--no-claude-settings` leaves them
 * out). What the loop honours of them: `permissions` (`allow`, `ask`, `deny`, `defaultMode`,
 * `additionalDirectories`), `hooks`, `env`, `model`, `apiKeyHelper`, the `sandbox` keys (read
 * by `sandboxSettings.ts`) and `enabledPlugins` (read by `plugins.ts`). Every other key is Claude Code's own and gets one warning line: the
 * files are read leniently, and a part that cannot be used is a warning, never a failure, since
 * they are written for another program. Whose file may set what is `settingsLevels.ts`'s rule.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { HooksConfig, type HooksSource } from "../../layers/claudeHooks/config.ts"
import { problemOf, readConfined, textOf } from "../../layers/internal/readConfined.ts"
import { clean } from "../terminal/safeText.ts"
import { PERMISSION_MODES, type PermissionMode } from "./approvalPolicy.ts"
import { MAX_SETTINGS_BYTES, type PermissionLists } from "./settingsFile.ts"
import { levels, type Scope } from "./settingsLevels.ts"


/** What was taken from one file. */
export interface ClaudeSettings {
  readonly path: string
  readonly scope: Scope
  readonly permissions: PermissionLists
  readonly defaultMode: PermissionMode | undefined
  readonly hooks: HooksSource | undefined
  /** Variables for the commands and hooks the loop runs (not for the loop's own credentials). */
  readonly env: Readonly<Record<string, string>> | undefined
  readonly model: string | undefined
  /** A shell command whose output is the provider's key. */
  readonly apiKeyHelper: string | undefined
  /** Parts skipped, and why; and one line per key the loop does not honour. */
  readonly warnings: ReadonlyArray<string>
}

/** The top-level keys the loop acts on (`$schema` is an editor's, and harmless; `plugins.ts` reads `enabledPlugins`). */
export const HONOURED_KEYS: ReadonlyArray<string> = ["$schema", "permissions", "hooks", "sandbox", "env", "model", "apiKeyHelper", "enabledPlugins"]
const PERMISSION_KEYS: ReadonlyArray<string> = ["allow", "ask", "deny", "defaultMode", "additionalDirectories"]

const decodeHooks = Schema.decodeUnknownResult(HooksConfig)
const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

const strings = (value: unknown): { readonly list: ReadonlyArray<string>; readonly bad: number } => {
  if (!Array.isArray(value)) return { list: [], bad: value === undefined ? 0 : 1 }
  const list = value.filter((item): item is string => typeof item === "string")
  return { list, bad: value.length - list.length }
}

const empty = (path: string, scope: Scope, warnings: ReadonlyArray<string>): ClaudeSettings => ({
  path,
  scope,
  permissions: {},
  defaultMode: undefined,
  hooks: undefined,
  env: undefined,
  model: undefined,
  apiKeyHelper: undefined,
  warnings
})

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Reads what applies of one file's text. `format: "agent-loop"` reads only the permission lists
 * of one of the loop's own files (for the deny rules of a workspace that is not trusted), with no
 * word on its other keys.
 */
export const parse = (path: string, text: string, scope: Scope = "project", format: "claude" | "agent-loop" = "claude"): ClaudeSettings => {
  const warnings: Array<string> = []
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return empty(path, scope, [`${path}: not valid JSON; skipped`])
  }
  if (!isObject(json)) return empty(path, scope, [`${path}: not a JSON object; skipped`])
  const claude = format === "claude"
  const lists = isObject(json["permissions"]) ? json["permissions"] : {}
  const permissions: { -readonly [K in keyof PermissionLists]: PermissionLists[K] } = {}
  for (const kind of ["allow", "ask", "deny", "additionalDirectories"] as const) {
    const { bad, list } = strings(lists[kind])
    if (bad > 0 && claude) warnings.push(`${path}: permissions.${kind}: ${bad} entries that are not strings; skipped`)
    if (list.length > 0) permissions[kind] = list
  }
  if (!claude) return { ...empty(path, scope, []), permissions }
  let defaultMode: PermissionMode | undefined
  const mode = lists["defaultMode"]
  if (mode !== undefined) {
    if ((PERMISSION_MODES as ReadonlyArray<unknown>).includes(mode)) defaultMode = mode as PermissionMode
    else warnings.push(`${path}: permissions.defaultMode: expected one of ${PERMISSION_MODES.join(", ")}; skipped`)
  }
  for (const key of Object.keys(lists)) {
    if (!PERMISSION_KEYS.includes(key)) warnings.push(`${path}: permissions.${clean(key)} is not honoured by agent-loop; ignored`)
  }
  let hooks: HooksSource | undefined
  if (json["hooks"] !== undefined) {
    const decoded = decodeHooks(json["hooks"])
    if (Result.isSuccess(decoded)) hooks = { source: path, hooks: decoded.success }
    else {
      const issue = formatter(decoded.failure.issue).issues[0]
      const at = (issue?.path ?? []).map(String).join(".")
      warnings.push(`${path}: hooks${at === "" ? "" : `.${at}`}: ${issue?.message.split("\n")[0] ?? "invalid"}; hooks of this file skipped`)
    }
  }
  let env: Record<string, string> | undefined
  if (json["env"] !== undefined) {
    if (!isObject(json["env"])) warnings.push(`${path}: env: expected an object of strings; skipped`)
    else {
      env = {}
      for (const [name, value] of Object.entries(json["env"])) {
        // a value may be a secret: it is never echoed
        if (typeof value === "string" && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) env[name] = value
        else warnings.push(`${path}: env.${clean(name)}: expected a variable name with a string value; skipped`)
      }
    }
  }
  const text1 = (key: string): string | undefined => {
    const value = json[key]
    if (value === undefined) return undefined
    if (typeof value === "string" && value.trim() !== "") return value
    warnings.push(`${path}: ${key}: expected a non-empty string; skipped`)
    return undefined
  }
  const model = text1("model")
  const apiKeyHelper = text1("apiKeyHelper")
  for (const key of Object.keys(json)) {
    if (!HONOURED_KEYS.includes(key)) warnings.push(`${path}: ${clean(key)} is not honoured by agent-loop; ignored`)
  }
  return { path, scope, permissions, defaultMode, hooks, env, model, apiKeyHelper, warnings }
}

/**
 * Reads the Claude Code files of every level that exist (the user's, then the workspace's, then
 * its local one), each confined like the settings of its level; an unreadable one is a warning.
 * Trust is the caller's to apply (`settingsLevels.widens`).
 */
export const loadAll = (workspace: string, env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const found: Array<ClaudeSettings> = []
    for (const level of levels(workspace, env)) {
      if (level.format !== "claude") continue
      const read = yield* readConfined(level.path, { within: level.within, ownedByUser: level.ownedByUser, maxBytes: MAX_SETTINGS_BYTES })
      if (read._tag === "Missing" || read._tag === "Skipped") continue
      const problem = problemOf(read, MAX_SETTINGS_BYTES)
      if (problem !== undefined) found.push(empty(level.path, level.scope, [`${level.path}: cannot read: ${problem}`]))
      else found.push(parse(level.path, textOf(read) ?? "", level.scope))
    }
    return found as ReadonlyArray<ClaudeSettings>
  })

/** The workspace's own files (`.claude/settings.json`, `.claude/settings.local.json`), in the order they apply. */
export const claudeSettingsPaths = (workspace: string): ReadonlyArray<string> =>
  levels(workspace, {}).filter((level) => level.format === "claude" && level.scope !== "user").map((level) => level.path)
