import { describe, expect, it } from "@effect/vitest"
import { NodeServices } from "@effect/platform-node"
import { Effect, FileSystem, PlatformError, Stream } from "effect"
import { ChildProcess } from "effect/process"
import * as NodeFs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { fileURLToPath } from "node:url"
import { Message, SessionLog, SessionStoreJsonl } from "effect-agent-loop"
import { classify, fileName } from "../../src/layers/internal/sessionStoreJsonlNames.ts"
import { captureWarnings, everyKind, keysOf } from "../support/fixtures.ts"

const repoRoot = NodePath.resolve(NodePath.dirname(fileURLToPath(import.meta.url)), "..", "..")

/** Runs `f` with a fresh real directory `root` and a store in `root/sessions`; removes it afterwards. */
const withStore = <A, E, R>(
  f: (
    store: Effect.Success<ReturnType<typeof SessionStoreJsonl.make>>,
    dir: string,
    root: string
  ) => Effect.Effect<A, E, R>
) =>
  Effect.acquireUseRelease(
    Effect.sync(() => NodeFs.mkdtempSync(NodePath.join(os.tmpdir(), "session-store-jsonl-"))),
    (root) => {
      const dir = NodePath.join(root, "sessions")
      return Effect.flatMap(SessionStoreJsonl.make(dir), (store) => f(store, dir, root))
    },
    (root) => Effect.sync(() => NodeFs.rmSync(root, { recursive: true, force: true }))
  ).pipe(Effect.provide(NodeServices.layer))

const read = (dir: string, key: string) => NodeFs.readFileSync(NodePath.join(dir, fileName(key)), "utf8")

