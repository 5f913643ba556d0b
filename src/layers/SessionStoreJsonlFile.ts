/**
 * The session file format of `SessionStoreJsonl`, and reading it in pieces.
 *
 * Line 1 is a header `{"sessionKey": "<original key>"}`, then one `SessionEntry` (a message or a
 * compaction record, encoded with its Schema) per line, each ending with `\n`.
 *
 * A crash can leave the last line torn, so a bad LAST line is ignored (with a warning) and a
 * writer truncates it before appending. A bad line anywhere else is not a crash artefact but
 * damage: parsing fails naming the line, because silently dropping history (a tool result
 * without its call, a lost user message) would hand the model a corrupted conversation.
 */
import { Effect, type FileSystem, Schema } from "effect"
import { SessionStoreError } from "../domain/errors.ts"
import { SessionEntry } from "../domain/SessionLog.ts"

const EntryLine = Schema.fromJsonString(SessionEntry)
const HeaderLine = Schema.fromJsonString(Schema.Struct({ sessionKey: Schema.String }))
const decodeEntry = Schema.decodeUnknownOption(EntryLine)
/** Decodes a header line. */
export const decodeHeader = Schema.decodeUnknownOption(HeaderLine)
/** Encodes one entry as its line (without the newline). */
export const encodeEntry = Schema.encodeEffect(EntryLine)

/** The header line of a key's file (without the newline). */
export const headerOf = (key: string): string => JSON.stringify({ sessionKey: key })

/** The byte value of `\n`. */
export const NEWLINE = 10
const WINDOW = 64 * 1024

const utf8 = new TextDecoder()

/** Whether `line` is valid as the file's line `first ? 1 : later`. */
export const isValidLine = (line: string, first: boolean): boolean =>
  (first ? decodeHeader(line) : decodeEntry(line))._tag === "Some"

/** What parsing the bytes of a file from some line on gives. */
export interface Parsed {
  /** The entries of the complete, valid lines. */
  readonly entries: Array<SessionEntry>
  /** The bytes of those lines (with the header when parsing started at the file's start). */
  readonly consumed: number
  /** How many lines that is. */
  readonly lines: number
  /** A valid last line without its newline: part of the session, but not yet a finished line. */
  readonly unterminated: SessionEntry | undefined
  /** Whether the last line (terminated or not) is torn or corrupt, and was ignored. */
  readonly torn: boolean
}

/**
 * Parses `bytes`, which start at line `before + 1` of the file named `name` (line 1 is the
 * header, checked against `key`). See the module doc for the torn/corrupt line rules.
 */
export const parse = (
  key: string,
  name: string,
  bytes: Uint8Array,
  before: number
): Effect.Effect<Parsed, SessionStoreError> =>
  Effect.gen(function*() {
    const lastNewline = bytes.lastIndexOf(NEWLINE)
    const lines = lastNewline < 0 ? [] : utf8.decode(bytes.subarray(0, lastNewline)).split("\n")
    const rest = bytes.subarray(lastNewline + 1)
    const total = before + lines.length + (rest.length > 0 ? 1 : 0)
    const entries: Array<SessionEntry> = []
    const corrupt = (n: number) =>
      new SessionStoreError({ sessionKey: key, message: `session file ${name}: line ${n} of ${total} is corrupt` })
    const torn = (n: number) =>
      Effect.as(Effect.logWarning(`session file ${name}: ignoring torn last line ${n}`), true)
    let consumed = lastNewline + 1
    for (let i = 0; i < lines.length; i++) {
      const n = before + i + 1
      const line = lines[i]!
      if (n === 1) {
        const header = decodeHeader(line)
        if (header._tag === "Some" && header.value.sessionKey !== key) {
          return yield* new SessionStoreError({ sessionKey: key, message: `session file ${name} belongs to another key` })
        }
        if (header._tag === "Some") continue
      } else {
        const entry = decodeEntry(line)
        if (entry._tag === "Some") {
          entries.push(entry.value)
          continue
        }
      }
      if (n < total) return yield* corrupt(n)
      // The last line, terminated but bad: not consumed, so that a writer truncates it.
      consumed = lines.length > 1 ? bytes.lastIndexOf(NEWLINE, lastNewline - 1) + 1 : 0
      return { entries, consumed, lines: lines.length - 1, unterminated: undefined, torn: yield* torn(n) }
    }
    if (rest.length === 0) return { entries, consumed, lines: lines.length, unterminated: undefined, torn: false }
    const text = utf8.decode(rest)
    const unterminated = total === 1 ? undefined : decodeEntry(text)
    const valid = total === 1 ? decodeHeader(text)._tag === "Some" : unterminated?._tag === "Some"
    return {
      entries,
      consumed,
      lines: lines.length,
      unterminated: unterminated?._tag === "Some" ? unterminated.value : undefined,
      torn: valid ? false : yield* torn(total)
    }
  })

/** The bytes of `[from, to)` of a file (a read may return fewer bytes than asked). */
export const readRange = (file: FileSystem.File, from: number, to: number) =>
  Effect.gen(function*() {
    const out = new Uint8Array(to - from)
    let filled = 0
    while (filled < out.length) {
      const read = yield* file.readAlloc(out.length - filled, { position: BigInt(from + filled) })
      if (read._tag === "None") break
      out.set(read.value, filled)
      filled += read.value.length
    }
    return filled === out.length ? out : out.subarray(0, filled)
  })

/** The start offset and bytes of the last line in `[0, end)`, reading backwards in growing windows. */
export const lastLine = (file: FileSystem.File, end: number) =>
  Effect.gen(function*() {
    for (let window = WINDOW;; window *= 2) {
      const from = Math.max(0, end - window)
      const bytes = yield* readRange(file, from, end)
      const newline = bytes.lastIndexOf(NEWLINE)
      if (newline >= 0) return { start: from + newline + 1, bytes: bytes.subarray(newline + 1) }
      if (from === 0) return { start: 0, bytes }
    }
  })

/** The first line of a file, reading forward in growing windows. */
export const firstLine = (file: FileSystem.File) =>
  Effect.gen(function*() {
    for (let window = WINDOW;; window *= 2) {
      const bytes = yield* readRange(file, 0, window)
      const newline = bytes.indexOf(NEWLINE)
      if (newline >= 0 || bytes.length < window) return utf8.decode(newline >= 0 ? bytes.subarray(0, newline) : bytes)
    }
  })
