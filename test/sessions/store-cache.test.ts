/**
 * The JSON Lines store's decoded-history cache: a load after growth reads only the new bytes, an
 * append on an up-to-date cache reads (almost) nothing, a file that shrank or was replaced is read
 * whole, and the cache holds at most `cachedSessions` sessions. Bytes read are counted through a
 * `FileSystem` that wraps the real one.
 */
import { describe, expect, it } from "@effect/vitest"
import { NodeServices } from "@effect/platform-node"
import { Effect, FileSystem } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { Message, SessionStoreJsonl } from "effect-agent-loop"
import { fileName } from "../../src/layers/internal/sessionStoreJsonlNames.ts"
import { withTempDir } from "../support/toolWorkspace.ts"

/** A real directory for the test, removed afterwards. */
const withDir = <A, E, R>(f: (dir: string) => Effect.Effect<A, E, R>) => withTempDir("session-cache-", f).pipe(Effect.provide(NodeServices.layer))

/** A store over the real file system that counts the bytes it reads from files. */
const countingStore = (dir: string, options: SessionStoreJsonl.Options = {}) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const counter = { bytes: 0 }
    const counting = (file: FileSystem.File): FileSystem.File =>
      new Proxy(file, {
        get: (target, property) => {
          if (property === "readAlloc") {
            return (size: number, read?: FileSystem.File.ReadOptions) =>
              Effect.tap(target.readAlloc(size, read), (bytes) => Effect.sync(() => (counter.bytes += bytes._tag === "Some" ? bytes.value.length : 0)))
          }
          const value = Reflect.get(target, property, target)
          return typeof value === "function" ? value.bind(target) : value
        }
      })
    const store = yield* SessionStoreJsonl.make(dir, options).pipe(
      Effect.provideService(FileSystem.FileSystem, FileSystem.FileSystem.of({ ...fs, open: (path, o) => Effect.map(fs.open(path, o), counting) }))
    )
    /** The bytes `effect` read. */
    const reading = <A, E>(effect: Effect.Effect<A, E>) =>
      Effect.gen(function*() {
        const before = counter.bytes
        const value = yield* effect
        return { value, bytes: counter.bytes - before }
      })
    return { store, reading }
  })

const history = (n: number, tag = "m") =>
  Array.from({ length: n }, (_, i) => i % 2 === 0 ? Message.user(`${tag} question ${i}`) : Message.assistant(`${tag} answer ${i}`))

const lineBytes = (messages: ReadonlyArray<Message.Message>) =>
  messages.reduce((n, m) => n + Buffer.byteLength(JSON.stringify(m)) + 1, 0)

const sizeOf = (dir: string, key: string) => NodeFs.statSync(NodePath.join(dir, fileName(key))).size

