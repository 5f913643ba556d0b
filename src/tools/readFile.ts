/**
 * `read_file`: shows a text file, or a window of its lines, with line numbers, never more than a
 * size cap at once so one large file cannot flood the context window.
 *
 * @example
 * ```ts
 * import { makeReadFile, ToolRegistryLive } from "effect-agent-loop"
 * const tools = ToolRegistryLive.layer([makeReadFile({ maxBytes: 64 * 1024 })])
 * ```
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { ToolError } from "../domain/errors.ts"
import { decodeUtf8Head } from "../domain/text.ts"
import * as Tool from "../domain/Tool.ts"
import { chunksOf, filesOf } from "./files.ts"
import { guardPathRules } from "./pathRules.ts"
import { hasNul, SNIFF_BYTES, utf8Checker } from "./textBytes.ts"
import { DEFAULT_FILE_TOOL_TIMEOUT, Workspace } from "./workspace.ts"

/** Limits of `read_file`. */
export interface ReadFileOptions {
  /** Most bytes of numbered output returned by one call. Default 256 KiB. */
  readonly maxBytes?: number
  /** How long one call may take. Default 30 seconds. */
  readonly timeout?: Duration.Input
}

/** The default size cap of one `read_file` result. */
export const DEFAULT_READ_MAX_BYTES = 256 * 1024

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

/** The arguments of `read_file`. */
export const ReadFileParameters = Schema.Struct({
  path: Schema.String.annotate({ description: "File to read, relative to the workspace root" }),
  offset: Schema.optionalKey(
    PositiveInt.annotate({ description: "1-based line number to start reading from (default 1)" })
  ),
  limit: Schema.optionalKey(
    PositiveInt.annotate({ description: "Most lines to return (default: as many as fit in the size cap)" })
  )
})

const encoder = new TextEncoder()
const byteLength = (text: string): number => encoder.encode(text).length

/** The first `maxBytes` bytes of `text`, cut on a character boundary. */
const truncateUtf8 = (text: string, maxBytes: number): string => {
  const bytes = encoder.encode(text)
  return bytes.length <= maxBytes ? text : decodeUtf8Head(bytes, maxBytes)
}

/**
 * A stateful map over decoded text that cuts every line to `keep` characters and keeps the line
 * breaks (`\r\n`, `\r`, `\n`, as `Stream.splitLines` splits), so that splitting the result never
 * holds more than `keep` characters of one line: a 1 GB file without a line break is read in
 * constant memory, not gathered into one string. `keep` is at least 1, so that a last line without
 * a line break is never cut to nothing (and lost).
 */
export const capLines = (keep: number) => {
  keep = Math.max(1, keep)
  let run = 0
  return (text: string): string => {
    const parts: Array<string> = []
    let from = 0
    let cr = text.indexOf("\r")
    let lf = text.indexOf("\n")
    while (from < text.length) {
      // each search runs forward only, so a chunk is scanned once whatever its line breaks
      if (cr !== -1 && cr < from) cr = text.indexOf("\r", from)
      if (lf !== -1 && lf < from) lf = text.indexOf("\n", from)
      const end = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf)
      const stop = end === -1 ? text.length : end
      if (run < keep) parts.push(text.slice(from, from + Math.min(stop - from, keep - run)))
      run += stop - from
      if (end === -1) break
      parts.push(text[end]!)
      run = 0
      from = end + 1
    }
    return parts.join("")
  }
}

/** `read_file` with the given limits. */
export const makeReadFile = (options: ReadFileOptions = {}) => {
  const maxBytes = options.maxBytes ?? DEFAULT_READ_MAX_BYTES
  return Tool.make({
    name: "read_file",
    description: "Reads a UTF-8 text file in the workspace. Each output line is prefixed with its 1-based line " +
      "number and a tab, like `cat -n`; the prefix is not part of the file (leave it out when quoting text to " +
      `edit_file). At most ${maxBytes} bytes are returned per call; when the output is cut, a note at the end ` +
      "gives the offset to pass to read the next part. Use offset and limit to read a range of lines.",
    parameters: ReadFileParameters,
    readOnly: true,
    idempotent: true,
    timeout: options.timeout ?? DEFAULT_FILE_TOOL_TIMEOUT,
    execute: ({ path, offset = 1, limit }, context) =>
      Effect.scoped(Effect.gen(function*() {
        const workspace = yield* Workspace
        const absolute = yield* workspace.resolve(path)
        yield* guardPathRules(workspace, "read_file", path, absolute)
        const file = yield* filesOf(workspace).open({ absolute, input: path, sessionKey: context.sessionKey })
        if (hasNul(yield* file.read(0, SNIFF_BYTES))) {
          return yield* Effect.fail(
            new ToolError({ message: `"${path}" looks like a binary file (it contains NUL bytes); read_file shows text only` })
          )
        }
        const utf8 = utf8Checker()

        const shown: Array<string> = []
        let lineNumber = 0
        let used = 0
        let stop: "limit" | "size" | "cut" | undefined
        yield* chunksOf(file).pipe(
          Stream.map((chunk) => {
            utf8.push(chunk)
            return chunk
          }),
          Stream.decodeText,
          // no line is held longer than can be shown (the cap in characters is at least the cap in bytes)
          Stream.map(capLines(maxBytes + 1)),
          Stream.splitLines,
          Stream.runForEachWhile((line) =>
            Effect.sync(() => {
              lineNumber++
              if (lineNumber < offset) return true
              if (limit !== undefined && shown.length === limit) {
                stop = "limit"
                return false
              }
              const numbered = `${String(lineNumber).padStart(6)}\t${line}`
              const size = byteLength(numbered) + 1
              if (used + size > maxBytes) {
                if (shown.length === 0) {
                  shown.push(truncateUtf8(numbered, maxBytes))
                  stop = "cut"
                } else {
                  stop = "size"
                }
                return false
              }
              shown.push(numbered)
              used += size
              return true
            })
          )
        )

        if (lineNumber === 0) return `(empty file "${path}")`
        if (shown.length === 0) {
          return yield* Effect.fail(
            new ToolError({ message: `offset ${offset} is past the end of "${path}", which has ${lineNumber} lines` })
          )
        }
        const last = offset + shown.length - 1
        const next = last + 1
        switch (stop) {
          case "cut":
            shown.push(
              `[line ${last} is longer than the ${maxBytes}-byte limit and was cut; ` +
                `call read_file with offset=${next} to read the lines after it]`
            )
            break
          case "size":
            shown.push(
              `[output truncated at the ${maxBytes}-byte limit after line ${last}; ` +
                `call read_file with offset=${next} to continue]`
            )
            break
          case "limit":
            shown.push(`[more lines follow; call read_file with offset=${next} to continue]`)
            break
        }
        if (!utf8.valid()) {
          shown.push(
            `[note: "${path}" is not valid UTF-8; undecodable bytes are shown as \uFFFD, and edit_file will not edit it]`
          )
        }
        return shown.join("\n")
      }))
  })
}

/** `read_file` with default limits. */
export const readFile = makeReadFile()
