/**
 * `grep`: searches the workspace's text files for a regular expression, with a cap on matches so a
 * broad pattern cannot flood the context window.
 *
 * @example
 * ```ts
 * import { ToolRegistry, makeGrep } from "effect-agent-loop"
 * const tools = ToolRegistry.layer([makeGrep({ maxMatches: 50 })])
 * ```
 */
import { Effect, FileSystem, Glob, Path, Schema } from "effect"
import { ToolError } from "../domain/errors.ts"
import * as Tool from "../domain/Tool.ts"
import { SKIPPED_DIRECTORIES } from "./listDir.ts"
import { fsToolError, Workspace } from "./workspace.ts"

/** Limits of `grep`. */
export interface GrepOptions {
  /** Most matches in one result. Default 200. */
  readonly maxMatches?: number
  /** Files larger than this are skipped (and counted in a note). Default 1 MiB. */
  readonly maxFileBytes?: number
  /** Matching lines longer than this many characters are cut. Default 500. */
  readonly maxLineLength?: number
}

/** The default cap on matches of one `grep` result. */
export const DEFAULT_GREP_MAX_MATCHES = 200

/** The arguments of `grep`. */
export const GrepParameters = Schema.Struct({
  pattern: Schema.String.annotate({ description: "JavaScript regular expression to search for, e.g. \"function \\\\w+\"" }),
  path: Schema.optionalKey(
    Schema.String.annotate({ description: "File or directory to search, relative to the workspace root (default \".\")" })
  ),
  glob: Schema.optionalKey(
    Schema.String.annotate({
      description: "Only search files whose name matches this glob, e.g. \"*.ts\"; a glob with a `/` is matched " +
        "against the path relative to the workspace root, e.g. \"src/**/*.ts\""
    })
  ),
  ignore_case: Schema.optionalKey(Schema.Boolean.annotate({ description: "Match case-insensitively (default false)" }))
})

/** `grep` with the given limits. */
export const makeGrep = (options: GrepOptions = {}) => {
  const maxMatches = options.maxMatches ?? DEFAULT_GREP_MAX_MATCHES
  const maxFileBytes = options.maxFileBytes ?? 1024 * 1024
  const maxLineLength = options.maxLineLength ?? 500
  return Tool.make({
    name: "grep",
    description: "Searches text files in the workspace for a JavaScript regular expression and returns matching " +
      `lines as \`file:line: text\` (file relative to the workspace root, line 1-based). Skips ` +
      `${[...SKIPPED_DIRECTORIES].join(", ")}, symbolic links, binary files and files over ${maxFileBytes} bytes. ` +
      `Returns at most ${maxMatches} matches; narrow the pattern, path or glob when the result says it stopped.`,
    parameters: GrepParameters,
    readOnly: true,
    execute: ({ pattern, path: input = ".", glob, ignore_case = false }) =>
      Effect.gen(function*() {
        const workspace = yield* Workspace
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const regex = yield* Effect.try({
          try: () => new RegExp(pattern, ignore_case ? "i" : ""),
          catch: (e) =>
            new ToolError({
              message: `Invalid regular expression ${JSON.stringify(pattern)}: ${(e as Error).message}. ` +
                "Patterns use JavaScript RegExp syntax; escape special characters such as ( [ { . * + ? with \\"
            })
        })
        const filter = glob === undefined ? undefined : Glob.make(glob, { dot: true })
        const selected = (relative: string) =>
          filter === undefined || Glob.match(filter, glob!.includes("/") ? relative : path.basename(relative))

        const start = yield* workspace.resolve(input)
        const info = yield* fs.stat(start).pipe(Effect.mapError((e) => fsToolError(input, e)))
        const matches: Array<string> = []
        let capped = false
        let skippedLarge = 0

        const searchFile = (file: string): Effect.Effect<void> =>
          Effect.gen(function*() {
            const { size } = yield* fs.stat(file)
            if (size > BigInt(maxFileBytes)) {
              skippedLarge++
              return
            }
            const bytes = yield* fs.readFile(file)
            if (bytes.subarray(0, 8192).includes(0)) return
            const lines = new TextDecoder().decode(bytes).split(/\r?\n/)
            const shown = workspace.display(file)
            for (let i = 0; i < lines.length; i++) {
              const line = lines[i]!
              if (!regex.test(line)) continue
              if (matches.length >= maxMatches) {
                capped = true
                return
              }
              const text = line.length > maxLineLength ? `${line.slice(0, maxLineLength)}…` : line
              matches.push(`${shown}:${i + 1}: ${text}`)
            }
          }).pipe(Effect.ignore)

        const walk = (directory: string): Effect.Effect<void> =>
          Effect.gen(function*() {
            const entries = yield* fs.readDirectoryEntries(directory).pipe(Effect.orElseSucceed(() => []))
            const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
            for (const entry of sorted) {
              if (capped) return
              const child = path.join(directory, entry.name)
              if (entry.type === "Directory") {
                if (!SKIPPED_DIRECTORIES.has(entry.name)) yield* walk(child)
              } else if (entry.type === "File" && selected(workspace.display(child))) {
                yield* searchFile(child)
              }
            }
          })

        if (info.type === "Directory") yield* walk(start)
        else yield* searchFile(start)

        const notes: Array<string> = []
        if (capped) notes.push(`[stopped after ${maxMatches} matches; narrow the pattern, path or glob to see the rest]`)
        if (skippedLarge > 0) notes.push(`[skipped ${skippedLarge} file(s) larger than ${maxFileBytes} bytes]`)
        if (matches.length === 0) {
          return [`No matches for /${pattern}/ in "${input}"${glob === undefined ? "" : ` (glob ${glob})`}`, ...notes]
            .join("\n")
        }
        return [...matches, ...notes].join("\n")
      })
  })
}

/** `grep` with default limits. */
export const grep = makeGrep()
