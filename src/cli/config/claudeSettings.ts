/**
 * A trusted workspace's Claude Code settings, `.claude/settings.json` and
 * `.claude/settings.local.json`: their permission rules and hooks apply here unchanged
 * (`--no-claude-settings` leaves them out), and so do their `sandbox` keys (read by
 * `sandboxSettings.ts`). Everything else in them (`env`, `model`,
 * `apiKeyHelper`, `statusLine`, …) is Claude Code's own and is ignored: they are read leniently,
 * and a part that cannot be used is a warning, never a failure, since the file is written for
 * another program.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { HooksConfig, type HooksSource } from "../../layers/claudeHooks/config.ts"
import { problemOf, readConfined, textOf } from "../../layers/internal/readConfined.ts"
import { MAX_SETTINGS_BYTES, type PermissionLists } from "./settingsFile.ts"

/** What was taken from one file. */
export interface ClaudeSettings {
  readonly path: string
  readonly permissions: PermissionLists
  readonly hooks: HooksSource | undefined
  /** Parts skipped, and why. */
  readonly warnings: ReadonlyArray<string>
  /** Top-level keys ignored, for `--verbose`. */
  readonly ignored: ReadonlyArray<string>
}

/** The files, in the order they apply (the local one last). */
export const claudeSettingsPaths = (workspace: string): ReadonlyArray<string> => [
  nodePath.join(workspace, ".claude", "settings.json"),
  nodePath.join(workspace, ".claude", "settings.local.json")
]

const decodeHooks = Schema.decodeUnknownResult(HooksConfig)
const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

const strings = (value: unknown): { readonly list: ReadonlyArray<string>; readonly bad: number } => {
  if (!Array.isArray(value)) return { list: [], bad: value === undefined ? 0 : 1 }
  const list = value.filter((item): item is string => typeof item === "string")
  return { list, bad: value.length - list.length }
}

/** Reads what applies of one file's text. */
export const parse = (path: string, text: string): ClaudeSettings => {
  const warnings: Array<string> = []
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return { path, permissions: {}, hooks: undefined, warnings: [`${path}: not valid JSON; skipped`], ignored: [] }
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return { path, permissions: {}, hooks: undefined, warnings: [`${path}: not a JSON object; skipped`], ignored: [] }
  }
  const settings = json as Record<string, unknown>
  const lists = (typeof settings["permissions"] === "object" && settings["permissions"] !== null ? settings["permissions"] : {}) as Record<string, unknown>
  const permissions: { -readonly [K in keyof PermissionLists]: PermissionLists[K] } = {}
  for (const kind of ["allow", "ask", "deny"] as const) {
    const { bad, list } = strings(lists[kind])
    if (bad > 0) warnings.push(`${path}: permissions.${kind}: ${bad} entries that are not strings; skipped`)
    if (list.length > 0) permissions[kind] = list
  }
  let hooks: HooksSource | undefined
  if (settings["hooks"] !== undefined) {
    const decoded = decodeHooks(settings["hooks"])
    if (Result.isSuccess(decoded)) hooks = { source: path, hooks: decoded.success }
    else {
      const issue = formatter(decoded.failure.issue).issues[0]
      const at = (issue?.path ?? []).map(String).join(".")
      warnings.push(`${path}: hooks${at === "" ? "" : `.${at}`}: ${issue?.message.split("\n")[0] ?? "invalid"}; hooks of this file skipped`)
    }
  }
  // the sandbox keys are read on their own (sandboxSettings.ts)
  const ignored = Object.keys(settings).filter((key) => key !== "permissions" && key !== "hooks" && key !== "sandbox")
  return { path, permissions, hooks, warnings, ignored }
}

/**
 * Reads the files that exist, confined to the workspace and its owner like the workspace's own
 * settings; an unreadable one is a warning.
 */
export const load = (workspace: string) =>
  Effect.gen(function*() {
    const found: Array<ClaudeSettings> = []
    for (const path of claudeSettingsPaths(workspace)) {
      const read = yield* readConfined(path, { within: workspace, ownedByUser: true, maxBytes: MAX_SETTINGS_BYTES })
      if (read._tag === "Missing" || read._tag === "Skipped") continue
      const problem = problemOf(read, MAX_SETTINGS_BYTES)
      if (problem !== undefined) {
        found.push({ path, permissions: {}, hooks: undefined, warnings: [`${path}: cannot read: ${problem}`], ignored: [] })
      } else found.push(parse(path, textOf(read) ?? ""))
    }
    return found
  })