describe("SessionStore.jsonl cache", () => {
  it.live("a load after another writer appended reads only the new bytes (and the 64 before them)", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const { reading, store } = yield* countingStore(dir)
        const other = yield* SessionStoreJsonl.make(dir)
        yield* other.append("s", history(1000))
        const first = yield* reading(store.load("s"))
        expect(first.value).toEqual(history(1000))
        expect(first.bytes).toBe(sizeOf(dir, "s"))

        const added = [Message.user("new"), Message.assistant("reply")]
        yield* other.append("s", added)
        const second = yield* reading(store.load("s"))
        expect(second.value).toEqual([...history(1000), ...added])
        expect(second.bytes).toBe(64 + lineBytes(added))

        const unchanged = yield* reading(store.load("s"))
        expect(unchanged.value).toEqual(second.value)
        expect(unchanged.bytes).toBe(64)
        expect(yield* store.log("s")).toEqual(yield* other.log("s"))
      })
    ))

  it.live("an append on an up-to-date cache reads only the 64-byte fingerprint, at any size; the next load reads nothing new", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const { reading, store } = yield* countingStore(dir)
        for (const size of [10, 5000]) {
          const key = `s${size}`
          yield* store.append(key, history(size))
          yield* store.load(key)
          const appended = yield* reading(store.append(key, [Message.user("more")]))
          expect(appended.bytes).toBe(64)
          const loaded = yield* reading(store.load(key))
          expect(loaded.value).toEqual([...history(size), Message.user("more")])
          expect(loaded.bytes).toBe(64)
        }
      })
    ))

  it.live("a file replaced, shrunk, or rewritten in place is read whole again", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const { reading, store } = yield* countingStore(dir)
        const other = yield* SessionStoreJsonl.make(dir)
        const file = NodePath.join(dir, fileName("s"))
        yield* store.append("s", history(20))
        yield* store.load("s")

        // replaced: another file renamed over it
        yield* other.append("t", history(4, "t"))
        NodeFs.renameSync(NodePath.join(dir, fileName("t")), NodePath.join(dir, "elsewhere"))
        const header = JSON.stringify({ sessionKey: "s" })
        NodeFs.writeFileSync(NodePath.join(dir, "replacement"), `${header}\n${history(30, "r").map((m) => JSON.stringify(m)).join("\n")}\n`)
        NodeFs.renameSync(NodePath.join(dir, "replacement"), file)
        const replaced = yield* reading(store.load("s"))
        expect(replaced.value).toEqual(history(30, "r"))
        expect(replaced.bytes).toBe(sizeOf(dir, "s"))

        // shrunk: the same file, shorter
        const lines = NodeFs.readFileSync(file, "utf8").split("\n")
        NodeFs.truncateSync(file, Buffer.byteLength(lines.slice(0, 11).join("\n") + "\n"))
        const shrunk = yield* reading(store.load("s"))
        expect(shrunk.value).toEqual(history(10, "r"))
        expect(shrunk.bytes).toBe(sizeOf(dir, "s"))

        // rewritten in place, same inode, longer: the bytes before the cached end changed
        const fd = NodeFs.openSync(file, "r+")
        const rewritten = `${header}\n${history(12, "w").map((m) => JSON.stringify(m)).join("\n")}\n`
        NodeFs.writeSync(fd, rewritten, 0)
        NodeFs.closeSync(fd)
        const again = yield* reading(store.load("s"))
        expect(again.value).toEqual(history(12, "w"))
        expect(again.bytes).toBe(64 + sizeOf(dir, "s")) // the fingerprint that did not match, then everything
      })
    ))

  it.live("at most `cachedSessions` sessions stay cached: the least recently used is read whole next time", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const { reading, store } = yield* countingStore(dir, { cachedSessions: 2 })
        for (const key of ["a", "b", "c"]) yield* store.append(key, history(50, key))
        for (const key of ["a", "b"]) yield* store.load(key)
        expect((yield* reading(store.load("a"))).bytes).toBe(64)
        expect((yield* reading(store.load("b"))).bytes).toBe(64)
        // c comes in at the bound: a, used least recently, goes
        expect((yield* reading(store.load("c"))).bytes).toBe(sizeOf(dir, "c"))
        expect((yield* reading(store.load("b"))).bytes).toBe(64)
        expect((yield* reading(store.load("c"))).bytes).toBe(64)
        expect((yield* reading(store.load("a"))).bytes).toBe(sizeOf(dir, "a"))
        expect((yield* store.load("a"))).toEqual(history(50, "a"))
      })
    ))

  it.live("cachedSessions 0: every load reads the whole file", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const { reading, store } = yield* countingStore(dir, { cachedSessions: 0 })
        yield* store.append("s", history(30))
        for (let i = 0; i < 2; i++) {
          const loaded = yield* reading(store.load("s"))
          expect(loaded.value).toEqual(history(30))
          expect(loaded.bytes).toBe(sizeOf(dir, "s"))
        }
      })
    ))

  it.live("remove forgets the cache: a session created again under the key starts empty", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const { store } = yield* countingStore(dir)
        yield* store.append("s", history(6))
        yield* store.load("s")
        yield* store.remove("s")
        expect(yield* store.load("s")).toEqual([])
        yield* store.append("s", [Message.user("fresh")])
        expect(yield* store.load("s")).toEqual([Message.user("fresh")])
      })
    ))
})
