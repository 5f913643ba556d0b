/**
 * `agent-loop hooks list`: the file hooks a run in this workspace would load, in run order, and
 * why any were skipped.
 */
import { Effect, Option } from "effect"
import { discover, resolveDirs } from "../layers/FileHooks.ts"
import { Screen } from "./screen.ts"

/** Lists the file hooks of the user and of the workspace's project. */
export const list = (workspace: Option.Option<string>) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const dirs = resolveDirs(Option.match(workspace, { onNone: () => ({}), onSome: (workDir) => ({ workDir }) }))
    const found = yield* discover(dirs)
    if (found.hooks.length === 0) yield* screen.line(`no file hooks in ${dirs.userDir} or ${dirs.projectDir}`)
    for (const hook of found.hooks) {
      const matcher = [hook.toolMatcher && `tool ~ ${hook.toolMatcher.source}`, hook.patternMatcher && `args ~ ${hook.patternMatcher.source}`]
        .filter((part) => part)
        .join(", ")
      yield* screen.text(
        `${screen.out.bold(hook.name)}  ${hook.trigger}${matcher === "" ? "" : ` (${matcher})`}  priority ${hook.priority}` +
          `${hook.async ? "  async" : ""}  ${screen.out.dim(`${hook.level}: ${hook.path}`)}\n`
      )
    }
    for (const problem of found.problems) {
      yield* screen.line(`skipped ${problem.path}: ${problem.field}: ${problem.message}`)
    }
  })
