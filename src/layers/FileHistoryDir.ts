/**
 * `FileHistory` kept in a directory: one directory per session, one per turn inside it, holding
 * `manifest.json` (which files the turn changed, hashes of their content before and after) and
 * the previous bytes of each file. Everything is private: directories 0700, files 0600.
 *
 * Each session has a byte budget for kept content and a number of turns: when a turn's changes pass
 * either, the session's oldest turns are dropped first; a turn that does not fit on its own is marked as not undoable
 * (its kept bytes go), so that undo never restores only part of a turn. An undo restores a file
 * only while it still holds what the turn wrote (or already holds what it held before); other
 * files are refused by name, and the turn is kept so that it can be undone once they are fixed.
 * Restoring opens files the way the file tools do (`confined.ts`), never following a link.
 *
 * @example
 * ```ts
 * import { FileHistoryDir } from "effect-agent-loop"
 * const history = FileHistoryDir.layer({ directory: "/var/lib/my-agent/undo", maxBytesPerSession: 16 * 1024 * 1024 })
 * ```
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import { createHash } from "node:crypto"
import * as fsp from "node:fs/promises"
import * as nodePath from "node:path"
import {
  type FileChange,
  FileHistory,
  FileHistoryError,
  type FileHistoryShape,
  NothingToUndo,
  type TurnFileChanges,
  type UndoRefused
} from "../services/FileHistory.ts"
import { kindIn, openDirectory, openFile, readAt, replaceFrom } from "../tools/confined.ts"
import { fileName } from "./internal/sessionStoreJsonlNames.ts"

/** The default byte budget of one session's kept content: 64 MiB. */
export const DEFAULT_MAX_BYTES_PER_SESSION = 64 * 1024 * 1024

/**
 * The default number of turns kept per session: a turn that only creates files keeps no bytes,
 * so the byte budget alone would not bound the number of turn directories.
 */
export const DEFAULT_MAX_TURNS_PER_SESSION = 100

/** Where and how much. */
export interface FileHistoryDirOptions {
  /** The directory of the history; created (0700) when missing. */
  readonly directory: string
  /** The most bytes of previous content kept per session. Default 64 MiB. */
  readonly maxBytesPerSession?: number
  /** The most turns kept per session, oldest dropped first. Default 100. */
  readonly maxTurnsPerSession?: number
}

const Before = Schema.Union([
  Schema.TaggedStruct("Absent", {}),
  Schema.TaggedStruct("Bytes", { blob: Schema.String, size: Schema.Number, sha256: Schema.String })
])

const Entry = Schema.Struct({ root: Schema.String, path: Schema.String, before: Before, afterSha256: Schema.String })

const Manifest = Schema.Struct({
  turnId: Schema.String,
  seq: Schema.Number,
  startedAt: Schema.Number,
  /** Why the turn cannot be undone, when it cannot. */
  incomplete: Schema.optionalKey(Schema.String),
  files: Schema.Array(Entry)
})
type Manifest = typeof Manifest.Type

const MANIFEST = "manifest.json"
const decodeManifest = Schema.decodeUnknownOption(Schema.fromJsonString(Manifest))

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")
const emptySha = sha256(new Uint8Array(0))
/** A file name for a key or id: the session store's escaping, without its extension. */
const nameOf = (key: string) => fileName(key).replace(/\.jsonl$/, "")

const io = <A>(what: string, f: () => Promise<A>) =>
  Effect.tryPromise({
    try: f,
    catch: (e) => new FileHistoryError({ message: `${what}: ${e instanceof Error ? e.message : String(e)}` })
  })

const privateDir = (path: string) =>
  io(`cannot create ${path}`, async () => {
    await fsp.mkdir(path, { recursive: true, mode: 0o700 })
    await fsp.chmod(path, 0o700)
  })

const writePrivate = (path: string, data: Uint8Array | string) =>
  io(`cannot write ${path}`, async () => {
    // written beside and renamed, so a crash leaves the old manifest or the new one, never half of one
    const temporary = `${path}.tmp`
    await fsp.writeFile(temporary, data, { mode: 0o600 })
    await fsp.rename(temporary, path)
  })

const blobOf = (file: Manifest["files"][number]) => file.before._tag === "Bytes" ? file.before.blob : ""

const keptBytes = (manifest: Manifest) =>
  manifest.files.reduce((sum, file) => sum + (file.before._tag === "Bytes" ? file.before.size : 0), 0)

