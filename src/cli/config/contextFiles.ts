/**
 * Project context files: the instructions people keep for agents in `AGENTS.md` (and `CLAUDE.md`),
 * added to the system prompt. Read, in this order (the nearest last, so it wins where they
 * disagree): the user's `$XDG_CONFIG_HOME/agent-loop/AGENTS.md`, then from the repository root (the
 * nearest directory above the workspace holding `.git`, else the workspace itself) down to the
 * workspace, in each directory `AGENTS.md` then `CLAUDE.md` (the `contextFiles` setting names others). Only regular files are read (a FIFO
 * named `AGENTS.md` must not hang the start), each up to `MAX_CONTEXT_FILE_BYTES`; a file that
 * is the same as one already read (a symlink, a copy) is read once.
 *
 * A repository decides what its names point to, so a project file is read only when it stays inside
 * the directory it is found in (the user's, inside their config directory) with links resolved, and only when it
 * and its directory belong to the user or root, as git's `safe.directory` asks of a repository: an
 * `AGENTS.md` another user planted in a shared directory is skipped with a warning (`readConfined`).
 *
 * Memory as Claude Code keeps it is read too: the user's `~/.claude/CLAUDE.md` (after agent-loop's
 * own user file), and `CLAUDE.local.md` after `CLAUDE.md` in each directory (both when `CLAUDE.md`
 * is among the names). `@path` imports (`memoryImports.ts`) follow each file, five hops deep at most,
 * each imported file a section of its own right after the one importing it. An import is read with
 * the confinement of the file importing it: one in a repository's file stays inside the repository
 * (the workspace outside one) and is skipped with a warning when it leaves it; one in the user's
 * own memory files may name any file of the user's.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import { readConfined, textOf } from "../../layers/internal/readConfined.ts"
import { importsOf, MAX_IMPORT_DEPTH, resolveImport } from "./memoryImports.ts"
import { claudeUserDir } from "./sandboxSettings.ts"
import { configDir } from "./settingsFile.ts"
import { describe } from "./settingsLevels.ts"

/** The most bytes kept of one context file; the rest is cut with a note saying how much. */
export const MAX_CONTEXT_FILE_BYTES = 32 * 1024

/** The names looked for in each directory, in order, unless the `contextFiles` setting names others. */
export const CONTEXT_FILE_NAMES: ReadonlyArray<string> = ["AGENTS.md", "CLAUDE.md"]

/** A context file that was read. */
export interface ContextFile {
  /** Absolute. */
  readonly path: string
  /** How the system prompt names it: relative to the workspace, or `(user) AGENTS.md`. */
  readonly label: string
  readonly content: string
}

/** The directories from the repository root down to `workspace` (just `workspace` outside a repository). */
const projectDirs = (fs: FileSystem.FileSystem, workspace: string) =>
  Effect.gen(function*() {
    const chain: Array<string> = []
    let dir = workspace
    while (true) {
      chain.push(dir)
      if (yield* Effect.orElseSucceed(fs.exists(nodePath.join(dir, ".git")), () => false)) return chain.reverse()
      const parent = nodePath.dirname(dir)
      if (parent === dir) return [workspace]
      dir = parent
    }
  })

/**
 * The text of a regular file inside `within`, cut at `MAX_CONTEXT_FILE_BYTES`; `None` for anything
 * else. A file that leaves `within` by a link, or (`ownedByUser`) belongs to another user, is
 * skipped with a warning naming it.
 */
const readCapped = (path: string, within: string, ownedByUser: boolean) =>
  Effect.gen(function*() {
    const read = yield* readConfined(path, { within, ownedByUser, maxBytes: MAX_CONTEXT_FILE_BYTES })
    const text = textOf(read)
    if (read._tag !== "Read" || text === undefined) return Option.none<{ readonly text: string; readonly real: string }>()
    if (!read.truncated) return Option.some({ text, real: read.real })
    const of = read.size > read.bytes.length ? ` of ${read.size}` : ""
    return Option.some({ text: `${text}\n[truncated: the first ${read.bytes.length}${of} bytes are shown]`, real: read.real })
  })

/** A file to read as context: where it is, how the prompt names it, and the confinement it is read with. */
interface Candidate {
  readonly path: string
  readonly label: string
  readonly within: string
  readonly project: boolean
}

/**
 * Finds and reads the context files of `workspace` (absolute), in the order they go into the
 * prompt; `names` are looked for in each directory (the user's config directory keeps `AGENTS.md`).
 */
export const discover = (workspace: string, env: NodeJS.ProcessEnv = process.env, names: ReadonlyArray<string> = CONTEXT_FILE_NAMES) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    // the user's config directory may itself be a link (dotfiles); its AGENTS.md may not lead out of it
    const userRoot = configDir(env)
    const claude = names.includes("CLAUDE.md")
    const candidates: Array<Candidate> = [
      { path: nodePath.join(configDir(env), "AGENTS.md"), label: "(user) AGENTS.md", within: userRoot, project: false },
      ...(claude ? [{ path: nodePath.join(claudeUserDir(env), "CLAUDE.md"), label: "(user) ~/.claude/CLAUDE.md", within: claudeUserDir(env), project: false }] : [])
    ]
    const dirs = yield* projectDirs(fs, workspace)
    // a project file's imports stay inside the repository (the workspace outside one)
    const repository = dirs[0]!
    for (const dir of dirs) {
      for (const name of claude ? [...names, "CLAUDE.local.md"] : names) {
        const path = nodePath.join(dir, name)
        // each stays inside the directory it is found in: a repository root may be a home directory
        // (a dotfiles repository), and a file below it must not reach the rest of the home
        candidates.push({ path, label: nodePath.relative(workspace, path), within: dir, project: true })
      }
    }
    const files: Array<ContextFile> = []
    const seen = new Set<string>()
    const home = env["HOME"] ?? nodePath.dirname(claudeUserDir(env))
    /** Reads `candidate` and, depth first, what it imports. */
    const visit = (candidate: Candidate, depth: number): Effect.Effect<void> =>
      Effect.gen(function*() {
        const read = yield* readCapped(candidate.path, candidate.within, candidate.project)
        if (Option.isNone(read)) return
        const { real, text } = read.value
        if (seen.has(real) || files.some((file) => file.content === text)) return
        seen.add(real)
        files.push({ path: candidate.path, label: candidate.label, content: text })
        if (depth >= MAX_IMPORT_DEPTH) return
        for (const imported of importsOf(text)) {
          const path = resolveImport(imported, real, home)
          const label = candidate.project ? nodePath.relative(workspace, path) : describe(path, env)
          yield* visit({
            path,
            label: `${label} (imported by ${candidate.label})`,
            // the user's own memory may import any file of theirs
            within: candidate.project ? repository : nodePath.parse(path).root,
            project: candidate.project
          }, depth + 1)
        }
      })
    for (const candidate of candidates) yield* visit(candidate, 0)
    return files as ReadonlyArray<ContextFile>
  })

/** `systemPrompt` followed by the context files, each under its label; `systemPrompt` alone when there are none. */
export const withContextFiles = (systemPrompt: string, files: ReadonlyArray<ContextFile>): string => {
  if (files.length === 0) return systemPrompt
  const sections = files.map((file) => `## ${file.label}\n\n${file.content.trim()}`)
  return [
    systemPrompt,
    "# Project instructions\n\nThese files hold the user's and the project's instructions; " +
    "where they disagree, the later one wins.",
    ...sections
  ].join("\n\n")
}
