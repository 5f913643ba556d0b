import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { editFile, FileHistory, FileHistoryDir, Tool, writeFile } from "effect-agent-loop"
import { tempDir, toolContext, withWorkspace, write } from "../support/toolWorkspace.ts"

/** A tool call in turn `turnId` of session "s". */
const callIn = (turnId: string, tool: Tool.Tool<any>, args: unknown) =>
  tool.decode(args).pipe(Effect.orDie, Effect.flatMap((decoded) => tool.execute(decoded, { ...toolContext, turnId })))

const read = (root: string, file: string) => nodeFs.readFileSync(nodePath.join(root, file), "utf8")
const exists = (root: string, file: string) => nodeFs.existsSync(nodePath.join(root, file))
const mode = (path: string) => nodeFs.statSync(path).mode & 0o777

/** Runs `body` in a workspace whose tools record into a history in a fresh directory. */
const withHistory = <A, E>(limits: number | { readonly maxTurnsPerSession: number } | undefined, body: (dirs: { root: string; history: string }) => Effect.Effect<A, E, any>) =>
  withWorkspace(({ root }) =>
    Effect.gen(function*() {
      const history = nodePath.join(yield* tempDir("history-"), "undo")
      return yield* body({ root, history }).pipe(
        Effect.provide(FileHistoryDir.layer({
          directory: history,
          ...(limits === undefined ? {} : typeof limits === "number" ? { maxBytesPerSession: limits } : limits)
        }))
      )
    }).pipe(Effect.scoped) as Effect.Effect<A, E, any>
  )

