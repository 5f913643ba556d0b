/**
 * `SessionStore` on disk: one JSON Lines file per session in a directory (format and torn-line
 * rules in `internal/sessionStoreJsonlFile.ts`, file names in `internal/sessionStoreJsonlNames.ts`).
 *
 * - Append-only: `append` writes all entries of a call with one append write and then `sync`s,
 *   so a turn's records land together and survive a crash once the call returns. Nothing is ever
 *   rewritten; compaction is a record (`SessionLog`). Sessions never share a file, so processes
 *   writing different sessions cannot interfere.
 * - Private: the directory is made (or tightened to) 0700 and session files are created (or
 *   tightened on the next append to) 0600, since they hold whatever the conversation held.
 * - A decoded-history cache per key, per store, for the `cachedSessions` keys used last: the log
 *   only grows, so a `load` after growth reads and decodes only the new bytes, and an `append` on
 *   an up-to-date cache writes without reading. A file that shrank, was replaced, or whose last
 *   read bytes changed is read whole again.
 * - Another process may append to the same session between this store's `load` and `append`.
 *   Its messages stay (nothing is rewritten), and the compaction records of this store's batch
 *   are rebased onto them (`SessionLog.rebase`) so its cut never hides them. That needs the key's
 *   cache; a key evicted in between is written as given.
 *
 * - The session's event journal is a second file beside its log (`internal/sessionStoreJsonlJournal.ts`),
 *   removed with it.
 *
 * Within one process, operations on a key are serialised through striped locks (bounded memory,
 * different sessions rarely wait on each other).
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Hash from "effect/Hash"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import type * as PlatformError from "effect/PlatformError"
import * as Semaphore from "effect/Semaphore"
import * as Journal from "./internal/sessionStoreJsonlJournal.ts"
import { SessionStoreError } from "../domain/errors.ts"
import type { Message } from "../domain/Message.ts"
import * as SessionLog from "../domain/SessionLog.ts"
import { type SessionInfo, SessionStore, type SessionStoreShape } from "../services/SessionStore.ts"
import * as File from "./internal/sessionStoreJsonlFile.ts"
import { classify, fileName } from "./internal/sessionStoreJsonlNames.ts"

/** Options of the JSON Lines store. */
export interface Options {
  /** How many sessions keep their decoded log in memory (least recently used go first). Default 32; 0 turns the cache off. */
  readonly cachedSessions?: number
}

const LOCK_STRIPES = 64
const FINGERPRINT = File.TAIL
const PRIVATE_FILE = 0o600
const PRIVATE_DIR = 0o700
const OPEN_TO_OTHERS = 0o077

const utf8 = new TextEncoder()
const text = new TextDecoder()

/** A key's decoded log, valid while its file is the same file and its first `offset` bytes are unchanged. */
interface Cached {
  readonly dev: bigint
  readonly ino: bigint | undefined
  /** Bytes read: the header and the complete, valid lines. */
  offset: number
  lines: number
  /** The last bytes before `offset`, to notice a file rewritten in place. */
  fingerprint: Uint8Array
  readonly entries: Array<SessionLog.SessionEntry>
  /** `entries` folded (`SessionLog.foldEntry`), not yet repaired. */
  folded: Array<Message>
}

const sameFile = (cached: Cached, info: FileSystem.File.Info) =>
  cached.dev === info.dev && cached.ino === Option.getOrUndefined(info.ino)

/** The last `FINGERPRINT` bytes of `before` followed by `added`. */
const nextFingerprint = (before: Uint8Array, added: Uint8Array): Uint8Array => {
  if (added.length >= FINGERPRINT) return added.slice(added.length - FINGERPRINT)
  const joined = new Uint8Array(before.length + added.length)
  joined.set(before)
  joined.set(added, before.length)
  return joined.slice(Math.max(0, joined.length - FINGERPRINT))
}

const equalBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((byte, i) => byte === b[i])

