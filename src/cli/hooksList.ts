/**
 * `agent-loop hooks list`: the file hooks a run in this workspace would load, in run order, and
 * why any were skipped (the workspace's own hooks when it is not trusted).
 */
import { Effect, Option } from "effect"
import { discover, resolveDirs } from "../layers/FileHooks.ts"
import { clean } from "./safeText.ts"
import { Screen } from "./screen.ts"
import * as Trust from "./trust.ts"

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
    if (!trusted) {
      const warning = yield* Trust.skippedWarning(dirs.workDir)
      if (warning !== undefined) yield* screen.line(clean(warning))
    }
  })
