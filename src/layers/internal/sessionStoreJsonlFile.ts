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
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as PlatformError from "effect/PlatformError"
import * as Schema from "effect/Schema"
import { SessionStoreError } from "../../domain/errors.ts"
import { SessionEntry } from "../../domain/SessionLog.ts"

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
  /** The last `TAIL` (or fewer) of those bytes. */
  readonly tail: Uint8Array
  /** How many lines that is. */
  readonly lines: number
  /** A valid last line without its newline: part of the session, but not yet a finished line. */
  readonly unterminated: SessionEntry | undefined
  /** Whether the last line (terminated or not) is torn or corrupt, and was ignored. */
  readonly torn: boolean
}

/** How many of the last bytes read `Parsed.tail` keeps. */
export const TAIL = 64

/** The last `TAIL` bytes of `before` followed by `line` and a newline. */
const tailAfter = (before: Uint8Array, line: Uint8Array): Uint8Array => {
  const keep = Math.min(TAIL, before.length + line.length + 1)
  const out = new Uint8Array(keep)
  out[keep - 1] = NEWLINE
  const fromLine = Math.min(line.length, keep - 1)
  out.set(line.subarray(line.length - fromLine), keep - 1 - fromLine)
  const fromBefore = keep - 1 - fromLine
  if (fromBefore > 0) out.set(before.subarray(before.length - fromBefore), 0)
  return out
}

/** How many bytes a load reads at a time: the memory a load needs beyond the decoded entries is about this plus the longest line. */
export const READ_CHUNK = 1024 * 1024

/**
 * Parses a file line by line, from line `before + 1` on, as its bytes are pushed in pieces: only
 * the line being completed is held as bytes, and each line is decoded to text on its own, so no
 * session is ever one string (V8 cannot make a string of more than about 2^29 characters). See
 * the module doc for the torn/corrupt line rules.
 */
export const lineReader = (key: string, name: string, before: number) => {
  const entries: Array<SessionEntry> = []
  let held: Array<Uint8Array> = []
  let heldBytes = 0
  let lines = 0
  let consumed = 0
  let tail: Uint8Array = new Uint8Array(0)
  /** The first complete line that did not decode. */
  let bad: { readonly n: number } | undefined
  /** A bad line with another line after it: damage, reported once the lines are counted. */
  let corrupt: number | undefined
  let fatal: SessionStoreError | undefined

  const complete = (line: Uint8Array) => {
    const n = before + ++lines
    if (corrupt !== undefined || fatal !== undefined) return
    if (bad !== undefined) {
      corrupt = bad.n
      return
    }
    const text = utf8.decode(line)
    if (n === 1) {
      const header = decodeHeader(text)
      if (header._tag === "Some" && header.value.sessionKey !== key) {
        fatal = new SessionStoreError({ sessionKey: key, message: `session file ${name} belongs to another key` })
        return
      }
      if (header._tag === "Some") {
        consumed += line.length + 1
        tail = tailAfter(tail, line)
        return
      }
    } else {
      const entry = decodeEntry(text)
      if (entry._tag === "Some") {
        entries.push(entry.value)
        consumed += line.length + 1
        tail = tailAfter(tail, line)
        return
      }
    }
    bad = { n }
  }

  const joined = (tail: Uint8Array): Uint8Array => {
    if (held.length === 0) return tail
    const out = new Uint8Array(heldBytes + tail.length)
    let at = 0
    for (const part of held) {
      out.set(part, at)
      at += part.length
    }
    out.set(tail, at)
    held = []
    heldBytes = 0
    return out
  }

  return {
    /** Takes the next bytes of the file. */
    push: (bytes: Uint8Array): void => {
      let from = 0
      for (let newline = bytes.indexOf(NEWLINE); newline >= 0; newline = bytes.indexOf(NEWLINE, from)) {
        complete(joined(bytes.subarray(from, newline)))
        from = newline + 1
      }
      if (from < bytes.length) {
        // copied: the caller may reuse its buffer
        held.push(bytes.slice(from))
        heldBytes += bytes.length - from
      }
    },
    /** Bytes of an unfinished line held so far. */
    held: (): number => heldBytes,
    /** Whether reading on is pointless (the file is another key's). */
    failed: (): boolean => fatal !== undefined,
    /** The outcome, once every byte was pushed. */
    end: (): Effect.Effect<Parsed, SessionStoreError> =>
      Effect.gen(function*() {
        if (fatal !== undefined) return yield* fatal
        const rest = joined(new Uint8Array(0))
        const total = before + lines + (rest.length > 0 ? 1 : 0)
        const damaged = corrupt ?? (bad !== undefined && rest.length > 0 ? bad.n : undefined)
        if (damaged !== undefined) {
          return yield* new SessionStoreError({ sessionKey: key, message: `session file ${name}: line ${damaged} of ${total} is corrupt` })
        }
        const torn = (n: number) => Effect.as(Effect.logWarning(`session file ${name}: ignoring torn last line ${n}`), true)
        // The last line, terminated but bad: not consumed, so that a writer truncates it.
        if (bad !== undefined) return { entries, consumed, tail, lines: lines - 1, unterminated: undefined, torn: yield* torn(bad.n) }
        if (rest.length === 0) return { entries, consumed, tail, lines, unterminated: undefined, torn: false }
        const text = utf8.decode(rest)
        const unterminated = total === 1 ? undefined : decodeEntry(text)
        const valid = total === 1 ? decodeHeader(text)._tag === "Some" : unterminated?._tag === "Some"
        return {
          entries,
          consumed,
          tail,
          lines,
          unterminated: unterminated?._tag === "Some" ? unterminated.value : undefined,
          torn: valid ? false : yield* torn(total)
        }
      })
  }
}

/** Parses `[from, to)` of a file (starting at line `before + 1`), reading `chunk` bytes at a time. */
export const readLines = (
  key: string,
  name: string,
  file: FileSystem.File,
  range: { readonly from: number; readonly to: number; readonly before: number },
  chunk: number = READ_CHUNK
): Effect.Effect<Parsed, SessionStoreError | PlatformError.PlatformError> =>
  Effect.gen(function*() {
    const reader = lineReader(key, name, range.before)
    for (let at = range.from; at < range.to && !reader.failed();) {
      const bytes = yield* readRange(file, at, Math.min(range.to, at + chunk))
      if (bytes.length === 0) break
      reader.push(bytes)
      at += bytes.length
    }
    return yield* reader.end()
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