describe("SessionStore.jsonl", () => {
  it.live("round-trips every message kind across appends, one line per message after a header", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        expect(yield* store.load("s")).toEqual([])
        yield* store.append("s", everyKind.slice(0, 2))
        yield* store.append("s", everyKind.slice(2))
        expect(yield* store.load("s")).toEqual(everyKind)
        const lines = read(dir, "s").split("\n")
        expect(lines).toHaveLength(everyKind.length + 2)
        expect(JSON.parse(lines[0]!)).toEqual({ sessionKey: "s" })
        expect(lines.at(-1)).toBe("")
      })
    ))

  it.live("ignores a torn last line with a warning; the next append truncates it first", () => {
    const { warnings, layer } = captureWarnings()
    return withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.append("s", [Message.user("one"), Message.assistant("two")])
        const file = NodePath.join(dir, fileName("s"))
        NodeFs.appendFileSync(file, "{\"role\":\"user\",\"con")
        expect(yield* store.load("s")).toEqual([Message.user("one"), Message.assistant("two")])
        expect(warnings.some((w) => w.includes("torn last line 4"))).toBe(true)

        yield* store.append("s", [Message.user("three")])
        expect(yield* store.load("s")).toEqual([Message.user("one"), Message.assistant("two"), Message.user("three")])
        const lines = NodeFs.readFileSync(file, "utf8").split("\n")
        expect(lines).toHaveLength(5)
        expect(lines.slice(0, 4).map((line) => JSON.parse(line).content)).toEqual([undefined, "one", "two", "three"])
      })
    ).pipe(Effect.provide(layer))
  })

  it.live("a corrupt newline-terminated last line is also dropped before appending", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.append("s", [Message.user("one")])
        NodeFs.appendFileSync(NodePath.join(dir, fileName("s")), "\u0000\u0000garbage\n")
        expect(yield* store.load("s")).toEqual([Message.user("one")])
        yield* store.append("s", [Message.user("two")])
        expect(yield* store.load("s")).toEqual([Message.user("one"), Message.user("two")])
      })
    ))

  it.live("a valid last line without its newline is kept and not glued to", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.append("s", [Message.user("one")])
        const file = NodePath.join(dir, fileName("s"))
        NodeFs.writeFileSync(file, NodeFs.readFileSync(file, "utf8").trimEnd())
        yield* store.append("s", [Message.user("two")])
        expect(yield* store.load("s")).toEqual([Message.user("one"), Message.user("two")])
      })
    ))

  it.live("a torn header (crash during the first write) loads as empty and is rewritten on append", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        NodeFs.mkdirSync(dir, { recursive: true })
        NodeFs.writeFileSync(NodePath.join(dir, fileName("s")), "{\"sessionK")
        expect(yield* store.load("s")).toEqual([])
        yield* store.append("s", [Message.user("one")])
        expect(yield* store.load("s")).toEqual([Message.user("one")])
        expect(JSON.parse(read(dir, "s").split("\n")[0]!)).toEqual({ sessionKey: "s" })
      })
    ))

  it.live("a corrupt middle line fails with SessionStoreError naming the line", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.append("s", [Message.user("one"), Message.user("two"), Message.user("three")])
        const file = NodePath.join(dir, fileName("s"))
        const lines = NodeFs.readFileSync(file, "utf8").split("\n")
        lines[2] = "{\"role\":\"user\",\"con"
        NodeFs.writeFileSync(file, lines.join("\n"))
        const error = yield* Effect.flip(store.load("s"))
        expect(error._tag).toBe("SessionStoreError")
        expect(error.sessionKey).toBe("s")
        expect(error.message).toContain("line 3")
      })
    ))

  it.live("a file whose header names another key is refused", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.append("a", [Message.user("one")])
        NodeFs.copyFileSync(NodePath.join(dir, fileName("a")), NodePath.join(dir, fileName("b")))
        const error = yield* Effect.flip(store.load("b"))
        expect(error.message).toContain("another key")
      })
    ))

  it.live("hostile, odd and long keys stay inside the directory, distinct, and list back exactly", () =>
    withStore((store, dir, root) =>
      Effect.gen(function*() {
        const keys = [
          "../../etc/passwd",
          "../x",
          "a/b",
          "a\\b",
          "会话-🚀",
          "",
          ".",
          "..",
          "x".repeat(1000),
          "x".repeat(999) + "y",
          "Foo",
          "foo",
          "CON",
          "nul.txt",
          "trailing. ",
          "\uD800",
          "\uFFFD",
          "_41",
          "A"
        ]
        for (const [i, key] of keys.entries()) yield* store.append(key, [Message.user(`message ${i}`)])

        expect(NodeFs.readdirSync(root)).toEqual(["sessions"])
        const entries = NodeFs.readdirSync(dir, { withFileTypes: true })
        expect(entries.every((e) => e.isFile())).toBe(true)
        const names = entries.map((e) => e.name)
        expect(names).toHaveLength(keys.length)
        expect(new Set(names.map((n) => n.toLowerCase())).size).toBe(keys.length)
        for (const name of names) {
          expect(Buffer.byteLength(name)).toBeLessThanOrEqual(200)
          expect(name).toMatch(/^[a-z0-9_-]+\.jsonl$/)
        }
        expect(keysOf(yield* store.list).sort()).toEqual([...keys].sort())
        for (const [i, key] of keys.entries()) expect(yield* store.load(key)).toEqual([Message.user(`message ${i}`)])
      })
    ))

  it.live("lines and keys longer than the 64 KiB read window", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        const key = "k".repeat(100_000)
        const big = Message.user("x".repeat(200_000))
        yield* store.append(key, [Message.user("one"), big])
        NodeFs.appendFileSync(NodePath.join(dir, fileName(key)), `{"role":"user","content":"${"y".repeat(150_000)}`)
        expect(yield* store.load(key)).toEqual([Message.user("one"), big])
        yield* store.append(key, [Message.user("two")])
        expect(yield* store.load(key)).toEqual([Message.user("one"), big, Message.user("two")])
        expect(keysOf(yield* store.list)).toEqual([key])
      })
    ))

  it("file names switch to the hashed form exactly past 200 bytes", () => {
    const atBound = "k".repeat(192)
    expect(fileName(atBound)).toBe(`s-${atBound}.jsonl`)
    expect(fileName(atBound).length).toBe(200)
    expect(classify(fileName(atBound))).toEqual({ _tag: "Plain", key: atBound })
    const past = "k".repeat(193)
    expect(fileName(past)).toMatch(/^h-k{120}-[0-9a-f]{64}\.jsonl$/)
    expect(classify(fileName(past))).toEqual({ _tag: "Hashed" })
    expect(classify("s-_4f.jsonl")).toEqual({ _tag: "Plain", key: "O" })
    expect(classify("s-_61.jsonl")).toEqual({ _tag: "Other" })
    expect(classify("s-_4F.jsonl")).toEqual({ _tag: "Other" })
    expect(classify(".tmp-123")).toEqual({ _tag: "Other" })
  })

  it.live("a compaction record is appended after the messages, never rewriting: load gives the view, log everything", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.append("s", everyKind)
        const before = NodeFs.readFileSync(NodePath.join(dir, fileName("s")))
        const summary = { role: "compaction", reason: "summary", cut: 5, summary: "they listed files" } as const
        yield* store.append("s", [summary])
        expect(yield* store.load("s")).toEqual([Message.system(`${SessionLog.SUMMARY_PREFIX}\nthey listed files`), everyKind[5]])
        expect(yield* store.log("s")).toEqual([...everyKind, summary])
        const after = NodeFs.readFileSync(NodePath.join(dir, fileName("s")))
        expect(after.subarray(0, before.length).equals(before)).toBe(true)
        expect(JSON.parse(after.subarray(before.length).toString("utf8"))).toEqual(summary)
        // a second store, reading the file whole, agrees
        const fresh = yield* SessionStoreJsonl.make(dir)
        expect(yield* fresh.load("s")).toEqual(yield* store.load("s"))
        expect(yield* fresh.log("s")).toEqual(yield* store.log("s"))
      })
    ))

  it.live("an append that fails mid-write loses nothing stored: the half line is ignored, then truncated by the next append", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.append("s", everyKind)
        const before = read(dir, "s")
        const fs = yield* FileSystem.FileSystem
        let failedWrites = 0
        const halfWriting = (file: FileSystem.File): FileSystem.File =>
          new Proxy(file, {
            get: (target, property) => {
              if (property === "writeAll") {
                return (bytes: Uint8Array) =>
                  target.writeAll(bytes.subarray(0, bytes.length >> 1)).pipe(
                    Effect.andThen(Effect.sync(() => failedWrites++)),
                    Effect.andThen(Effect.fail(PlatformError.systemError({ _tag: "Unknown", module: "FileSystem", method: "writeAll", description: "disk full" })))
                  )
              }
              const value = Reflect.get(target, property, target)
              return typeof value === "function" ? value.bind(target) : value
            }
          })
        const failing = FileSystem.FileSystem.of({
          ...fs,
          open: (path, options) => fs.open(path, options).pipe(Effect.map((f) => options?.flag === "a+" ? halfWriting(f) : f))
        })
        const broken = yield* SessionStoreJsonl.make(dir).pipe(Effect.provideService(FileSystem.FileSystem, failing))

        const error = yield* Effect.flip(broken.append("s", [Message.user("lost in the crash"), Message.assistant("also lost")]))
        expect(error._tag).toBe("SessionStoreError")
        expect(error.message).toContain("disk full")
        expect(failedWrites).toBe(1)
        expect(read(dir, "s").startsWith(before)).toBe(true)
        expect(read(dir, "s").length).toBeGreaterThan(before.length)
        expect(yield* store.load("s")).toEqual(everyKind)
        yield* store.append("s", [Message.user("next")])
        expect(read(dir, "s")).toBe(`${before}${JSON.stringify(Message.user("next"))}\n`)
        expect(NodeFs.readdirSync(dir)).toEqual([fileName("s")])
      })
    ))

  it.live("an entry that cannot be encoded fails before any file is touched", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.append("s", [Message.user("one")])
        const before = read(dir, "s")
        const bogus = { role: "wizard", content: 1 } as unknown as Message.Message
        const badCut = { role: "compaction", reason: "overflow", cut: -1 } as const
        expect((yield* Effect.flip(store.append("s", [Message.user("x"), bogus])))._tag).toBe("SessionStoreError")
        expect((yield* Effect.flip(store.append("s", [Message.user("x"), badCut])))._tag).toBe("SessionStoreError")
        expect(read(dir, "s")).toBe(before)
        expect(NodeFs.readdirSync(dir)).toEqual([fileName("s")])
      })
    ))

  it.live("list and load ignore leftover temp files and unrelated entries; remove deletes", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.append("a", [Message.user("one")])
        yield* store.append("b", [Message.user("two")])
        NodeFs.writeFileSync(NodePath.join(dir, ".tmp-leftover"), "{\"sessionKey\":\"a\"}\n{\"role\":\"user\",\"content\":\"stale\"}\n")
        NodeFs.writeFileSync(NodePath.join(dir, "notes.txt"), "hello")
        NodeFs.writeFileSync(NodePath.join(dir, "s-_4F.jsonl"), "{\"sessionKey\":\"O\"}\n")
        NodeFs.mkdirSync(NodePath.join(dir, "h-sub"))
        expect(keysOf(yield* store.list).sort()).toEqual(["a", "b"])
        expect(yield* store.load("a")).toEqual([Message.user("one")])

        yield* store.remove("a")
        yield* store.remove("a")
        yield* store.remove("never-existed")
        expect(keysOf(yield* store.list)).toEqual(["b"])
        expect(yield* store.load("a")).toEqual([])
      })
    ))

  it.live("creates its directory and lists nothing when empty", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        expect(NodeFs.statSync(dir).isDirectory()).toBe(true)
        expect(keysOf(yield* store.list)).toEqual([])
      })
    ))

  it.live("20 fibers appending to different sessions at once", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const keys = Array.from({ length: 20 }, (_, i) => `fiber-${i}`)
        yield* Effect.forEach(keys, (key) =>
          Effect.forEach(Array.from({ length: 10 }, (_, t) => t), (t) =>
            store.append(key, [Message.user(`${key} turn ${t}`), Message.assistant(`reply ${t}`)]), { discard: true }), {
          concurrency: "unbounded",
          discard: true
        })
        expect(keysOf(yield* store.list).sort()).toEqual([...keys].sort())
        for (const key of keys) {
          const history = yield* store.load(key)
          expect(history).toHaveLength(20)
          expect(history.filter((m) => m.role === "user").map((m) => m.content)).toEqual(
            Array.from({ length: 10 }, (_, t) => `${key} turn ${t}`)
          )
        }
      })
    ))

  it.live("separate OS processes appending to different sessions do not interfere", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        const turns = 100
        const script = [
          `import { Effect } from "effect"`,
          `import { NodeServices } from "@effect/platform-node"`,
          `import { make } from "./src/layers/SessionStoreJsonl.ts"`,
          `const { STORE_DIR, STORE_KEY, STORE_TURNS } = process.env`,
          `await Effect.runPromise(Effect.gen(function*() {`,
          `  const store = yield* make(STORE_DIR)`,
          `  for (let i = 0; i < Number(STORE_TURNS); i++) {`,
          `    yield* store.append(STORE_KEY, [{ role: "user", content: STORE_KEY + " " + i }, { role: "assistant", content: "r".repeat(4000) }])`,
          `  }`,
          `}).pipe(Effect.provide(NodeServices.layer)))`
        ].join("\n")
        const keys = ["proc/a", "proc/b", "proc/c"]
        const results = yield* Effect.forEach(keys, (key) =>
          Effect.scoped(Effect.gen(function*() {
            const child = yield* ChildProcess.make(process.execPath, ["--input-type=module", "-e", script], {
              cwd: repoRoot,
              env: { STORE_DIR: dir, STORE_KEY: key, STORE_TURNS: String(turns) },
              extendEnv: true
            })
            const [stderr, code] = yield* Effect.all([Stream.mkString(Stream.decodeText(child.stderr)), child.exitCode], {
              concurrency: 2
            })
            return { key, stderr, code: Number(code) }
          })), { concurrency: "unbounded" })
        for (const result of results) expect(result, result.stderr).toMatchObject({ code: 0 })

        for (const key of keys) {
          const history = yield* store.load(key)
          expect(history).toHaveLength(turns * 2)
          expect(history.filter((m) => m.role === "user").map((m) => m.content)).toEqual(
            Array.from({ length: turns }, (_, i) => `${key} ${i}`)
          )
        }
        expect(keysOf(yield* store.list).sort()).toEqual(keys)
      })
    ))
})