/**
 * Adds what was read or written (`length` bytes ending with `tail`, at least their last
 * `FINGERPRINT` bytes, holding `entries` in `lines` lines) to a cache.
 */
const extend = (cached: Cached, length: number, tail: Uint8Array, lines: number, entries: ReadonlyArray<SessionLog.SessionEntry>) => {
  for (const entry of entries) {
    cached.entries.push(entry)
    cached.folded = SessionLog.foldEntry(cached.folded, entry)
  }
  cached.offset += length
  cached.lines += lines
  cached.fingerprint = nextFingerprint(cached.fingerprint, tail)
}

/** A store writing one JSON Lines file per session under `dir` (created if missing). */
export const make = (dir: string, options: Options = {}): Effect.Effect<SessionStoreShape, never, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const root = path.resolve(dir)
    const capacity = options.cachedSessions ?? 32
    const cache = new Map<string, Cached>()
    const stripes = Array.from({ length: LOCK_STRIPES }, () => Semaphore.makeUnsafe(1))
    const locked = (key: string) => stripes[Hash.string(key) & (LOCK_STRIPES - 1)]!.withPermits(1)
    const fileOf = (key: string) => path.join(root, fileName(key))
    const failure = (key: string, doing: string) => (cause: { readonly message: string }) =>
      new SessionStoreError({ sessionKey: key, message: `${doing}: ${cause.message}` })

    const makeDir = fs.makeDirectory(root, { recursive: true, mode: PRIVATE_DIR })
    // An existing directory is made private too: it may predate this rule.
    yield* Effect.gen(function*() {
      yield* makeDir
      if (((yield* fs.stat(root)).mode & OPEN_TO_OTHERS) !== 0) yield* fs.chmod(root, PRIVATE_DIR)
    }).pipe(Effect.catch((e) => Effect.logWarning(`cannot make the session directory ${root} private: ${e.message}`)))

    const remember = (key: string, cached: Cached) => {
      cache.delete(key)
      if (capacity <= 0) return
      cache.set(key, cached)
      if (cache.size > capacity) cache.delete(cache.keys().next().value!)
    }

    /** The cache of `key` if it still describes the open file. */
    const stillValid = (key: string, file: FileSystem.File, info: FileSystem.File.Info) =>
      Effect.gen(function*() {
        const cached = cache.get(key)
        if (cached === undefined || !sameFile(cached, info) || Number(info.size) < cached.offset) return undefined
        const before = yield* File.readRange(file, cached.offset - cached.fingerprint.length, cached.offset)
        return equalBytes(before, cached.fingerprint) ? cached : undefined
      })

    /**
     * Brings the key's cache up to date with the open file: reads only the bytes after a valid
     * cache, else the whole file. Returns the cache, the entries read now, and the last line's state.
     */
    const refresh = (key: string, file: FileSystem.File, info: FileSystem.File.Info) =>
      Effect.gen(function*() {
        const cached: Cached = (yield* stillValid(key, file, info)) ?? {
          dev: info.dev,
          ino: Option.getOrUndefined(info.ino),
          offset: 0,
          lines: 0,
          fingerprint: new Uint8Array(),
          entries: [],
          folded: []
        }
        const parsed = yield* File.readLines(key, fileName(key), file, { from: cached.offset, to: Number(info.size), before: cached.lines })
        extend(cached, parsed.consumed, parsed.tail, parsed.lines, parsed.entries)
        remember(key, cached)
        return { cached, parsed }
      })

    /** Runs `f` on the key's file opened for reading; `undefined` when there is none. */
    const withFile = <A>(
      key: string,
      f: (file: FileSystem.File, info: FileSystem.File.Info) => Effect.Effect<A, PlatformError.PlatformError | SessionStoreError>
    ) =>
      Effect.scoped(Effect.gen(function*() {
        const file = yield* fs.open(fileOf(key), { flag: "r" })
        return yield* f(file, yield* file.stat)
      })).pipe(
        Effect.catchTag("PlatformError", (e) =>
          e.reason._tag === "NotFound"
            ? Effect.sync((): A | undefined => void cache.delete(key))
            : Effect.fail(failure(key, "cannot read session")(e))),
        locked(key)
      )

    /** The log of `key`: its cache, up to date, and an unterminated last entry if there is one. */
    const read = (key: string) => withFile(key, (file, info) => Effect.map(refresh(key, file, info), (got) => ({ ...got, info })))

    const entriesOf = (got: { readonly cached: Cached; readonly parsed: File.Parsed }) =>
      got.parsed.unterminated === undefined ? got.cached.entries : [...got.cached.entries, got.parsed.unterminated]

    const load = (key: string) =>
      Effect.map(read(key), (got): ReadonlyArray<Message> => {
        if (got === undefined) return []
        const last = got.parsed.unterminated
        return SessionLog.repair(last === undefined ? got.cached.folded : SessionLog.foldEntry([...got.cached.folded], last))
      })

    const log = (key: string) =>
      Effect.map(read(key), (got): ReadonlyArray<SessionLog.SessionEntry> => got === undefined ? [] : [...entriesOf(got)])

    const encodeLines = (key: string, entries: ReadonlyArray<SessionLog.SessionEntry>) =>
      Effect.forEach(entries, (entry) => File.encodeEntry(entry)).pipe(
        Effect.map((lines) => lines.map((line) => `${line}\n`).join("")),
        Effect.mapError(failure(key, "cannot encode entry"))
      )

    /**
     * Checks only the file's last line (O(1)), truncating a torn one, and returns what must precede
     * the new lines: the header, or the newline a valid last line lacks.
     */
    const prepareTail = (key: string, file: FileSystem.File, size: number) =>
      Effect.gen(function*() {
        if (size === 0) return `${File.headerOf(key)}\n`
        const endsWithNewline = (yield* File.readRange(file, size - 1, size))[0] === File.NEWLINE
        const last = yield* File.lastLine(file, endsWithNewline ? size - 1 : size)
        if (File.isValidLine(text.decode(last.bytes), last.start === 0)) return endsWithNewline ? "" : "\n"
        yield* Effect.logWarning(`session file ${fileName(key)}: truncating torn last line before appending`)
        yield* file.truncate(last.start)
        return last.start === 0 ? `${File.headerOf(key)}\n` : ""
      })

    /**
     * What to write, and the cache to extend with it. An up-to-date cache needs no reading. A cache
     * the file outgrew reads the other writer's entries and rebases this batch's records onto them.
     * A file replaced since it was read drops this batch's records (their base is gone). Without a
     * cache, the entries are written as given.
     */
    const prepare = (key: string, file: FileSystem.File, info: FileSystem.File.Info, entries: ReadonlyArray<SessionLog.SessionEntry>) =>
      Effect.gen(function*() {
        const size = Number(info.size)
        if (!cache.has(key)) return { entries, prefix: yield* prepareTail(key, file, size), cached: undefined }
        const valid = yield* stillValid(key, file, info)
        if (valid?.offset === size) return { entries, prefix: size === 0 ? `${File.headerOf(key)}\n` : "", cached: valid }
        const baseLength = valid === undefined ? undefined : SessionLog.repair(valid.folded).length
        const refreshed = yield* Effect.result(refresh(key, file, info))
        if (refreshed._tag === "Failure") cache.delete(key)
        const foreign = refreshed._tag === "Success" ? refreshed.success.parsed.entries : []
        const rebased = SessionLog.rebase(entries, refreshed._tag === "Success" ? baseLength : undefined, foreign)
        if (rebased !== entries) {
          yield* Effect.logWarning(`session file ${fileName(key)}: changed by another writer since it was read; compaction rebased`)
        }
        const upToDate = refreshed._tag === "Success" && refreshed.success.cached.offset === size
        return { entries: rebased, prefix: yield* prepareTail(key, file, size), cached: upToDate ? refreshed.success.cached : undefined }
      })

    const append = (key: string, entries: ReadonlyArray<SessionLog.SessionEntry>) =>
      Effect.gen(function*() {
        yield* encodeLines(key, entries)
        yield* Effect.gen(function*() {
          yield* makeDir
          const file = yield* fs.open(fileOf(key), { flag: "a+", mode: PRIVATE_FILE })
          const info = yield* file.stat
          if ((info.mode & OPEN_TO_OTHERS) !== 0) yield* fs.chmod(fileOf(key), PRIVATE_FILE)
          const plan = yield* prepare(key, file, info, entries)
          const body = plan.prefix + (yield* encodeLines(key, plan.entries))
          if (body === "") return
          const bytes = utf8.encode(body)
          const size = Number(info.size)
          yield* file.writeAll(bytes)
          yield* file.sync
          // Another process may have appended between the stat and the write: then the cache stays
          // behind, and the next load reads both.
          if (plan.cached !== undefined && Number((yield* file.stat).size) === size + bytes.length) {
            extend(plan.cached, bytes.length, bytes, plan.entries.length + (size === 0 ? 1 : 0), plan.entries)
            remember(key, plan.cached)
          }
        }).pipe(Effect.scoped, Effect.mapError(failure(key, "cannot append to session")), locked(key))
      })

    /** Describes a session; one that cannot be read says why. */
    const describeSession = (key: string): Effect.Effect<ReadonlyArray<SessionInfo>> =>
      read(key).pipe(
        Effect.map((got): ReadonlyArray<SessionInfo> =>
          got === undefined ? [] : [{
            sessionKey: key,
            ...Option.match(got.info.mtime, { onNone: () => ({}), onSome: (mtime) => ({ updatedAt: mtime.getTime() }) }),
            ...SessionLog.describe(entriesOf(got))
          }]
        ),
        Effect.catch((e) => Effect.succeed([{ sessionKey: key, problem: e.message }]))
      )

    /** The key in a hashed file's header; a file whose header does not name its own key is a problem. */
    const keyOfHashed = (name: string) =>
      Effect.scoped(Effect.flatMap(fs.open(path.join(root, name), { flag: "r" }), File.firstLine)).pipe(
        Effect.map((line): { readonly key: string } | SessionInfo => {
          const header = File.decodeHeader(line)
          return header._tag === "Some" && fileName(header.value.sessionKey) === name
            ? { key: header.value.sessionKey }
            : { sessionKey: name, problem: `session file ${name}: its first line does not name its session` }
        }),
        Effect.catch((e) => Effect.succeed({ sessionKey: name, problem: `session file ${name}: ${e.message}` }))
      )

    const list = fs.readDirectory(root).pipe(
      Effect.catchIf((e) => e.reason._tag === "NotFound", () => Effect.succeed([])),
      Effect.mapError(failure("", "cannot list sessions")),
      Effect.flatMap((names) =>
        Effect.forEach(names, (name): Effect.Effect<ReadonlyArray<SessionInfo>> => {
          const entry = classify(name)
          if (entry._tag === "Plain") return describeSession(entry.key)
          if (entry._tag === "Other") return Effect.succeed([])
          return Effect.flatMap(keyOfHashed(name), (found) => "key" in found ? describeSession(found.key) : Effect.succeed([found] as const))
        })
      ),
      Effect.map((infos) => infos.flat())
    )

    const remove = (key: string) =>
      fs.remove(fileOf(key), { force: true }).pipe(
        Effect.andThen(Journal.remove(fs, fileOf(key))),
        Effect.tap(() => Effect.sync(() => cache.delete(key))),
        Effect.mapError(failure(key, "cannot remove session")),
        locked(key)
      )

    const journal = Journal.make({ fs, fileOf, makeDir, mode: PRIVATE_FILE, locked, failure })

    return { load, log, append, list, remove, journal }
  })

/** The JSON Lines store as a layer; needs `FileSystem` and `Path` (e.g. `NodeServices.layer`). */
export const layer = (dir: string, options: Options = {}): Layer.Layer<SessionStore, never, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(SessionStore, make(dir, options))
