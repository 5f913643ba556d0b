/**
 * `agent-loop hooks list`: the file hooks a run in this workspace would load, in run order, then
 * the hooks in Claude Code's shape of the settings files, and why any were skipped (the
 * workspace's own hooks when it is not trusted).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { commandText, compile } from "../../layers/claudeHooks/config.ts"
import { discover, resolveDirs } from "../../layers/FileHooks.ts"
import * as SettingsFile from "../config/settingsFile.ts"
import * as Trust from "../config/trust.ts"
import { type Notice, permissionsAndHooks } from "../settings/permissionSources.ts"
import { clean } from "../terminal/safeText.ts"
import { Screen } from "../terminal/screen.ts"

/** Lists the file hooks of the user and, when it is trusted, of the workspace. */
export const list = (workspace: Option.Option<string>) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const dirs = resolveDirs(Option.match(workspace, { onNone: () => ({}), onSome: (workDir) => ({ workDir }) }))
    const trusted = yield* Trust.isTrusted(dirs.workDir)
    const found = yield* discover({ ...dirs, project: trusted })
    if (found.hooks.length === 0) yield* screen.line(`no file hooks in ${clean(dirs.userDir)}${trusted ? ` or ${clean(dirs.projectDir)}` : ""}`)
    for (const hook of found.hooks) {
      const matcher = [hook.toolMatcher && `tool ~ ${hook.toolMatcher.source}`, hook.patternMatcher && `args ~ ${hook.patternMatcher.source}`]
        .filter((part) => part)
        .join(", ")
      yield* screen.text(
        clean(`${hook.name}  ${hook.trigger}${matcher === "" ? "" : ` (${matcher})`}  priority ${hook.priority}`) +
          `${hook.async ? "  async" : ""}  ${screen.out.dim(clean(`${hook.level}: ${hook.path}`))}\n`
      )
    }
    for (const problem of found.problems) {
      yield* screen.line(clean(`skipped ${problem.path}: ${problem.field}: ${problem.message}`))
    }
    // every level's hooks that apply: the user's always, a repository's once it is trusted
    const notices: Array<Notice> = []
    const files = [
      ...Option.toArray(yield* SettingsFile.load(SettingsFile.userSettingsPath(), { within: SettingsFile.configDir() })),
      ...(trusted ? Option.toArray(yield* SettingsFile.load(SettingsFile.projectSettingsPath(dirs.workDir), { within: dirs.workDir, ownedByUser: true })) : [])
    ]
    const { hooks: sources } = yield* permissionsAndHooks({ settings: true, claudeSettings: true, allow: [], deny: [] }, files, dirs.workDir, trusted, process.env, notices)
    for (const notice of notices) yield* screen.line(clean(notice.text))
    const claude = compile(sources)
    for (const group of claude.groups) {
      const matcher = group.matcher === undefined || group.matcher === "" ? "" : ` (matcher ${group.matcher})`
      for (const command of group.commands) {
        yield* screen.text(clean(`${group.event}[${group.index}]${matcher}  ${commandText(command)}  timeout ${command.timeoutMs / 1000}s`) +
          `  ${screen.out.dim(clean(`settings: ${group.source}`))}\n`)
      }
    }
    for (const warning of claude.warnings) yield* screen.line(clean(`skipped ${warning}`))
    if (!trusted) {
      const warning = yield* Trust.skippedWarning(dirs.workDir)
      if (warning !== undefined) yield* screen.line(clean(warning))
    }
  })
