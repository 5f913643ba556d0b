/**
 * The event journal of `SessionStoreJsonl`: a second file per session beside its log,
 * `<log name without .jsonl>.events.jsonl` (a name the log files' patterns never match, so
 * listings skip it), one `{"seq":N,"event":{…}}` line per event, appended and synced per write,
 * removed with the session. A torn last line (a crash mid-write) is skipped when read, and the
 * next append starts on a new line.
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as PlatformError from "effect/PlatformError"
import * as Schema from "effect/Schema"
import type { SessionStoreError } from "../../domain/errors.ts"
import { JournaledEvent } from "../../domain/EventJournal.ts"
import type { EventJournalStore } from "../../services/SessionStore.ts"
import { lastLine, NEWLINE, readRange } from "./sessionStoreJsonlFile.ts"

const decode = Schema.decodeUnknownOption(Schema.fromJsonString(JournaledEvent))
const utf8 = new TextEncoder()
const text = new TextDecoder()

/** The journal file of a session log file. */
export const journalFile = (logFile: string): string => `${logFile.slice(0, -".jsonl".length)}.events.jsonl`

/** What the journal shares with its store. */
export interface Context {
  readonly fs: FileSystem.FileSystem
  /** The session's log file. */
  readonly fileOf: (key: string) => string
  readonly makeDir: Effect.Effect<void, PlatformError.PlatformError>
  readonly mode: number
  /** The store's lock of the key. */
  readonly locked: (key: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly failure: (key: string, doing: string) => (cause: { readonly message: string }) => SessionStoreError
}

/** The seq of a line, if it is a whole journal line. */
const seqOf = (line: string): number | undefined => {
  try {
    const seq = (JSON.parse(line) as { seq?: unknown }).seq
    return typeof seq === "number" ? seq : undefined
  } catch {
    return undefined
  }
}

/** The journal over the store's files. */
export const make = (ctx: Context): EventJournalStore => {
  const { fs, locked } = ctx
  const fileOf = (key: string) => journalFile(ctx.fileOf(key))
  const notFound = <A>(empty: A) => (e: PlatformError.PlatformError) =>
    e.reason._tag === "NotFound" ? Effect.succeed(empty) : Effect.fail(e)

  const append = (key: string, events: ReadonlyArray<JournaledEvent>) =>
    events.length === 0 ? Effect.void : Effect.scoped(Effect.gen(function*() {
      yield* ctx.makeDir
      const file = yield* fs.open(fileOf(key), { flag: "a+", mode: ctx.mode })
      const size = Number((yield* file.stat).size)
      const torn = size > 0 && (yield* readRange(file, size - 1, size))[0] !== NEWLINE
      const body = events.map((event) => JSON.stringify(event)).join("\n")
      yield* file.writeAll(utf8.encode(`${torn ? "\n" : ""}${body}\n`))
      yield* file.sync
    })).pipe(Effect.mapError(ctx.failure(key, "cannot append to the event journal")), locked(key))

  const read = (key: string, after: number, limit = Infinity) =>
    fs.readFileString(fileOf(key)).pipe(
      Effect.catch(notFound("")),
      Effect.map((content) => {
        const out: Array<JournaledEvent> = []
        for (const line of content.split("\n")) {
          if (out.length >= limit) break
          const seq = seqOf(line)
          if (seq === undefined || seq <= after) continue
          const event = decode(line)
          if (event._tag === "Some") out.push(event.value)
        }
        return out
      }),
      Effect.mapError(ctx.failure(key, "cannot read the event journal")),
      locked(key)
    )

  const last = (key: string) =>
    Effect.scoped(Effect.gen(function*() {
      const file = yield* fs.open(fileOf(key), { flag: "r" })
      const size = Number((yield* file.stat).size)
      if (size === 0) return 0
      const end = (yield* readRange(file, size - 1, size))[0] === NEWLINE ? size - 1 : size
      const tail = seqOf(text.decode((yield* lastLine(file, end)).bytes))
      if (tail !== undefined) return tail
      // a torn last line: the last whole one
      const lines = text.decode(yield* readRange(file, 0, size)).split("\n")
      for (let i = lines.length - 1; i >= 0; i--) {
        const seq = seqOf(lines[i]!)
        if (seq !== undefined) return seq
      }
      return 0
    })).pipe(
      Effect.catch(notFound(0)),
      Effect.mapError(ctx.failure(key, "cannot read the event journal")),
      locked(key)
    )

  return { append, read, last }
}

/** Removes a session's journal file (none is fine). */
export const remove = (fs: FileSystem.FileSystem, logFile: string) => fs.remove(journalFile(logFile), { force: true })
