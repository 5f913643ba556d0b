/**
 * Markdown definition files (sub-agents, custom commands): found in the enabled plugins
 * (`plugins.ts`), the user's directories (Claude Code's `~/.claude/`, then agent-loop's config
 * directory) and, in a trusted workspace, in
 * its `.claude/` and `.agent-loop/` folders of one name, each read through the confined reader and
 * parsed by the caller; a later file replaces an earlier one of the same name, and a file that
 * cannot be used is a problem saying why (every `.md` file found is used or named as a problem).
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Result from "effect/Result"
import { readConfined, textOf } from "../../layers/internal/readConfined.ts"
import * as Plugins from "./plugins.ts"
import { claudeUserDir } from "./sandboxSettings.ts"
import { configDir } from "./settingsFile.ts"

/** How deep `nested` discovery looks into subdirectories (namespaces). */
const MAX_DEPTH = 4

/** A file left out, and why. */
export interface FileProblem {
  readonly path: string
  readonly message: string
}

/** A directory of definition files: where they are read from, what they may not lead out of, and whether they must be the user's. */
export interface Directory {
  readonly dir: string
  readonly within: string
  readonly ownedByUser: boolean
  /** A plugin's directory: its commands are named `NAMESPACE:command`. */
  readonly namespace?: string
}

/** The directories of `folder` (`agents`, `commands`, `skills`), in the order they apply: the user's, then a trusted workspace's. */
export const directories = (folder: string, workspace: string, trusted: boolean, env: NodeJS.ProcessEnv = process.env): ReadonlyArray<Directory> => [
  { dir: nodePath.join(claudeUserDir(env), folder), within: claudeUserDir(env), ownedByUser: false },
  { dir: nodePath.join(configDir(env), folder), within: configDir(env), ownedByUser: false },
  ...(trusted
    ? [
      { dir: nodePath.join(workspace, ".claude", folder), within: workspace, ownedByUser: true },
      { dir: nodePath.join(workspace, ".agent-loop", folder), within: workspace, ownedByUser: true }
    ]
    : [])
]

/** The definitions of `folder` found (by name, later ones winning), and the files skipped. */
export const discover = <A extends { readonly name: string }>(options: {
  readonly folder: string
  readonly workspace: string
  readonly trusted: boolean
  readonly maxBytes: number
  /** `relative`: the file's path inside its directory (`git/commit.md` when `nested`). */
  readonly parse: (path: string, text: string, relative: string) => Result.Result<A, string>
  /** Look into subdirectories too (commands' namespaces). */
  readonly nested?: boolean
  readonly env?: NodeJS.ProcessEnv
}) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const found = new Map<string, A>()
    const problems: Array<FileProblem> = []
    // the plugins' first, so that the user's own files and the workspace's win over them
    const plugins = yield* Plugins.directories(options.folder, options.workspace, options.trusted, options.env)
    for (const { dir, namespace, ownedByUser, within } of [...plugins, ...directories(options.folder, options.workspace, options.trusted, options.env)]) {
      const names = yield* Effect.orElseSucceed(fs.readDirectory(dir, { recursive: options.nested === true }), () => [])
      const files = names.filter((name) => name.endsWith(".md") && name.split(nodePath.sep).length <= MAX_DEPTH + 1).sort()
      for (const file of files) {
        const path = nodePath.join(dir, file)
        const read = yield* readConfined(path, { maxBytes: options.maxBytes, within, ownedByUser, warn: false })
        if (read._tag === "Missing") continue
        if (read._tag === "NotRegular") {
          // a directory named `x.md` is a namespace, not a file
          if (!(yield* Effect.orElseSucceed(Effect.map(fs.stat(path), (info) => info.type === "Directory"), () => false))) {
            problems.push({ path, message: "not a regular file" })
          }
          continue
        }
        if (read._tag === "Skipped" || read._tag === "Failed") {
          problems.push({ path, message: read._tag === "Skipped" ? read.reason : read.message })
          continue
        }
        if (read.truncated) {
          problems.push({ path, message: `larger than ${options.maxBytes} bytes` })
          continue
        }
        const parsed = options.parse(path, textOf(read) ?? "", namespace === undefined ? file : nodePath.join(namespace, file))
        if (Result.isFailure(parsed)) problems.push({ path, message: parsed.failure })
        else found.set(parsed.success.name, parsed.success)
      }
    }
    return { found: [...found.values()], problems }
  })