describe("FileHistory in a directory", () => {
  it.effect("undo puts back an edited and an overwritten file and removes a created one; the history is private", () =>
    withHistory(undefined, ({ root, history }) =>
      Effect.gen(function*() {
        write(root, "a.txt", "one\ntwo\n")
        write(root, "b.txt", "old b")
        yield* callIn("t1", editFile, { path: "a.txt", old_text: "two", new_text: "TWO" })
        yield* callIn("t1", editFile, { path: "a.txt", old_text: "one", new_text: "ONE" })
        yield* callIn("t1", writeFile, { path: "b.txt", content: "new b" })
        yield* callIn("t1", writeFile, { path: "sub/c.txt", content: "c" })
        expect(read(root, "a.txt")).toBe("ONE\nTWO\n")
        const files = yield* FileHistory
        expect((yield* files.turns("s")).map((t) => [t.turnId, t.files.length])).toEqual([["t1", 3]])
        // every directory of the history 0700, every file in it 0600
        const walk = (dir: string): Array<string> =>
          nodeFs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => [nodePath.join(dir, e.name), ...(e.isDirectory() ? walk(nodePath.join(dir, e.name)) : [])])
        expect(mode(history)).toBe(0o700)
        for (const path of walk(history)) expect(mode(path)).toBe(nodeFs.statSync(path).isDirectory() ? 0o700 : 0o600)

        const result = yield* files.undo("s")
        expect(result.turnId).toBe("t1")
        expect(result.refused).toEqual([])
        expect(result.restored).toHaveLength(3)
        expect(read(root, "a.txt")).toBe("one\ntwo\n")
        expect(read(root, "b.txt")).toBe("old b")
        expect(exists(root, "sub/c.txt")).toBe(false)
        // the turn is forgotten once undone
        expect(yield* files.turns("s")).toEqual([])
        const again = yield* Effect.flip(files.undo("s"))
        expect(again._tag).toBe("NothingToUndo")
      })
    ))

  it.effect("undo goes back turn by turn, and a named turn is undone by its id", () =>
    withHistory(undefined, ({ root }) =>
      Effect.gen(function*() {
        write(root, "a.txt", "v0")
        yield* callIn("t1", writeFile, { path: "a.txt", content: "v1" })
        yield* callIn("t2", writeFile, { path: "a.txt", content: "v2" })
        yield* callIn("t3", writeFile, { path: "other.txt", content: "x" })
        const files = yield* FileHistory
        expect((yield* files.undo("s", "t2")).restored).toEqual([nodePath.join(root, "a.txt")])
        expect(read(root, "a.txt")).toBe("v1")
        expect((yield* files.undo("s")).turnId).toBe("t3")
        expect(exists(root, "other.txt")).toBe(false)
        expect((yield* files.undo("s")).turnId).toBe("t1")
        expect(read(root, "a.txt")).toBe("v0")
        // other sessions are apart
        expect((yield* Effect.flip(files.undo("another"))).message).toContain("no file changes to undo")
      })
    ))

  it.effect("a file changed since the turn is refused by name; the others are restored and the turn is kept", () =>
    withHistory(undefined, ({ root }) =>
      Effect.gen(function*() {
        write(root, "a.txt", "a0")
        write(root, "b.txt", "b0")
        write(root, "c.txt", "c0")
        yield* callIn("t1", writeFile, { path: "a.txt", content: "a1" })
        yield* callIn("t1", writeFile, { path: "b.txt", content: "b1" })
        yield* callIn("t1", writeFile, { path: "c.txt", content: "c1" })
        write(root, "b.txt", "b edited by hand")
        nodeFs.rmSync(nodePath.join(root, "c.txt"))
        nodeFs.symlinkSync("/etc/hostname", nodePath.join(root, "c.txt"))
        const files = yield* FileHistory
        const result = yield* files.undo("s")
        expect(result.restored).toEqual([nodePath.join(root, "a.txt")])
        expect(result.refused).toEqual([
          { path: nodePath.join(root, "b.txt"), reason: "it has changed since the turn changed it" },
          { path: nodePath.join(root, "c.txt"), reason: "it is now a symlink, not a regular file" }
        ])
        expect(read(root, "a.txt")).toBe("a0")
        expect(read(root, "b.txt")).toBe("b edited by hand")
        expect(nodeFs.lstatSync(nodePath.join(root, "c.txt")).isSymbolicLink()).toBe(true)
        // fixed by hand, the same undo finishes the turn
        write(root, "b.txt", "b1")
        nodeFs.rmSync(nodePath.join(root, "c.txt"))
        const second = yield* files.undo("s")
        expect(second.refused.map((r) => r.path)).toEqual([nodePath.join(root, "c.txt")])
        expect(read(root, "b.txt")).toBe("b0")
      })
    ))

  it.effect("the per-session budget drops the oldest turns first, and a turn over it alone cannot be undone", () =>
    withHistory(100, ({ root }) =>
      Effect.gen(function*() {
        write(root, "a.txt", "x".repeat(40))
        write(root, "b.txt", "y".repeat(40))
        write(root, "c.txt", "z".repeat(40))
        yield* callIn("t1", writeFile, { path: "a.txt", content: "1" })
        yield* callIn("t2", writeFile, { path: "b.txt", content: "2" })
        const files = yield* FileHistory
        expect((yield* files.turns("s")).map((t) => t.turnId)).toEqual(["t1", "t2"])
        // 120 bytes kept would pass 100: t1, the oldest, goes
        yield* callIn("t3", writeFile, { path: "c.txt", content: "3" })
        expect((yield* files.turns("s")).map((t) => t.turnId)).toEqual(["t2", "t3"])
        // 140 bytes: t2 goes, and t3 + t4 are exactly at the budget, which is kept
        write(root, "d.txt", "w".repeat(60))
        yield* callIn("t4", writeFile, { path: "d.txt", content: "4" })
        expect((yield* files.turns("s")).map((t) => t.turnId)).toEqual(["t3", "t4"])
        write(root, "big.txt", "b".repeat(101))
        yield* callIn("t5", writeFile, { path: "big.txt", content: "small" })
        expect(read(root, "big.txt")).toBe("small")
        const refused = yield* Effect.flip(files.undo("s"))
        expect(refused._tag).toBe("NothingToUndo")
        expect(refused.message).toContain("turn t5 cannot be undone")
        expect(read(root, "big.txt")).toBe("small")
      })
    ))

  it.effect("keeps at most maxTurnsPerSession turns, even when they keep no bytes", () =>
    withHistory({ maxTurnsPerSession: 3 }, ({ root }) =>
      Effect.gen(function*() {
        for (const n of [1, 2, 3]) yield* callIn(`t${n}`, writeFile, { path: `new${n}.txt`, content: "n" })
        const files = yield* FileHistory
        expect((yield* files.turns("s")).map((t) => t.turnId)).toEqual(["t1", "t2", "t3"])
        yield* callIn("t4", writeFile, { path: "new4.txt", content: "n" })
        expect((yield* files.turns("s")).map((t) => t.turnId)).toEqual(["t2", "t3", "t4"])
        expect(exists(root, "new1.txt")).toBe(true)
      })
    ))
})
