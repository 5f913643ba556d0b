/**
 * The permission rules and Claude Code hooks of every settings level (`settingsLevels.ts`), in
 * Claude Code's precedence, then the flags' rules. Deny and ask rules apply from every level, an
 * untrusted workspace's files too; allow rules and hooks come from the user's own files always and
 * from a repository's only once it is trusted. Also what Claude Code's files say beyond rules and
 * hooks (`env`, `model`, `apiKeyHelper`, `defaultMode`), for `settings.ts` to apply.
 */
import * as Effect from "effect/Effect"
import type { HooksSource } from "../../layers/claudeHooks/config.ts"
import { problemOf, readConfined, textOf } from "../../layers/internal/readConfined.ts"
import * as ClaudeSettings from "../config/claudeSettings.ts"
import * as SettingsFile from "../config/settingsFile.ts"
import * as SettingsLevels from "../config/settingsLevels.ts"
import { parseRule, type Rule, RuleError, type RuleKind } from "../permissions/rules.ts"
import * as Permissions from "../permissions/state.ts"
import { fail } from "../terminal/failure.ts"
import { clean } from "../terminal/safeText.ts"

/** A line about the settings: a warning, or a note. */
export interface Notice {
  readonly level: "warn" | "note"
  readonly text: string
}

/** Rules of `lists` from `source`; one that cannot be read fails (ours) or is a warning (Claude Code's files). */
export const rulesOf = (lists: SettingsFile.PermissionLists | undefined, source: string, strict: boolean, notices: Array<Notice>) =>
  Effect.gen(function*() {
    const rules: Array<Rule> = []
    for (const kind of ["deny", "ask", "allow"] as const satisfies ReadonlyArray<RuleKind>) {
      for (const text of lists?.[kind] ?? []) {
        const rule = parseRule(text, kind, source)
        if (!(rule instanceof RuleError)) {
          rules.push(rule)
          continue
        }
        const message = `${source}: permissions.${kind}: ${JSON.stringify(clean(text))}: ${rule.message}`
        if (strict) return yield* fail(message)
        notices.push({ level: "warn", text: `${message}; skipped` })
      }
    }
    return rules
  })

/** The narrowing rules of `lists`: what an untrusted level still gives. */
const narrowing = (lists: SettingsFile.PermissionLists): SettingsFile.PermissionLists => ({
  ...(lists.deny === undefined ? {} : { deny: lists.deny }),
  ...(lists.ask === undefined ? {} : { ask: lists.ask })
})

/** The permission lists of one of the loop's own files that is not read as settings (an untrusted workspace's), leniently. */
const untrustedLists = (level: SettingsLevels.SettingsLevel) =>
  Effect.gen(function*() {
    const read = yield* readConfined(level.path, { within: level.within, ownedByUser: level.ownedByUser, maxBytes: SettingsFile.MAX_SETTINGS_BYTES, warn: false })
    if (read._tag !== "Read" || problemOf(read, SettingsFile.MAX_SETTINGS_BYTES) !== undefined) return {}
    return ClaudeSettings.parse(level.path, textOf(read) ?? "", level.scope, "agent-loop").permissions
  })

/** What the flags add to the rules. */
export interface FlagRules {
  readonly settings: boolean
  readonly claudeSettings: boolean
  readonly allow: ReadonlyArray<string>
  readonly deny: ReadonlyArray<string>
  /** Claude Code's `--allowedTools` and `--disallowedTools`: lists of rules split at commas and spaces outside parentheses. */
  readonly allowedTools?: ReadonlyArray<string>
  readonly disallowedTools?: ReadonlyArray<string>
}

/** The rules of Claude Code's list flags: `"Bash(git log:*) Read,Edit"` is three; a rule's own spaces and commas stay. */
export const splitToolList = (values: ReadonlyArray<string>): ReadonlyArray<string> => {
  const rules: Array<string> = []
  for (const value of values) {
    let depth = 0
    let current = ""
    for (const char of value) {
      if (char === "(") depth++
      else if (char === ")") depth = Math.max(0, depth - 1)
      if (depth === 0 && (char === "," || /\s/.test(char))) {
        if (current !== "") rules.push(current)
        current = ""
      } else current += char
    }
    if (current !== "") rules.push(current)
  }
  return rules
}

/**
 * The rules and hooks of every level in order (user, project, local; Claude Code's file of a
 * level before the loop's own), then `--allow` and `--deny`. `files` are the loop's own files
 * already read as settings (`settings.ts`: the user's, and a trusted workspace's).
 */
export const permissionsAndHooks = (
  flags: FlagRules,
  files: ReadonlyArray<SettingsFile.LoadedSettings>,
  workspace: string,
  trusted: boolean,
  env: NodeJS.ProcessEnv,
  notices: Array<Notice>
) =>
  Effect.gen(function*() {
    const rules: Array<Rule> = []
    const hooks: Array<HooksSource> = []
    const claude = flags.settings && flags.claudeSettings ? yield* ClaudeSettings.loadAll(workspace, env) : []
    // the Claude Code files whose keys beyond deny rules apply
    const applied: Array<ClaudeSettings.ClaudeSettings> = []
    for (const level of flags.settings ? SettingsLevels.levels(workspace, env) : []) {
      const widens = SettingsLevels.widens(level, trusted)
      if (level.format === "agent-loop") {
        const file = files.find((loaded) => loaded.path === level.path)
        if (file !== undefined) {
          rules.push(...yield* rulesOf(file.settings.permissions, file.path, true, notices))
          if (file.settings.hooks !== undefined) hooks.push({ source: file.path, hooks: file.settings.hooks })
        } else if (!widens) {
          rules.push(...yield* rulesOf(narrowing(yield* untrustedLists(level)), level.path, false, []))
        }
        continue
      }
      const file = claude.find((found) => found.path === level.path)
      if (file === undefined) continue
      // an untrusted workspace's file gives its deny and ask rules and nothing else; the trust warning names it
      if (widens) for (const warning of file.warnings) notices.push({ level: "warn", text: warning })
      rules.push(...yield* rulesOf(widens ? file.permissions : narrowing(file.permissions), file.path, false, widens ? notices : []))
      if (!widens) continue
      if (file.hooks !== undefined) hooks.push(file.hooks)
      applied.push(file)
    }
    rules.push(...yield* rulesOf({ allow: flags.allow }, "--allow", true, notices))
    rules.push(...yield* rulesOf({ deny: flags.deny }, "--deny", true, notices))
    rules.push(...yield* rulesOf({ allow: splitToolList(flags.allowedTools ?? []) }, "--allowedTools", true, notices))
    rules.push(...yield* rulesOf({ deny: splitToolList(flags.disallowedTools ?? []) }, "--disallowedTools", true, notices))
    const saveTarget = trusted ? yield* SettingsLevels.saveTarget(workspace) : undefined
    return { permissions: Permissions.make(rules, workspace, saveTarget), hooks, rules, claude: applied as ReadonlyArray<ClaudeSettings.ClaudeSettings> }
  })
