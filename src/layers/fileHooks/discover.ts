/**
 * Finding file hooks on disk: user-level, then project-level, in the Agent Hooks layout
 * (`NAME/HOOK.md` + `NAME/scripts/run|run.sh|run.py`).
 *
 * Only front matter is read. Every broken hook (a non-executable entry script included) becomes a
 * `HookProblem` and is left out; the rest are returned in run order (priority, then user before project, then name), with a project
 * hook replacing the user hook of the same name.
 */
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { readConfined, textOf } from "../internal/readConfined.ts"
import { type HookProblem, type Manifest, parse, type Trigger } from "./manifest.ts"
import { isWithin } from "../../domain/paths.ts"

/** Where hooks are looked for; every field has a default, overridable for tests. */
export interface DiscoverOptions {
  /** Default `$XDG_CONFIG_HOME/agents/hooks`, else `~/.config/agents/hooks`. */
  readonly userDir?: string
  /** Default `<workDir>/.agents/hooks`. */
  readonly projectDir?: string
  /** The project root and the scripts' working directory; default the process's cwd. */
  readonly workDir?: string
  /**
   * Whether to load the project (workspace) level at all; default true. A host passes false for a
   * workspace its user has not trusted: its hooks are files a model or a cloned repository can
   * write, and must not run code until the user says so.
   */
  readonly project?: boolean
}

/** Where a hook was found. */
export type Level = "user" | "project"

/** A valid hook on disk, ready to run. */
export interface FileHook {
  readonly name: string
  readonly description: string
  readonly trigger: Trigger
  readonly toolMatcher: RegExp | undefined
  readonly patternMatcher: RegExp | undefined
  /** Milliseconds. */
  readonly timeout: number
  readonly async: boolean
  readonly priority: number
  readonly level: Level
  /** The `HOOK.md`. */
  readonly path: string
  /** The entry script. */
  readonly entry: string
  /** The argv that runs the entry script (the executable script itself). */
  readonly command: ReadonlyArray<string>
  /** Variables the script is given although they look like credentials (`env` in `HOOK.md`). */
  readonly env: ReadonlyArray<string>
}

/** The hooks found and the problems with the ones left out. */
export interface Discovery {
  readonly hooks: ReadonlyArray<FileHook>
  readonly problems: ReadonlyArray<HookProblem>
}

/**
 * An XDG base directory: `$variable` when it is an absolute path (the XDG spec says to ignore a
 * relative one), else `fallback` under the home directory. Shared with the CLI's data directory.
 */
export const xdgBase = (variable: string, fallback: string, env: Readonly<Record<string, string | undefined>> = process.env): string => {
  const value = env[variable]
  return value !== undefined && path.isAbsolute(value) ? value : path.join(os.homedir(), fallback)
}

/** The directories of `options`, defaults filled in. */
export const resolveDirs = (options: DiscoverOptions = {}) => {
  const workDir = path.resolve(options.workDir ?? process.cwd())
  const configHome = xdgBase("XDG_CONFIG_HOME", ".config")
  return {
    workDir,
    userDir: path.resolve(workDir, options.userDir ?? path.join(configHome, "agents", "hooks")),
    projectDir: path.resolve(workDir, options.projectDir ?? path.join(workDir, ".agents", "hooks"))
  }
}

/** Entry scripts in order of preference. */
const entries: ReadonlyArray<string> = ["run", "run.sh", "run.py"]

/**
 * The first entry script present. It must be executable (it runs directly, by its `#!` line): a
 * script that is not is never run through an interpreter, since making a file executable is the
 * user's sign that it may run, and a model that can write files cannot set it.
 */
const findEntry = (fs: FileSystem.FileSystem, hookDir: string, manifestPath: string) =>
  Effect.gen(function*() {
    for (const file of entries) {
      const entry = path.join(hookDir, "scripts", file)
      const info = yield* Effect.option(fs.stat(entry))
      if (Option.isNone(info) || info.value.type !== "File") continue
      if ((info.value.mode & 0o111) !== 0) return Result.succeed({ entry, command: [entry] })
      return Result.fail<HookProblem>({
        path: manifestPath,
        field: "scripts/run",
        message: `${entry} is not executable; hook scripts run only when executable (chmod +x it)`
      })
    }
    return Result.fail<HookProblem>({
      path: manifestPath,
      field: "scripts/run",
      message: "no entry script: expected scripts/run, scripts/run.sh or scripts/run.py"
    })
  })

