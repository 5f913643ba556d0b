/**
 * Every settings level a run reads, with Claude Code's precedence (a later level wins where they
 * disagree): the user's (`~/.claude/settings.json`, then agent-loop's own
 * `$XDG_CONFIG_HOME/agent-loop/settings.json`), the project's (`.claude/settings.json`, then
 * `.agent-loop/settings.json`), and the local one (`.claude/settings.local.json`, kept out of git).
 *
 * What a level may do depends on whose it is. Deny and ask rules only narrow, so they apply from
 * every level, a repository that is not trusted too. Whatever runs code or widens what the model
 * may do (allow rules, hooks, `env`, `apiKeyHelper`, `defaultMode`, sandbox keys that weaken it)
 * comes from the user's own files always, and from a repository's only once the workspace is
 * trusted (`trust.ts`).
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import { claudeUserDir, claudeUserSettingsPath } from "./sandboxSettings.ts"
import { configDir, projectSettingsPath, userSettingsPath } from "./settingsFile.ts"

/** Whose a level is: the user's own, the repository's, or the repository's local (uncommitted) one. */
export type Scope = "user" | "project" | "local"

/** One settings file a run reads. */
export interface SettingsLevel {
  readonly scope: Scope
  /** `claude`: Claude Code's shape, read leniently (a part that cannot be used is a warning); `agent-loop`: the loop's own, decoded strictly. */
  readonly format: "claude" | "agent-loop"
  /** Absolute. */
  readonly path: string
  /** The directory the file may not lead out of (links resolved). */
  readonly within: string
  /** Read only when it and its directory belong to the user or root (a repository's files). */
  readonly ownedByUser: boolean
}

/** The settings files of a run in `workspace` (absolute), lowest precedence first. */
export const levels = (workspace: string, env: NodeJS.ProcessEnv = process.env): ReadonlyArray<SettingsLevel> => [
  { scope: "user", format: "claude", path: claudeUserSettingsPath(env), within: claudeUserDir(env), ownedByUser: false },
  { scope: "user", format: "agent-loop", path: userSettingsPath(env), within: configDir(env), ownedByUser: false },
  { scope: "project", format: "claude", path: nodePath.join(workspace, ".claude", "settings.json"), within: workspace, ownedByUser: true },
  { scope: "project", format: "agent-loop", path: projectSettingsPath(workspace), within: workspace, ownedByUser: true },
  { scope: "local", format: "claude", path: nodePath.join(workspace, ".claude", "settings.local.json"), within: workspace, ownedByUser: true }
]

/** Whether what `level` widens (allow rules, hooks, `env`, `apiKeyHelper`, permission modes, a weaker sandbox) applies. */
export const widens = (level: Pick<SettingsLevel, "scope">, trusted: boolean): boolean => level.scope === "user" || trusted

/** How a level is named in lists and messages: its scope and its path, with the home directory as `~`. */
export const describe = (path: string, env: NodeJS.ProcessEnv = process.env): string => {
  const home = env["HOME"]
  return home !== undefined && home !== "" && path.startsWith(`${home}${nodePath.sep}`) ? `~${path.slice(home.length)}` : path
}

/**
 * Where "always allow" saves a rule: `.claude/settings.local.json` in a repository that has a
 * `.claude/` directory (as Claude Code saves it), else the workspace's `.agent-loop/settings.json`.
 */
export const saveTarget = (workspace: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const claude = nodePath.join(workspace, ".claude")
    const info = yield* Effect.option(fs.stat(claude))
    return info._tag === "Some" && info.value.type === "Directory" ? nodePath.join(claude, "settings.local.json") : projectSettingsPath(workspace)
  })
