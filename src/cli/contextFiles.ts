/**
 * Project context files: the instructions people keep for agents in `AGENTS.md` (and `CLAUDE.md`),
 * added to the system prompt. Read, in this order (the nearest last, so it wins where they
 * disagree): the user's `$XDG_CONFIG_HOME/agent-loop/AGENTS.md`, then from the repository root (the
 * nearest directory above the workspace holding `.git`, else the workspace itself) down to the
 * workspace, in each directory `AGENTS.md` then `CLAUDE.md`. Only regular files are read (a FIFO
 * named `AGENTS.md` must not hang the start), each up to `MAX_CONTEXT_FILE_BYTES`; a file that
 * is the same as one already read (a symlink, a copy) is read once.
 */
import * as nodePath from "node:path"
import { Effect, FileSystem, Option } from "effect"
import { configDir } from "./settingsFile.ts"

/** The most bytes kept of one context file; the rest is cut with a note saying how much. */
export const MAX_CONTEXT_FILE_BYTES = 32 * 1024

/** The names looked for in each directory, in order. */
export const CONTEXT_FILE_NAMES = ["AGENTS.md", "CLAUDE.md"] as const

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

/** The text of a regular file, cut at `MAX_CONTEXT_FILE_BYTES`; `None` for anything else or an unreadable file. */
const readCapped = (fs: FileSystem.FileSystem, path: string) =>
  Effect.gen(function*() {
    const info = yield* Effect.option(fs.stat(path))
    if (Option.isNone(info) || info.value.type !== "File") return Option.none<string>()
    // never more than the cap is read, however large the file
    const head = yield* Effect.option(Effect.scoped(Effect.flatMap(fs.open(path), (file) => file.readAlloc(MAX_CONTEXT_FILE_BYTES))))
    if (Option.isNone(head)) return Option.none<string>()
    const bytes = Option.getOrElse(head.value, () => new Uint8Array(0))
    const size = Number(info.value.size)
    if (size <= bytes.length) return Option.some(new TextDecoder().decode(bytes))
    // a character cut in half becomes U+FFFD; it is dropped rather than shown
    const kept = new TextDecoder().decode(bytes).replace(/\uFFFD+$/, "")
    return Option.some(`${kept}\n[truncated: the first ${bytes.length} of ${size} bytes are shown]`)
  })

/** Finds and reads the context files of `workspace` (absolute), in the order they go into the prompt. */
export const discover = (workspace: string, env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const candidates: Array<{ readonly path: string; readonly label: string }> = [
      { path: nodePath.join(configDir(env), "AGENTS.md"), label: "(user) AGENTS.md" }
    ]
    for (const dir of yield* projectDirs(fs, workspace)) {
      for (const name of CONTEXT_FILE_NAMES) {
        const path = nodePath.join(dir, name)
        candidates.push({ path, label: nodePath.relative(workspace, path) })
      }
    }
    const files: Array<ContextFile> = []
    const seen = new Set<string>()
    for (const candidate of candidates) {
      const content = yield* readCapped(fs, candidate.path)
      if (Option.isNone(content)) continue
      const real = yield* Effect.orElseSucceed(fs.realPath(candidate.path), () => candidate.path)
      if (seen.has(real) || files.some((file) => file.content === content.value)) continue
      seen.add(real)
      files.push({ ...candidate, content: content.value })
    }
    return files as ReadonlyArray<ContextFile>
  })

/** `systemPrompt` followed by the context files, each under its label; `systemPrompt` alone when there are none. */
export const withContextFiles = (systemPrompt: string, files: ReadonlyArray<ContextFile>): string => {
  if (files.length === 0) return systemPrompt
  const sections = files.map((file) => `## ${file.label}\n\n${file.content.trim()}`)
  return [
    systemPrompt,
    "# Project instructions\n\nThese files hold the user's and the project's instructions (AGENTS.md and CLAUDE.md); " +
    "where they disagree, the later one wins.",
    ...sections
  ].join("\n\n")
}
