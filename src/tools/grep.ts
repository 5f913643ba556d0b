/**
 * `grep`: searches the workspace's text files for a regular expression, with a cap on matches so a
 * broad pattern cannot flood the context window, and a deadline per file so a pattern that
 * backtracks forever cannot freeze the process (the matching runs in a worker thread).
 *
 * @example
 * ```ts
 * import { makeGrep, ToolRegistryLive } from "effect-agent-loop"
 * const tools = ToolRegistryLive.layer([makeGrep({ maxMatches: 50 })])
 * ```
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Glob from "effect/Glob"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as nodePath from "node:path"
import { ToolError } from "../domain/errors.ts"
import * as Tool from "../domain/Tool.ts"
import { type Directory, entriesOf, kindOfPath, notRegular, openDirectory, openFile, openSubdirectory, readAt } from "./confined.ts"
import { type LineMatcher, makeLineMatcher, RegexTimeout } from "./lineMatcher.ts"
import { SKIPPED_DIRECTORIES } from "./listDir.ts"
import { guardPathRules, walkRule } from "./pathRules.ts"
import { hasNul, SNIFF_BYTES } from "./textBytes.ts"
import { DEFAULT_FILE_TOOL_TIMEOUT, Workspace } from "./workspace.ts"

/** Limits of `grep`. */
export interface GrepOptions {
  /** Most matches in one result. Default 200. */
  readonly maxMatches?: number
  /** Files larger than this are skipped (and counted in a note). Default 1 MiB. */
  readonly maxFileBytes?: number
  /** Matching lines longer than this many characters are cut. Default 500. */
  readonly maxLineLength?: number
  /** How long matching one file may take before the pattern is given up on. Default 5 seconds. */
  readonly matchTimeout?: Duration.Input
  /** How long one call may take in all. Default `DEFAULT_FILE_TOOL_TIMEOUT`. */
  readonly timeout?: Duration.Input
}

/** The default cap on matches of one `grep` result. */
export const DEFAULT_GREP_MAX_MATCHES = 200

/** The default deadline for matching one file. */
export const DEFAULT_GREP_MATCH_TIMEOUT = Duration.seconds(5)

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

