/**
 * Protected locations: the places in a workspace whose files end up being run or trusted — file
 * hooks, project settings (Claude Code's `.claude/` too: its hooks run commands), the workspace's MCP config, and git's hooks and config (which git runs
 * on the user's next command). A model that may write files could otherwise turn a file write into
 * code execution without the approval `exec` needs. So `write_file` and `edit_file` ask approval for
 * any path in a protected location, and refuse a path that reaches one through a symbolic link.
 *
 * The approval rule works on the path as the model wrote it, because the loop asks before the tool
 * runs: it is lexical and errs on the side of asking (any letter case, `.`/`..` resolved, a match
 * anywhere in the path). The tool then checks the path it really writes (links resolved, including
 * a protected directory that is itself a link elsewhere in the workspace); a path that lands in a
 * protected location without looking like one is refused, so no spelling gets there unasked.
 */
import { Effect, Option } from "effect"
import * as nodePath from "node:path"
import { ToolError } from "../domain/errors.ts"
import type { WorkspaceShape } from "./workspace.ts"

/** The protected locations, relative to the workspace root. */
export const PROTECTED_LOCATIONS: ReadonlyArray<string> = [".agents/hooks", ".agent-loop", ".claude", ".mcp.json", ".git"]

/** Case and Unicode form folded, as a case-insensitive file system would see a name. */
const fold = (name: string): string => name.normalize("NFC").toLowerCase()

const segmentsOf = (path: string): ReadonlyArray<string> =>
  nodePath.posix.normalize(path.replaceAll("\\", "/")).split("/").filter((s) => s !== "" && s !== ".").map(fold)

const locations = PROTECTED_LOCATIONS.map(segmentsOf)

/** Whether `path`, as written, names a protected location or something inside one (see the module doc). */
export const isProtectedPath = (path: string): boolean => {
  const segments = segmentsOf(path)
  return locations.some((location) =>
    segments.some((_, start) => location.every((part, k) => segments[start + k] === part))
  )
}

const within = (candidate: string, location: string): boolean => {
  const rel = nodePath.relative(fold(location), fold(candidate))
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${nodePath.sep}`) && !nodePath.isAbsolute(rel))
}

/** The protected location `absolute` (a canonical path from `resolve`) is in, if any. */
const locationOf = (workspace: WorkspaceShape, absolute: string): Effect.Effect<Option.Option<string>> =>
  Effect.gen(function*() {
    for (const location of PROTECTED_LOCATIONS) {
      // a location that is a link leading out of the workspace cannot be written through anyway
      const real = yield* Effect.option(workspace.resolve(location))
      const spelled = nodePath.join(workspace.root, location)
      if (within(absolute, spelled) || (Option.isSome(real) && within(absolute, real.value))) return Option.some(location)
    }
    return Option.none()
  })

/**
 * Fails when the file the tool is about to write, `absolute`, is in a protected location although
 * `input` does not look like it, so the user was not asked.
 */
export const guardProtected = (workspace: WorkspaceShape, input: string, absolute: string): Effect.Effect<void, ToolError> =>
  Effect.gen(function*() {
    if (isProtectedPath(input)) return
    const location = yield* locationOf(workspace, absolute)
    if (Option.isSome(location)) {
      return yield* Effect.fail(
        new ToolError({
          message: `Path "${input}" is inside a protected location (${location.value}) by way of a symbolic link; ` +
            "write to it by its own path so the user is asked to approve the change"
        })
      )
    }
  })
