/**
 * `grep`: searches the workspace's text files for a JavaScript regular expression, with a cap on
 * matches so a broad pattern cannot flood the context window, and a deadline per file so a pattern
 * that backtracks for ever cannot freeze the process (files are matched in worker threads).
 *
 * A directory is walked as `walk.ts` says (`.gitignore`, `.git`, `node_modules`, links and the
 * path rules), and searched as `grepSearch.ts` says: with ripgrep when it is installed and the
 * pattern means the same to it, else by the built-in search; both give the same answer.
 *
 * @example
 * ```ts
 * import { makeGrep, ToolRegistryLive } from "effect-agent-loop"
 * const tools = ToolRegistryLive.layer([makeGrep({ maxMatches: 50 })])
 * ```
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as os from "node:os"
import * as nodePath from "node:path"
import { ToolError } from "../domain/errors.ts"
import * as Tool from "../domain/Tool.ts"
import { kindOfPath, notRegular, openDirectory } from "./confined.ts"
import { fileMatcher } from "./globMatch.ts"
import { requiredLiterals, ripgrepPattern, scansWholeText } from "./grepPattern.ts"
import { searchTree, type SearchOutcome } from "./grepSearch.ts"
import { SKIPPED_DIRECTORIES } from "./listDir.ts"
import { guardPathRules } from "./pathRules.ts"
import { findRipgrep } from "./ripgrep.ts"
import { type FileResult, makeSearchPool, type SearchPool } from "./searchWorkers.ts"
import { DEFAULT_FILE_TOOL_TIMEOUT, scopeOf, shownIn, Workspace } from "./workspace.ts"

/** Limits of `grep`, and how it searches. */
export interface GrepOptions {
  /** Most matches in one result. Default 200. */
  readonly maxMatches?: number
  /** Files larger than this are not searched (a walk passes them by). Default 16 MiB. */
  readonly maxFileBytes?: number
  /** Matching lines longer than this many characters are cut. Default 500. */
  readonly maxLineLength?: number
  /** How long matching one file may take before the pattern is given up on. Default 5 seconds. */
  readonly matchTimeout?: Duration.Input
  /** How long one call may take in all. Default 30 seconds. */
  readonly timeout?: Duration.Input
  /**
   * The ripgrep executable that picks the files to read: a path, or `false` for the built-in search
   * only. Default: `rg` on `PATH`, if it is ripgrep 12 or newer and not inside the workspace.
   */
  readonly ripgrep?: string | false
  /** Most worker threads reading and matching files. Default: the processors, at most 4. */
  readonly threads?: number
}

/** The default cap on matches of one `grep` result. */
export const DEFAULT_GREP_MAX_MATCHES = 200

/** The default deadline for matching one file. */
export const DEFAULT_GREP_MATCH_TIMEOUT = Duration.seconds(5)

/** The default size above which `grep` does not search a file. */
export const DEFAULT_GREP_MAX_FILE_BYTES = 16 * 1024 * 1024

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

/** The refusal of a file the model named that the search threads could not read. */
const unreadable = (input: string, result: Extract<FileResult, { readonly _tag: "Gone" }>): ToolError =>
  new ToolError({
    message: result.code === "ENOENT"
      ? `Path "${input}" does not exist`
      : result.code === "ELOOP"
      ? `Path "${input}" changed while it was being opened (a symbolic link is now where a file was); refusing to follow it`
      : result.code === "EINVAL"
      ? `"${input}" is not a regular file; the file tools only read and write regular files`
      : result.code === "EACCES" || result.code === "EPERM"
      ? `Permission denied for "${input}"`
      : `Cannot read "${input}": ${result.code}`
  })

