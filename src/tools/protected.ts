/**
 * Protected locations: the places in a workspace whose files end up being run or trusted — file
 * hooks, project settings (Claude Code's `.claude/` too: its hooks run commands), the workspace's MCP config, git's hooks and config (which git runs
 * on the user's next command), and the configuration editors and shells run on their own (VS Code's
 * tasks, direnv's `.envrc`, npm's `.npmrc`, dev containers). A model that may write files could otherwise turn a file write into
 * code execution without the approval `exec` needs. So `write_file` and `edit_file` ask approval for
 * any path in a protected location, and refuse a path that reaches one through a symbolic link.
 *
 * The approval rule works on the path as the model wrote it, because the loop asks before the tool
 * runs: it is lexical and errs on the side of asking (any letter case, `.`/`..` resolved, a match
 * anywhere in the path). The tool then checks the path it really writes (links resolved, including
 * a protected directory that is itself a link elsewhere in the workspace); a path that lands in a
 * protected location without looking like one is refused, so no spelling gets there unasked.
 *
 * Besides the fixed locations, a host names its own (`protect`, relative to the workspace root):
 * the CLI adds its configuration, data and user hooks directories when they sit inside the
 * workspace (running from `~`), and the directory git runs hooks from when `core.hooksPath` moves
 * it out of `.git` (`gitHooksDirectory`).
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as ChildProcess from "effect/process/ChildProcess"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as nodePath from "node:path"
import { ToolError } from "../domain/errors.ts"
import type { WorkspaceShape } from "./workspace.ts"
import { isWithin } from "../domain/paths.ts"

/**
 * The protected locations, relative to the workspace root: file hooks, settings (ours and Claude
 * Code's), MCP config (Claude Code's, VS Code's and Cursor's), git's directory, and the hooks directories git is commonly pointed at
 * (`.githooks`, husky's `.husky`, which an `npm install` makes git's hooks directory); and the
 * configuration other tools run by themselves: VS Code's settings and tasks (a task run on
 * opening the folder, a terminal profile), direnv's `.envrc` (run on `cd`), npm's `.npmrc` (the
 * scripts' shell, `node-options`), JetBrains' `.idea/` (run configurations) and `.devcontainer/`
 * (`postCreateCommand`). A sandbox binds the same list read-only.
 */
export const PROTECTED_LOCATIONS: ReadonlyArray<string> = [
  ".agents/hooks", ".agent-loop", ".claude", ".mcp.json", ".vscode/mcp.json", ".cursor/mcp.json", ".git", ".githooks", ".husky",
  ".vscode/settings.json", ".vscode/tasks.json", ".envrc", ".npmrc", ".idea", ".devcontainer"
]

/** Case and Unicode form folded, as a case-insensitive file system would see a name. */
const fold = (name: string): string => name.normalize("NFC").toLowerCase()

const segmentsOf = (path: string): ReadonlyArray<string> =>
  nodePath.posix.normalize(path.replaceAll("\\", "/")).split("/").filter((s) => s !== "" && s !== ".").map(fold)

const locations = PROTECTED_LOCATIONS.map(segmentsOf)

/**
 * Whether `path`, as written, names a protected location or something inside one (see the module
 * doc); `extra` are a host's own locations, relative to the workspace root (`""` is all of it).
 */
export const isProtectedPath = (path: string, extra: ReadonlyArray<string> = []): boolean => {
  const segments = segmentsOf(path)
  return [...locations, ...extra.map(segmentsOf)].some((location) =>
    location.length === 0 || segments.some((_, start) => location.every((part, k) => segments[start + k] === part))
  )
}

const within = (candidate: string, location: string): boolean => isWithin(fold(location), fold(candidate))

/** The protected location `absolute` (a canonical path from `resolve`) is in, if any. */
const locationOf = (workspace: WorkspaceShape, absolute: string, extra: ReadonlyArray<string>): Effect.Effect<Option.Option<string>> =>
  Effect.gen(function*() {
    for (const location of [...PROTECTED_LOCATIONS, ...extra]) {
      // a location that is a link leading out of the workspace cannot be written through anyway
      const real = yield* Effect.option(workspace.resolve(location))
      const spelled = nodePath.join(workspace.root, location)
      if (within(absolute, spelled) || (Option.isSome(real) && within(absolute, real.value))) return Option.some(location)
    }
    // the fixed locations of the directories added beside the root (a host's own are about the root)
    for (const root of workspace.additional ?? []) {
      const location = PROTECTED_LOCATIONS.find((location) => within(absolute, nodePath.join(root, location)))
      if (location !== undefined) return Option.some(location)
    }
    return Option.none()
  })

/**
 * Fails when the file the tool is about to write, `absolute`, is in a protected location although
 * `input` does not look like it, so the user was not asked.
 */
export const guardProtected = (
  workspace: WorkspaceShape,
  input: string,
  absolute: string,
  extra: ReadonlyArray<string> = []
): Effect.Effect<void, ToolError> =>
  Effect.gen(function*() {
    if (isProtectedPath(input, extra)) return
    const location = yield* locationOf(workspace, absolute, extra)
    if (Option.isSome(location)) {
      return yield* Effect.fail(
        new ToolError({
          message: `Path "${input}" is inside a protected location (${location.value || "the workspace itself"}) by way of a symbolic link; ` +
            "write to it by its own path so the user is asked to approve the change"
        })
      )
    }
  })

/**
 * Of the directories `dirs` (absolute), those inside the workspace `root`, relative to it as
 * `protect` takes them: each as written and, when it exists, by its real path, so a home reached
 * through a link is matched too. A directory outside the workspace is left out: the file tools
 * cannot reach it anyway.
 */
export const locationsWithin = (root: string, dirs: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>, never, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const realRoot = yield* Effect.orElseSucceed(fs.realPath(root), () => root)
    const found = new Set<string>()
    for (const dir of dirs) {
      const real = yield* Effect.orElseSucceed(fs.realPath(dir), () => dir)
      for (const base of [root, realRoot]) {
        for (const candidate of [nodePath.resolve(dir), real]) {
          if (isWithin(base, candidate)) found.add(nodePath.relative(base, candidate).split(nodePath.sep).join("/"))
        }
      }
    }
    return [...found]
  })

/** How long asking git for its hooks directory may take. */
const GIT_DEADLINE = Duration.seconds(5)

/**
 * The directory git runs the hooks of the repository at `root` from (`git rev-parse --git-path
 * hooks`, so `core.hooksPath` in any of git's config files counts), absolute; `None` outside a
 * repository, without git, or when git does not answer within five seconds. Git refuses a
 * repository another user owns, and then runs none of its hooks either.
 */
export const gitHooksDirectory = (root: string): Effect.Effect<Option.Option<string>, never, ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.gen(function*() {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const lines = yield* spawner.lines(ChildProcess.make("git", ["rev-parse", "--git-path", "hooks"], { cwd: root }))
    const line = lines.find((l) => l.trim() !== "")
    return line === undefined ? Option.none<string>() : Option.some(nodePath.resolve(root, line.trim()))
  }).pipe(
    Effect.timeoutOption(GIT_DEADLINE),
    Effect.map(Option.flatten),
    Effect.orElseSucceed(() => Option.none<string>())
  )