const byName = (a: { readonly name: string }, b: { readonly name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** `grep` with the given limits. */
export const makeGrep = (options: GrepOptions = {}) => {
  const maxMatches = options.maxMatches ?? DEFAULT_GREP_MAX_MATCHES
  const maxFileBytes = options.maxFileBytes ?? 1024 * 1024
  const maxLineLength = options.maxLineLength ?? 500
  const matchTimeout = Duration.fromInputUnsafe(options.matchTimeout ?? DEFAULT_GREP_MATCH_TIMEOUT)
  return Tool.make({
    name: "grep",
    description: "Searches text files in the workspace for a JavaScript regular expression and returns matching " +
      `lines as \`file:line: text\` (file relative to the workspace root, line 1-based). Skips ` +
      `${[...SKIPPED_DIRECTORIES].join(", ")}, symbolic links, binary files and files over ${maxFileBytes} bytes. ` +
      `Returns at most ${maxMatches} matches; narrow the pattern, path or glob when the result says it stopped. ` +
      `A pattern that takes longer than ${Duration.toMillis(matchTimeout)} ms on one file is stopped.`,
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
        const matcher: LineMatcher = yield* makeLineMatcher({ source: pattern, flags, timeout: matchTimeout, maxLineLength })
        const filter = glob === undefined ? undefined : Glob.make(glob, { dot: true })
        const selected = (relative: string) =>
          filter === undefined || Glob.match(filter, glob!.includes("/") ? relative : nodePath.posix.basename(relative))

        const matches: Array<string> = []
        let capped = false
        let skippedLarge = 0
        let skippedBinary = 0
        let skippedAsked = 0

        /**
         * Searches `name` in `directory`. `direct` when the model named this file: then a file that
         * cannot be searched is an error; met in a walk, it is passed by (binary and large ones counted).
         */
        const searchFile = (directory: Directory, name: string, direct: boolean) =>
          Effect.scoped(Effect.gen(function*() {
            const shown = workspace.display(nodePath.join(directory.absolute, name))
            const opened = yield* openFile(directory, name, direct ? input : shown).pipe(
              Effect.flatMap((file) => file.size > maxFileBytes ? Effect.succeed(undefined) : readAt(file, shown, 0, file.size)),
              direct ? Effect.map(Option.some) : Effect.option
            )
            if (Option.isNone(opened)) return
            const bytes = opened.value
            if (bytes === undefined) {
              skippedLarge++
              return
            }
            if (hasNul(bytes.subarray(0, SNIFF_BYTES))) {
              if (direct) {
                return yield* Effect.fail(
                  new ToolError({ message: `"${input}" is a binary file (it contains NUL bytes); grep searches text files only` })
                )
              }
              skippedBinary++
              return
            }
            const found = yield* matcher.match(new TextDecoder().decode(bytes), maxMatches - matches.length + 1).pipe(
              Effect.catchTag("RegexTimeout", (timeout: RegexTimeout) =>
                Effect.fail(
                  new ToolError({
                    message: `The pattern /${pattern}/ took longer than ${Duration.toMillis(timeout.timeout)} ms on ` +
                      `"${shown}" and was stopped. Simplify it (nested quantifiers such as (a+)+ can take exponential ` +
                      "time) or narrow the path or glob."
                  })
                ))
            )
            for (const [index, line] of found) {
              if (matches.length >= maxMatches) {
                capped = true
                return
              }
              matches.push(`${shown}:${index + 1}: ${line}`)
            }
          }))

        const start = yield* workspace.resolve(input)
        yield* guardPathRules(workspace, "grep", input, start)
        const ruleOf = walkRule(workspace, "grep", start)

        /**
         * Walks `directory` in name order; a subdirectory that cannot be opened is passed by, and so
         * is what the path rules deny (unreported) or ask about (counted).
         */
        const walk = (directory: Directory): Effect.Effect<void, ToolError> =>
          Effect.gen(function*() {
            const entries = yield* entriesOf(directory, input).pipe(Effect.orElseSucceed(() => []))
            for (const entry of [...entries].sort(byName)) {
              if (capped) return
              const rule = ruleOf(nodePath.join(directory.absolute, entry.name))
              if (rule !== undefined) {
                if (rule._tag === "Ask") skippedAsked++
                continue
              }
              if (entry.kind === "directory") {
                if (SKIPPED_DIRECTORIES.has(entry.name)) continue
                yield* Effect.scoped(Effect.gen(function*() {
                  const child = yield* Effect.option(openSubdirectory(directory, entry.name, input))
                  if (Option.isSome(child)) yield* walk(child.value)
                }))
              } else if (entry.kind === "file" && selected(workspace.display(nodePath.join(directory.absolute, entry.name)))) {
                yield* searchFile(directory, entry.name, false)
              }
            }
          })

        const kind = yield* kindOfPath(workspace.root, start, input)
        if (kind === "directory") {
          yield* walk(yield* openDirectory(workspace.root, start, input))
        } else if (kind === "file") {
          yield* searchFile(yield* openDirectory(workspace.root, nodePath.dirname(start), input), nodePath.basename(start), true)
        } else {
          return yield* Effect.fail(notRegular(input, kind))
        }

        const notes: Array<string> = []
        if (capped) notes.push(`[stopped after ${maxMatches} matches; narrow the pattern, path or glob to see the rest]`)
        if (skippedLarge > 0) notes.push(`[skipped ${skippedLarge} file(s) larger than ${maxFileBytes} bytes]`)
        if (skippedBinary > 0) notes.push(`[skipped ${skippedBinary} binary file(s)]`)
        if (skippedAsked > 0) {
          notes.push(`[${skippedAsked} file(s) or directories the permission rules ask about were not searched; grep them by their own path to be asked]`)
        }
        if (matches.length === 0) {
          return [`No matches for /${pattern}/ in "${input}"${glob === undefined ? "" : ` (glob ${glob})`}`, ...notes]
            .join("\n")
        }
        return [...matches, ...notes].join("\n")
      }))
  })
}

/** `grep` with default limits. */
export const grep = makeGrep()
