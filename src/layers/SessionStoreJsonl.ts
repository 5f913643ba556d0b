/**
 * `SessionStore` on disk: one JSON Lines file per session in a directory.
 *
 * File format: line 1 is a header `{"sessionKey": "<original key>"}`, then one `Message`
 * (encoded with its Schema) per line. File names come from `sessionKey.ts`.
 *
 * Durability rules, and why:
 * - `append` writes all messages of a call with one append write and then `sync`s, so a
 *   turn's messages land together and survive a crash once the call returns. Sessions never
 *   share a file or an index, so processes writing different sessions cannot interfere.
 * - A crash can leave the last line torn. `load` ignores a bad LAST line with a warning, and
 *   `append` truncates it before writing so new lines never glue onto the fragment.
 * - A bad line anywhere else is not a crash artefact but damage; `load` fails naming the line,
 *   because silently dropping history (a tool result without its call, a lost user message)
 *   would hand the model a corrupted conversation and persist it on the next rewrite.
 * - `replace` writes a temporary file in the same directory, syncs it and renames it over the
 *   session file, so a failure at any point leaves the old file whole.
 *
 * Within one process, operations on a key are serialised through striped locks (bounded
 * memory, different sessions rarely wait on each other).
 */
import { Effect, FileSystem, Hash, Layer, Path, Schema, Semaphore } from "effect"
import { SessionStoreError } from "../domain/errors.ts"
import { Message } from "../domain/Message.ts"
import { SessionStore, type SessionStoreShape } from "../services/SessionStore.ts"
import { classify, fileName, tempFileName } from "./sessionKey.ts"

const MessageLine = Schema.fromJsonString(Message)
const HeaderLine = Schema.fromJsonString(Schema.Struct({ sessionKey: Schema.String }))
const decodeMessage = Schema.decodeUnknownOption(MessageLine)
const decodeHeader = Schema.decodeUnknownOption(HeaderLine)
const encodeMessage = Schema.encodeEffect(MessageLine)

const NEWLINE = 10
const TAIL_WINDOW = 64 * 1024
const LOCK_STRIPES = 64

const utf8 = new TextEncoder()
const text = new TextDecoder()

const headerOf = (key: string): string => JSON.stringify({ sessionKey: key })

const isValidLine = (line: string, first: boolean): boolean =>
  (first ? decodeHeader(line) : decodeMessage(line))._tag === "Some"

/** Parses a session file; see the module doc for the torn/corrupt line rules. */
const parse = (key: string, name: string, content: string): Effect.Effect<Array<Message>, SessionStoreError> =>
  Effect.gen(function*() {
    const lines = content.split("\n")
    if (lines[lines.length - 1] === "") lines.pop()
    const messages: Array<Message> = []
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] ?? ""
      const decoded = i === 0 ? decodeHeader(line) : decodeMessage(line)
      if (decoded._tag === "None") {
        if (i === lines.length - 1) {
          yield* Effect.logWarning(`session file ${name}: ignoring torn last line ${i + 1}`)
          break
        }
        return yield* new SessionStoreError({
          sessionKey: key,
          message: `session file ${name}: line ${i + 1} of ${lines.length} is corrupt`
        })
      }
      if (i === 0) {
        if ((decoded.value as { readonly sessionKey: string }).sessionKey !== key) {
          return yield* new SessionStoreError({ sessionKey: key, message: `session file ${name} belongs to another key` })
        }
      } else {
        messages.push(decoded.value as Message)
      }
    }
    return messages
  })

/** The start offset and bytes of the last line in `[0, end)`, reading backwards in growing windows. */
const lastLine = (file: FileSystem.File, end: number) =>
  Effect.gen(function*() {
    for (let window = TAIL_WINDOW;; window *= 2) {
      const from = Math.max(0, end - window)
      const read = yield* file.readAlloc(end - from, { position: BigInt(from) })
      const bytes = read._tag === "Some" ? read.value : new Uint8Array()
      const newline = bytes.lastIndexOf(NEWLINE)
      if (newline >= 0) return { start: from + newline + 1, bytes: bytes.subarray(newline + 1) }
      if (from === 0) return { start: 0, bytes }
    }
  })

/** The first line of a file, reading forward in growing windows. */
const firstLine = (file: FileSystem.File) =>
  Effect.gen(function*() {
    for (let window = TAIL_WINDOW;; window *= 2) {
      const read = yield* file.readAlloc(window, { position: 0n })
      const bytes = read._tag === "Some" ? read.value : new Uint8Array()
      const newline = bytes.indexOf(NEWLINE)
      if (newline >= 0 || bytes.length < window) return text.decode(newline >= 0 ? bytes.subarray(0, newline) : bytes)
    }
  })