/** `grep` with the given limits. */
export const makeGrep = (options: GrepOptions = {}) => {
  const maxMatches = options.maxMatches ?? DEFAULT_GREP_MAX_MATCHES
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_GREP_MAX_FILE_BYTES
  const maxLineLength = options.maxLineLength ?? 500
  const matchTimeout = Duration.fromInputUnsafe(options.matchTimeout ?? DEFAULT_GREP_MATCH_TIMEOUT)
  const threads = Math.max(1, options.threads ?? Math.min(4, os.availableParallelism()))
  return Tool.make({
    name: "grep",
    description: "Searches text files in the workspace for a JavaScript regular expression and returns matching " +
      `lines as \`file:line: text\` (file relative to the workspace root, line 1-based). Skips what .gitignore files ` +
      `ignore, ${[...SKIPPED_DIRECTORIES].join(", ")}, symbolic links, binary files and files over ${maxFileBytes} bytes; ` +
      `searches hidden files. Returns at most ${maxMatches} matches; narrow the pattern, path or glob when the result ` +
      `says it stopped. A pattern that takes longer than ${Duration.toMillis(matchTimeout)} ms on one file is stopped.`,
    parameters: GrepParameters,
    readOnly: true,
    idempotent: true,
    timeout: options.timeout ?? DEFAULT_FILE_TOOL_TIMEOUT,
    execute: ({ pattern, path: input = ".", glob, ignore_case = false }) =>
      Effect.scoped(Effect.gen(function*() {
        const workspace = yield* Workspace
        const flags = ignore_case ? "i" : ""
        // compiling only checks the syntax; running the pattern is what can take forever
        yield* Effect.try({
          try: () => new RegExp(pattern, flags),
          catch: (e) =>
            new ToolError({
              message: `Invalid regular expression ${JSON.stringify(pattern)}: ${(e as Error).message}. ` +
                "Patterns use JavaScript RegExp syntax; escape special characters such as ( [ { . * + ? with \\"
            })
        })
        const include = glob === undefined ? undefined : fileMatcher(glob)

        const start = yield* workspace.resolve(input)
        yield* guardPathRules(workspace, "grep", input, start)
        // a search in an added directory runs there, its files shown by their absolute paths
        const { prefix, workspace: scoped } = scopeOf(workspace, start)
        const kind = yield* kindOfPath(scoped.root, start, input)
        if (kind !== "directory" && kind !== "file") return yield* Effect.fail(notRegular(input, kind))

        const pool: SearchPool = yield* Effect.acquireRelease(
          Effect.sync(() =>
            makeSearchPool({
              source: pattern,
              flags,
              maxLineLength,
              maxFileBytes,
              literals: requiredLiterals(pattern, ignore_case),
              scan: scansWholeText(pattern)
            }, threads)
          ),
          (pool) => Effect.promise(() => pool.close())
        )
        /** Every deadline, whether a thread is still on the file it was on at the last one. */
        const deadline = Effect.gen(function*() {
          while (true) {
            yield* Effect.sleep(matchTimeout)
            const stuck = pool.stalled()
            if (stuck !== undefined) {
              return yield* Effect.fail(
                new ToolError({
                  message: `The pattern /${pattern}/ took longer than ${Duration.toMillis(matchTimeout)} ms on ` +
                    `"${stuck}" and was stopped. Simplify it (nested quantifiers such as (a+)+ can take exponential ` +
                    "time) or narrow the path or glob."
                })
              )
            }
          }
        })
        const failed = (error: unknown) => new ToolError({ message: `grep failed: ${error instanceof Error ? error.message : String(error)}` })

        let outcome: Omit<SearchOutcome, "engine">
        if (kind === "file") {
          const directory = yield* openDirectory(scoped.root, nodePath.dirname(start), input)
          const shown = workspace.display(start)
          const [result] = yield* Effect.raceFirst(
            Effect.tryPromise({
              try: () => pool.examine([{ path: nodePath.join(directory.via, nodePath.basename(start)), direct: true }], [shown], maxMatches + 1),
              catch: failed
            }),
            deadline
          )
          if (result === undefined || result._tag === "Gone") return yield* Effect.fail(unreadable(input, result ?? { _tag: "Gone", code: "ENOENT" }))
          if (result._tag === "Binary") {
            return yield* Effect.fail(
              new ToolError({ message: `"${input}" is a binary file (it contains NUL bytes); grep searches text files only` })
            )
          }
          if (result._tag === "Large") {
            return yield* Effect.fail(
              new ToolError({
                message: `"${input}" is larger than ${maxFileBytes} bytes, more than grep searches; read_file reads a ` +
                  "window of it at a time"
              })
            )
          }
          const lines = result.found.map(([index, line]) => `${shown}:${index + 1}: ${line}`)
          outcome = { matches: lines.slice(0, maxMatches), capped: lines.length > maxMatches, binary: 0, asked: 0 }
        } else {
          const directory = yield* openDirectory(scoped.root, start, input)
          // a ripgrep the model could have written (in the workspace or an added directory) is not run
          const rg = yield* Effect.promise(async () => {
            for (const root of workspace.additional ?? []) if ((await findRipgrep(options.ripgrep, root)) === undefined) return undefined
            return findRipgrep(options.ripgrep, workspace.root)
          })
          const rgPattern = rg === undefined ? undefined : ripgrepPattern(pattern, ignore_case)
          const running = yield* Effect.acquireRelease(
            Effect.sync(() =>
              searchTree({
                workspace: scoped,
                start: directory,
                include,
                pool,
                maxMatches,
                ripgrep: rg === undefined || rgPattern === undefined ? undefined : { path: rg, pattern: rgPattern, maxFileBytes }
              })
            ),
            (running) => Effect.promise(() => running.abort())
          )
          const found = yield* Effect.raceFirst(Effect.tryPromise({ try: () => running.outcome, catch: failed }), deadline)
          outcome = prefix === undefined ? found : { ...found, matches: found.matches.map((line) => shownIn(prefix, line)) }
        }

        const notes: Array<string> = []
        if (outcome.capped) notes.push(`[stopped after ${maxMatches} matches; narrow the pattern, path or glob to see the rest]`)
        if (outcome.binary > 0) notes.push(`[${outcome.binary} binary file(s) also match; grep shows lines of text files only]`)
        if (outcome.asked > 0) {
          notes.push(`[${outcome.asked} file(s) or directories the permission rules ask about were not searched; grep them by their own path to be asked]`)
        }
        if (outcome.matches.length === 0) {
          return [`No matches for /${pattern}/ in "${input}"${glob === undefined ? "" : ` (glob ${glob})`}`, ...notes]
            .join("\n")
        }
        return [...outcome.matches, ...notes].join("\n")
      }))
  })
}

/** `grep` with default limits. */
export const grep = makeGrep()