/** A `FileHistory` in `options.directory`. */
export const make = (options: FileHistoryDirOptions): Effect.Effect<FileHistoryShape> =>
  Effect.gen(function*() {
    const budget = options.maxBytesPerSession ?? DEFAULT_MAX_BYTES_PER_SESSION
    const maxTurns = Math.max(1, options.maxTurnsPerSession ?? DEFAULT_MAX_TURNS_PER_SESSION)
    const lock = yield* Semaphore.make(1)
    const sessionDir = (key: string) => nodePath.join(options.directory, nameOf(key))

    /** The session's turns, oldest first (unreadable ones skipped: they cannot be undone anyway). */
    const load = (key: string) =>
      Effect.gen(function*() {
        const dir = sessionDir(key)
        const names = yield* io(`cannot read ${dir}`, () => fsp.readdir(dir)).pipe(
          Effect.catch(() => Effect.succeed([] as Array<string>))
        )
        const turns: Array<{ readonly dir: string; readonly manifest: Manifest }> = []
        for (const name of names) {
          const text = yield* io("", () => fsp.readFile(nodePath.join(dir, name, MANIFEST), "utf8")).pipe(Effect.option)
          const manifest = Option.flatMap(text, decodeManifest)
          if (Option.isSome(manifest)) turns.push({ dir: nodePath.join(dir, name), manifest: manifest.value })
        }
        return turns.sort((a, b) => a.manifest.seq - b.manifest.seq)
      })

    const remove = (dir: string) => io(`cannot remove ${dir}`, () => fsp.rm(dir, { recursive: true, force: true }))

    const record = (change: FileChange) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const turns = yield* load(change.sessionKey)
        const found = turns.find((turn) => turn.manifest.turnId === change.turnId)
        const dir = found?.dir ?? nodePath.join(sessionDir(change.sessionKey), nameOf(change.turnId))
        let manifest: Manifest = found?.manifest ?? {
          turnId: change.turnId,
          seq: (turns.at(-1)?.manifest.seq ?? 0) + 1,
          startedAt: yield* Clock.currentTimeMillis,
          files: []
        }
        yield* privateDir(options.directory)
        yield* privateDir(sessionDir(change.sessionKey))
        yield* privateDir(dir)
        const afterSha256 = sha256(change.after)
        const index = manifest.files.findIndex((file) => file.path === change.path)
        if (index !== -1) {
          // changed twice in one turn: the first previous content is what undo restores
          const files = [...manifest.files]
          files[index] = { ...files[index]!, afterSha256 }
          manifest = { ...manifest, files }
        } else if (manifest.incomplete === undefined && change.before._tag === "TooLarge") {
          manifest = { ...manifest, incomplete: `"${change.path}" (${change.before.size} bytes) is larger than the undo history keeps` }
        } else {
          const blob = `${manifest.files.length}.bin`
          const before = change.before._tag === "Bytes" && manifest.incomplete === undefined
            ? { _tag: "Bytes" as const, blob, size: change.before.bytes.length, sha256: sha256(change.before.bytes) }
            : change.before._tag === "Absent"
            ? { _tag: "Absent" as const }
            // not kept (the turn cannot be undone): the hash of nothing stands in
            : { _tag: "Bytes" as const, blob, size: 0, sha256: emptySha }
          if (change.before._tag === "Bytes" && manifest.incomplete === undefined) {
            yield* writePrivate(nodePath.join(dir, blob), change.before.bytes)
          }
          manifest = { ...manifest, files: [...manifest.files, { root: change.root, path: change.path, before, afterSha256 }] }
        }
        // the budgets: older turns go first; a turn that does not fit alone cannot be undone
        let total = keptBytes(manifest) + turns.filter((t) => t !== found).reduce((sum, t) => sum + keptBytes(t.manifest), 0)
        let count = turns.length + (found === undefined ? 1 : 0)
        for (const turn of turns) {
          if (total <= budget && count <= maxTurns) break
          if (turn === found) continue
          yield* remove(turn.dir)
          total -= keptBytes(turn.manifest)
          count--
        }
        if (total > budget && manifest.incomplete === undefined) {
          manifest = { ...manifest, incomplete: `its changes need more than the undo budget of ${budget} bytes` }
        }
        if (manifest.incomplete !== undefined) {
          // a turn that cannot be undone keeps no content
          for (const file of manifest.files) {
            if (file.before._tag === "Bytes") yield* io("", () => fsp.rm(nodePath.join(dir, blobOf(file)), { force: true })).pipe(Effect.ignore)
          }
          manifest = { ...manifest, files: manifest.files.map((file) => file.before._tag === "Bytes" ? { ...file, before: { ...file.before, size: 0 } } : file) }
        }
        yield* writePrivate(nodePath.join(dir, MANIFEST), JSON.stringify(manifest))
      }))

    const turns = (key: string) =>
      Effect.map(load(key), (all) =>
        all.map(({ manifest }): TurnFileChanges => ({
          turnId: manifest.turnId,
          startedAt: manifest.startedAt,
          files: manifest.files.map((file) => file.path)
        })))

    /** Puts one file back, or says why not. */
    const restore = (dir: string, file: Manifest["files"][number]) =>
      Effect.scoped(Effect.gen(function*() {
        const shown = nodePath.relative(file.root, file.path) || file.path
        const refuse = (reason: string): Effect.Effect<Option.Option<UndoRefused>> => Effect.succeed(Option.some({ path: file.path, reason }))
        const done = Effect.succeed(Option.none<UndoRefused>())
        const parent = yield* openDirectory(file.root, nodePath.dirname(file.path), shown).pipe(Effect.option)
        const name = nodePath.basename(file.path)
        const kind = Option.isSome(parent) ? yield* kindIn(parent.value, name, shown).pipe(Effect.orElseSucceed(() => Option.none())) : Option.none()
        if (Option.isNone(parent) || Option.isNone(kind)) {
          return yield* (file.before._tag === "Absent" ? done : refuse("it was deleted since"))
        }
        if (kind.value !== "file") return yield* refuse(`it is now a ${kind.value}, not a regular file`)
        const opened = yield* openFile(parent.value, name, shown, { write: true }).pipe(Effect.option)
        if (Option.isNone(opened)) return yield* refuse("it cannot be opened")
        const now = sha256(yield* readAt(opened.value, shown, 0, opened.value.size).pipe(Effect.orElseSucceed(() => new Uint8Array(0))))
        if (file.before._tag === "Bytes" && now === file.before.sha256) return yield* done
        if (now !== file.afterSha256) return yield* refuse("it has changed since the turn changed it")
        if (file.before._tag === "Absent") {
          yield* io("", () => fsp.unlink(nodePath.join(parent.value.via, name))).pipe(Effect.ignore)
          return yield* done
        }
        const blob = nodePath.join(dir, file.before.blob)
        const bytes = yield* io(`cannot read ${blob}`, () => fsp.readFile(blob)).pipe(Effect.option)
        if (Option.isNone(bytes) || sha256(bytes.value) !== file.before.sha256) return yield* refuse("its kept content is missing or damaged")
        const written = yield* replaceFrom(opened.value, shown, 0, bytes.value).pipe(Effect.option)
        return Option.isSome(written) ? Option.none<UndoRefused>() : Option.some({ path: file.path, reason: "it could not be written" })
      }))

    const undo = (key: string, turnId?: string) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const all = yield* load(key)
        const turn = turnId === undefined ? all.at(-1) : all.find((t) => t.manifest.turnId === turnId)
        if (turn === undefined) {
          return yield* Effect.fail(
            new NothingToUndo({
              message: turnId === undefined
                ? `session ${key} has no file changes to undo`
                : `turn ${turnId} of session ${key} has no file changes to undo (already undone, dropped by the budget, or unknown)`
            })
          )
        }
        const { manifest } = turn
        if (manifest.incomplete !== undefined) {
          return yield* Effect.fail(new NothingToUndo({ message: `turn ${manifest.turnId} cannot be undone: ${manifest.incomplete}` }))
        }
        const restored: Array<string> = []
        const refused: Array<UndoRefused> = []
        for (const file of manifest.files) {
          const outcome = yield* restore(turn.dir, file)
          if (Option.isSome(outcome)) refused.push(outcome.value)
          else restored.push(file.path)
        }
        if (refused.length === 0) yield* remove(turn.dir)
        return { turnId: manifest.turnId, restored, refused }
      }))

    return { maxFileBytes: budget, record, turns, undo }
  })

/** `FileHistory` in `options.directory` (0700, created on first use). */
export const layer = (options: FileHistoryDirOptions): Layer.Layer<FileHistory> => Layer.effect(FileHistory, make(options))
