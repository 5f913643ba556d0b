/**
 * The JSON Lines store reads a session line by line: no session is ever decoded as one string (a
 * file past V8's string limit would otherwise be unreadable for good). Lines longer than a read,
 * a torn last line and a corrupt middle line keep their rules.
 */
import { NodeServices } from "@effect/platform-node"
import { afterEach, describe, expect, it } from "@effect/vitest"
import { Effect, FileSystem } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { Message, SessionStoreJsonl } from "effect-agent-loop"
import { fileName } from "../../src/layers/internal/sessionStoreJsonlNames.ts"
import * as File from "../../src/layers/internal/sessionStoreJsonlFile.ts"
import { captureWarnings } from "../support/fixtures.ts"
import { withTempDir } from "../support/toolWorkspace.ts"

const withDir = <A, E, R>(f: (dir: string) => Effect.Effect<A, E, R>) => withTempDir("jsonl-stream-", f).pipe(Effect.provide(NodeServices.layer))

/** Records the largest input any TextDecoder decodes at once while it is installed. */
const decodeSizes = () => {
  const original = TextDecoder.prototype.decode
  const seen = { max: 0 }
  TextDecoder.prototype.decode = function(this: InstanceType<typeof TextDecoder>, ...args: Parameters<typeof original>) {
    seen.max = Math.max(seen.max, args[0]?.byteLength ?? 0)
    return original.apply(this, args)
  }
  return { seen, restore: () => void (TextDecoder.prototype.decode = original) }
}

let restore: (() => void) | undefined
afterEach(() => {
  restore?.()
  restore = undefined
})

const history = (n: number, size: number) =>
  Array.from({ length: n }, (_, i) => i % 2 === 0 ? Message.user(`q${i} ${"x".repeat(size)}`) : Message.assistant(`a${i} ${"y".repeat(size)}`))

describe("JSON Lines sessions are read as a stream of lines", () => {
  it.effect("a 4 MiB session loads without decoding more than one line at a time", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const messages = history(4096, 1000)
        yield* Effect.flatMap(SessionStoreJsonl.make(dir), (store) => store.append("s", messages))
        expect(NodeFs.statSync(NodePath.join(dir, fileName("s"))).size).toBeGreaterThan(4 * 1024 * 1024)
        const spy = decodeSizes()
        restore = spy.restore
        const loaded = yield* Effect.flatMap(SessionStoreJsonl.make(dir, { cachedSessions: 0 }), (store) => store.load("s"))
        spy.restore()
        expect(loaded).toHaveLength(messages.length)
        expect(Message.textOf(loaded[4095]!.content)).toBe(Message.textOf(messages[4095]!.content))
        expect(spy.seen.max).toBeGreaterThan(1000)
        expect(spy.seen.max).toBeLessThan(2000)
      })))

  it.effect("a line longer than a read, read in small pieces, and a torn last line", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const store = yield* SessionStoreJsonl.make(dir)
        const big = Message.user("z".repeat(100_000) + "é😀")
        yield* store.append("s", [Message.user("one"), big, Message.assistant("two")])
        const path = NodePath.join(dir, fileName("s"))
        NodeFs.appendFileSync(path, "{\"role\":\"user\",\"cont")
        const fs = yield* FileSystem.FileSystem
        const size = NodeFs.statSync(path).size
        const { layer, warnings } = captureWarnings()
        const parsed = yield* Effect.scoped(Effect.flatMap(fs.open(path), (file) =>
          // 7-byte reads: every line, multi-byte characters included, spans many of them
          File.readLines("s", fileName("s"), file, { from: 0, to: size, before: 0 }, 7)
        )).pipe(Effect.provide(layer))
        expect(parsed.entries.map((e) => "content" in e ? Message.textOf(e.content) : e)).toEqual(["one", Message.textOf(big.content), "two"])
        expect(parsed.lines).toBe(4)
        expect(parsed.torn).toBe(true)
        expect(parsed.consumed).toBe(size - "{\"role\":\"user\",\"cont".length)
        expect(parsed.tail).toEqual(new Uint8Array(NodeFs.readFileSync(path).subarray(parsed.consumed - 64, parsed.consumed)))
        expect(warnings.some((w) => w.includes("torn last line 5"))).toBe(true)
        // the store itself: the torn line is ignored on load and truncated by the next append
        expect((yield* store.load("s")).map((m) => m.role)).toEqual(["user", "user", "assistant"])
      })))

  it("only the unfinished line is held between pieces", () => {
    const line = JSON.stringify(Message.user("w".repeat(1000))) + "\n"
    const header = `${File.headerOf("s")}\n`
    const bytes = new TextEncoder().encode(header + line.repeat(2000))
    const reader = File.lineReader("s", "s.jsonl", 0)
    let held = 0
    for (let at = 0; at < bytes.length; at += 4096) {
      reader.push(bytes.subarray(at, at + 4096))
      held = Math.max(held, reader.held())
    }
    expect(held).toBeLessThan(line.length)
    const parsed = Effect.runSync(reader.end())
    expect(parsed.entries).toHaveLength(2000)
    expect(parsed.consumed).toBe(bytes.length)
  })

  it("a bad line with lines after it is damage, named with the line count", () => {
    const reader = File.lineReader("s", "s.jsonl", 0)
    reader.push(new TextEncoder().encode(`${File.headerOf("s")}\nnot json\n${JSON.stringify(Message.user("a"))}\n{"torn`))
    const error = Effect.runSync(Effect.flip(reader.end()))
    expect(error.message).toBe("session file s.jsonl: line 2 of 4 is corrupt")
  })
})