const toFileHook = (manifest: Manifest, level: Level, manifestPath: string, entry: { entry: string; command: ReadonlyArray<string> }): FileHook => ({
  name: manifest.name,
  description: manifest.description,
  trigger: manifest.trigger,
  toolMatcher: manifest.matcher?.tool === undefined ? undefined : new RegExp(manifest.matcher.tool),
  patternMatcher: manifest.matcher?.pattern === undefined ? undefined : new RegExp(manifest.matcher.pattern),
  timeout: manifest.timeout,
  async: manifest.async,
  priority: manifest.priority,
  level,
  path: manifestPath,
  entry: entry.entry,
  command: entry.command,
  env: manifest.env
})

/** The largest `HOOK.md` read: front matter and a description, a few KiB in practice. */
export const MAX_MANIFEST_BYTES = 256 * 1024

const loadOne = (fs: FileSystem.FileSystem, level: Level, hookDir: string, within: string) =>
  Effect.gen(function*() {
    const manifestPath = path.join(hookDir, "HOOK.md")
    // the workspace's hooks are the user's own only when they belong to the user (or root), as for its settings
    const read = yield* readConfined(manifestPath, { within, ownedByUser: level === "project", maxBytes: MAX_MANIFEST_BYTES })
    const text = textOf(read)
    if (read._tag === "Skipped") return Result.fail<ReadonlyArray<HookProblem>>([])
    if (text === undefined || read._tag !== "Read" || read.truncated) {
      const message = read._tag === "Read" ? `larger than ${MAX_MANIFEST_BYTES} bytes` : "missing or unreadable"
      return Result.fail<ReadonlyArray<HookProblem>>([{ path: manifestPath, field: "HOOK.md", message }])
    }
    const manifest = parse(manifestPath, text)
    if (Result.isFailure(manifest)) return Result.fail(manifest.failure)
    const entry = yield* findEntry(fs, hookDir, manifestPath)
    if (Result.isFailure(entry)) return Result.fail([entry.failure])
    return Result.succeed(toFileHook(manifest.success, level, manifestPath, entry.success))
  })

/**
 * `dir`'s hooks. Their manifests are read only inside `within` with links resolved (the workspace for
 * the project's hooks, the user's hooks directory for theirs): a `HOOK.md` leading elsewhere is skipped
 * with a warning naming it, and so is a project `HOOK.md` of another user.
 */
const loadLevel = (fs: FileSystem.FileSystem, level: Level, dir: string, within: string) =>
  Effect.gen(function*() {
    const hooks: Array<FileHook> = []
    const problems: Array<HookProblem> = []
    if (!(yield* Effect.orElseSucceed(fs.exists(dir), () => false))) return { hooks, problems }
    const names = yield* Effect.result(fs.readDirectory(dir))
    if (Result.isFailure(names)) {
      problems.push({ path: dir, field: "directory", message: names.failure.message })
      return { hooks, problems }
    }
    for (const name of [...names.success].sort()) {
      const hookDir = path.join(dir, name)
      const info = yield* Effect.option(fs.stat(hookDir))
      if (Option.isNone(info) || info.value.type !== "Directory") continue
      const loaded = yield* loadOne(fs, level, hookDir, within)
      if (Result.isFailure(loaded)) problems.push(...loaded.failure)
      else hooks.push(loaded.success)
    }
    return { hooks, problems }
  })

const levelRank = (level: Level): number => (level === "user" ? 0 : 1)

/** Finds the hooks of both levels; never fails, problems are returned instead. */
export const discover = (options: DiscoverOptions = {}): Effect.Effect<Discovery, never, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const dirs = resolveDirs(options)
    const projectRoot = isWithin(dirs.workDir, dirs.projectDir) ? dirs.workDir : dirs.projectDir
    // the user's hooks directory may itself be a link (dotfiles); a hook in it may not lead out of it
    const user = yield* loadLevel(fs, "user", dirs.userDir, dirs.userDir)
    const project = options.project === false || dirs.projectDir === dirs.userDir
      ? { hooks: [], problems: [] }
      : yield* loadLevel(fs, "project", dirs.projectDir, projectRoot)
    const problems = [...user.problems, ...project.problems]
    const byName = new Map<string, FileHook>()
    for (const hook of [...user.hooks, ...project.hooks]) {
      const existing = byName.get(hook.name)
      if (existing !== undefined && existing.level === hook.level) {
        problems.push({ path: hook.path, field: "name", message: `duplicate name "${hook.name}", already used by ${existing.path}` })
        continue
      }
      byName.set(hook.name, hook)
    }
    const hooks = [...byName.values()].sort((a, b) =>
      b.priority - a.priority || levelRank(a.level) - levelRank(b.level) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    return { hooks, problems }
  })