describe("SessionStore.jsonl list", () => {
  it.live("describes each session: last write time, messages (records not counted), the first question", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.append("a", [Message.system("s"), Message.user("what is\nthis?"), Message.assistant("that")])
        yield* store.append("a", [{ role: "compaction", reason: "overflow", cut: 1 }])
        yield* store.append("b", [Message.assistant("no question yet")])
        NodeFs.utimesSync(NodePath.join(dir, fileName("a")), 1_700_000_000, 1_700_000_000)
        const infos = [...(yield* store.list)].sort((x, y) => x.sessionKey.localeCompare(y.sessionKey))
        expect(infos).toEqual([
          { sessionKey: "a", updatedAt: 1_700_000_000_000, messages: 3, turns: 1, preview: "what is this?" },
          { sessionKey: "b", updatedAt: Math.floor(NodeFs.statSync(NodePath.join(dir, fileName("b"))).mtimeMs), messages: 1, turns: 0 }
        ])
      })
    ))

  it.live("one corrupt or unreadable session is listed with its problem; the others as usual", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.append("good", [Message.user("fine")])
        yield* store.append("corrupt", [Message.user("one"), Message.user("two"), Message.user("three")])
        const file = NodePath.join(dir, fileName("corrupt"))
        const lines = NodeFs.readFileSync(file, "utf8").split("\n")
        lines[2] = "{\"role\":\"user\",\"con"
        NodeFs.writeFileSync(file, lines.join("\n"))
        NodeFs.mkdirSync(NodePath.join(dir, fileName("a-directory")))
        const hashed = fileName("k".repeat(300))
        NodeFs.writeFileSync(NodePath.join(dir, hashed), "not a header\n")
        const infos = [...(yield* store.list)].sort((x, y) => x.sessionKey.localeCompare(y.sessionKey))
        expect(infos.map((info) => info.sessionKey)).toEqual(["a-directory", "corrupt", "good", hashed])
        expect(infos[0]!.problem).toMatch(/^cannot read session: /)
        expect(infos[1]).toEqual({ sessionKey: "corrupt", problem: `session file ${fileName("corrupt")}: line 3 of 4 is corrupt` })
        expect(infos[2]).toMatchObject({ sessionKey: "good", messages: 1, preview: "fine" })
        expect(infos[3]).toEqual({ sessionKey: hashed, problem: `session file ${hashed}: its first line does not name its session` })
      })
    ))
})