/** A store writing one JSON Lines file per session under `dir` (created if missing). */
export const make = (dir: string): Effect.Effect<SessionStoreShape, never, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const root = path.resolve(dir)
    const stripes = Array.from({ length: LOCK_STRIPES }, () => Semaphore.makeUnsafe(1))
    const locked = (key: string) => stripes[Hash.string(key) & (LOCK_STRIPES - 1)]!.withPermits(1)
    const fileOf = (key: string) => path.join(root, fileName(key))
    const failure = (key: string, doing: string) => (cause: { readonly message: string }) =>
      new SessionStoreError({ sessionKey: key, message: `${doing}: ${cause.message}` })
    const ensureDir = fs.makeDirectory(root, { recursive: true })

    yield* ensureDir.pipe(Effect.catch((e) => Effect.logWarning(`cannot create session directory ${root}: ${e.message}`)))

    const encodeLines = (key: string, messages: ReadonlyArray<Message>) =>
      Effect.forEach(messages, (m) => encodeMessage(m)).pipe(
        Effect.map((lines) => lines.map((line) => `${line}\n`).join("")),
        Effect.mapError(failure(key, "cannot encode message"))
      )

    const load = (key: string) =>
      fs.readFileString(fileOf(key)).pipe(
        Effect.map((content): string | undefined => content),
        Effect.catchIf(
          (e) => e.reason._tag === "NotFound",
          () => Effect.succeed(undefined)
        ),
        Effect.mapError(failure(key, "cannot read session")),
        Effect.flatMap((content) => content === undefined ? Effect.succeed([]) : parse(key, fileName(key), content)),
        locked(key)
      )

    const append = (key: string, messages: ReadonlyArray<Message>) =>
      Effect.gen(function*() {
        const body = yield* encodeLines(key, messages)
        yield* Effect.gen(function*() {
          yield* ensureDir
          const file = yield* fs.open(fileOf(key), { flag: "a+" })
          const size = Number((yield* file.stat).size)
          let prefix = ""
          if (size === 0) {
            prefix = `${headerOf(key)}\n`
          } else {
            const endsWithNewline = (yield* file.readAlloc(1, { position: BigInt(size - 1) })).pipe((last) =>
              last._tag === "Some" && last.value[0] === NEWLINE
            )
            const last = yield* lastLine(file, endsWithNewline ? size - 1 : size)
            if (isValidLine(text.decode(last.bytes), last.start === 0)) {
              if (!endsWithNewline) prefix = "\n"
            } else {
              yield* Effect.logWarning(`session file ${fileName(key)}: truncating torn last line before appending`)
              yield* file.truncate(last.start)
              if (last.start === 0) prefix = `${headerOf(key)}\n`
            }
          }
          if (prefix === "" && body === "") return
          yield* file.writeAll(utf8.encode(prefix + body))
          yield* file.sync
        }).pipe(Effect.scoped, Effect.mapError(failure(key, "cannot append to session")), locked(key))
      })

    const replace = (key: string, messages: ReadonlyArray<Message>) =>
      Effect.gen(function*() {
        const body = `${headerOf(key)}\n${yield* encodeLines(key, messages)}`
        const temp = path.join(root, tempFileName())
        yield* Effect.gen(function*() {
          yield* ensureDir
          yield* Effect.scoped(Effect.gen(function*() {
            const file = yield* fs.open(temp, { flag: "wx" })
            yield* file.writeAll(utf8.encode(body))
            yield* file.sync
          }))
          yield* fs.rename(temp, fileOf(key))
        }).pipe(
          Effect.onError(() => Effect.ignore(fs.remove(temp, { force: true }))),
          Effect.mapError(failure(key, "cannot replace session")),
          locked(key)
        )
        // Best effort: make the rename itself durable where directories can be synced.
        yield* Effect.ignore(Effect.scoped(Effect.flatMap(fs.open(root, { flag: "r" }), (d) => d.sync)))
      })

    const keyOfHashed = (name: string) =>
      Effect.scoped(Effect.flatMap(fs.open(path.join(root, name), { flag: "r" }), firstLine)).pipe(
        Effect.map((line) => {
          const header = decodeHeader(line)
          return header._tag === "Some" && fileName(header.value.sessionKey) === name ? [header.value.sessionKey] : []
        }),
        // Vanished since the listing, or unreadable: not a session we can name.
        Effect.catch(() => Effect.succeed([]))
      )

    const list = fs.readDirectory(root).pipe(
      Effect.catchIf((e) => e.reason._tag === "NotFound", () => Effect.succeed([])),
      Effect.mapError(failure("", "cannot list sessions")),
      Effect.flatMap((names) =>
        Effect.forEach(names, (name) => {
          const entry = classify(name)
          return entry._tag === "Plain"
            ? Effect.succeed([entry.key])
            : entry._tag === "Hashed"
            ? keyOfHashed(name)
            : Effect.succeed([])
        })
      ),
      Effect.map((keys) => keys.flat())
    )

    const remove = (key: string) =>
      fs.remove(fileOf(key), { force: true }).pipe(Effect.mapError(failure(key, "cannot remove session")), locked(key))

    return { load, append, replace, list, remove }
  })

/** The JSON Lines store as a layer; needs `FileSystem` and `Path` (e.g. `NodeServices.layer`). */
export const layer = (dir: string): Layer.Layer<SessionStore, never, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(SessionStore, make(dir))
