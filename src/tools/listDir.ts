/**
 * `list_dir`: the entries of a workspace directory, optionally a few levels deep, capped so a
 * large tree cannot flood the context window.
 *
 * @example
 * ```ts
 * import { makeListDir, ToolRegistryLive } from "effect-agent-loop"
 * const tools = ToolRegistryLive.layer([makeListDir({ maxEntries: 200 })])
 * ```
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as nodePath from "node:path"
import { ToolError } from "../domain/errors.ts"
import * as Tool from "../domain/Tool.ts"
import { type Directory, entriesOf, type FileKind, kindOfPath, openDirectory, openSubdirectory } from "./confined.ts"
import { guardPathRules, walkRule } from "./pathRules.ts"
import { DEFAULT_FILE_TOOL_TIMEOUT, type PathRuleVerdict, rootOf, Workspace } from "./workspace.ts"

/** Limits of `list_dir`. */
export interface ListDirOptions {
  /** Most entries in one result. Default 1000. */
  readonly maxEntries?: number
  /** Levels listed by a recursive call that gives no `max_depth`. Default 3. */
  readonly defaultDepth?: number
  /** Upper bound of `max_depth`. Default 10. */
  readonly maxDepth?: number
  /** How long one call may take. Default 30 seconds. */
  readonly timeout?: Duration.Input
}

/** Directories that are listed but never descended into: they are large and rarely what is wanted. */
export const SKIPPED_DIRECTORIES: ReadonlySet<string> = new Set([".git", "node_modules"])

/** The mark of a directory a recursive listing does not enter because of a permission rule. */
const notListed = (rule: PathRuleVerdict) =>
  ` [not listed: the permission rule ${rule.rule} ${rule._tag === "Deny" ? "denies it" : "asks about it; list it by its own path to be asked"}]`

/** How entries that no file tool reads are marked, so the model does not try. */
const MARKS: Partial<Record<FileKind, string>> = { fifo: " [FIFO]", socket: " [socket]", device: " [device]" }

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

/** The arguments of `list_dir`. */
export const ListDirParameters = Schema.Struct({
  path: Schema.optionalKey(
    Schema.String.annotate({ description: "Directory to list, relative to the workspace root (default \".\")" })
  ),
  recursive: Schema.optionalKey(
    Schema.Boolean.annotate({ description: "Also list the contents of subdirectories (default false)" })
  ),
  max_depth: Schema.optionalKey(
    PositiveInt.annotate({ description: "With recursive: how many levels to list; 1 is the directory itself" })
  )
})

/** `list_dir` with the given limits. */
export const makeListDir = (options: ListDirOptions = {}) => {
  const maxEntries = options.maxEntries ?? 1000
  const maxDepth = options.maxDepth ?? 10
  const defaultDepth = Math.min(options.defaultDepth ?? 3, maxDepth)
  return Tool.make({
    name: "list_dir",
    description: "Lists a directory in the workspace, entries sorted by name, directories marked with a trailing " +
      `\`/\`. With recursive, lists subdirectories too (default ${defaultDepth} levels, at most ${maxDepth}), ` +
      `as paths relative to the listed directory; ${[...SKIPPED_DIRECTORIES].join(" and ")} are shown but not ` +
      `entered, nor are symbolic links. FIFOs, sockets and devices are marked [FIFO], [socket], [device]; no tool ` +
      `reads them. At most ${maxEntries} entries are returned.`,
    parameters: ListDirParameters,
    readOnly: true,
    idempotent: true,
    timeout: options.timeout ?? DEFAULT_FILE_TOOL_TIMEOUT,
    execute: ({ path: input = ".", recursive = false, max_depth }) =>
      Effect.scoped(Effect.gen(function*() {
        const workspace = yield* Workspace
        const absolute = yield* workspace.resolve(input)
        yield* guardPathRules(workspace, "list_dir", input, absolute)
        // a directory added beside the root is opened from its own root
        const root = rootOf(workspace, absolute)
        if ((yield* kindOfPath(root, absolute, input)) !== "directory") {
          return yield* Effect.fail(new ToolError({ message: `"${input}" is not a directory; use read_file to read a file` }))
        }
        const ruleOf = walkRule(workspace, "list_dir", absolute)
        const depth = recursive ? Math.min(max_depth ?? defaultDepth, maxDepth) : 1
        const lines: Array<string> = []
        let capped = false

        const walk = (directory: Directory, prefix: string, level: number): Effect.Effect<void, ToolError> =>
          Effect.gen(function*() {
            const entries = yield* entriesOf(directory, prefix === "" ? input : prefix)
            const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
            for (const entry of sorted) {
              if (lines.length >= maxEntries) {
                capped = true
                return
              }
              const isDirectory = entry.kind === "directory"
              const name = `${prefix}${entry.name}${isDirectory ? "/" : ""}`
              const enters = isDirectory && level < depth && !SKIPPED_DIRECTORIES.has(entry.name)
              // names are shown, denied ones too (as Claude Code does); a directory the rules keep from list_dir is not entered
              const rule = enters ? ruleOf(nodePath.join(directory.absolute, entry.name)) : undefined
              lines.push(`${name}${MARKS[entry.kind] ?? ""}${rule === undefined ? "" : notListed(rule)}`)
              if (enters && rule === undefined) {
                yield* Effect.scoped(
                  Effect.flatMap(openSubdirectory(directory, entry.name, name), (child) => walk(child, name, level + 1))
                ).pipe(Effect.catch(() => Effect.sync(() => lines.push(`${name} [unreadable]`))))
              }
            }
          })

        yield* walk(yield* openDirectory(root, absolute, input), "", 1)
        if (lines.length === 0) return `(empty directory "${input}")`
        if (capped) {
          lines.push(
            `[listing stopped at ${maxEntries} entries; list a subdirectory${recursive ? " or lower max_depth" : ""} ` +
              "to see the rest]"
          )
        }
        return lines.join("\n")
      }))
  })
}

/** `list_dir` with default limits. */
export const listDir = makeListDir()
