/**
 * The cases of `confined.ts`, shared by the test that runs them through `/proc/self/fd` and the one
 * that runs them by name (as on systems without it). Each opens paths directly, as if
 * `Workspace.resolve` had approved them and the file system changed afterwards.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as childProcess from "node:child_process"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import * as Confined from "../../src/tools/confined.ts"
import { editFile, grep, listDir, readFile, writeFile } from "effect-agent-loop"
import { failure, tempDir, text, withWorkspace, write } from "./toolWorkspace.ts"

/** The text of an open file now (its `size` is the size when it was opened). */
const content = (file: Confined.OpenFile) => Confined.readAt(file, "f", 0, 1024).pipe(Effect.map((b) => Buffer.from(b).toString()))

export const confinedCases = (expectDescriptors: boolean) => {
  it.effect("opens through descriptors where it can, by name where it cannot", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir("confined-")
      const directory = yield* Confined.openDirectory(root, root, ".")
      expect(directory.via.startsWith("/proc/self/fd/")).toBe(expectDescriptors)
      expect(directory.absolute).toBe(root)
    })))

  it.effect("reads, creates parents, writes from an offset, lists with kinds", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir("confined-")
      const created = yield* Confined.openPath(root, nodePath.join(root, "a/b/f.txt"), "a/b/f.txt", { write: true, create: true })
      yield* Confined.replaceFrom(created, "f", 0, new TextEncoder().encode("hello world"))
      yield* Confined.replaceFrom(created, "f", 6, new TextEncoder().encode("there"))
      expect(yield* content(created)).toBe("hello there")
      expect(nodeFs.readFileSync(nodePath.join(root, "a/b/f.txt"), "utf8")).toBe("hello there")
      childProcess.execFileSync("mkfifo", [nodePath.join(root, "a/pipe")])
      const a = yield* Confined.openDirectory(root, nodePath.join(root, "a"), "a")
      expect([...yield* Confined.entriesOf(a, "a")].sort((x, y) => x.name.localeCompare(y.name))).toEqual([
        { name: "b", kind: "directory" },
        { name: "pipe", kind: "fifo" }
      ])
      expect(yield* Confined.kindIn(a, "missing", "a/missing")).toEqual(Option.none())
      expect(yield* Confined.kindOfPath(root, nodePath.join(root, "a/pipe"), "a/pipe")).toBe("fifo")
    })))

  it.effect("refuses a link, a FIFO, a file in place of a directory, and a path outside the root", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir("confined-")
      const outside = yield* tempDir("confined-out-")
      write(outside, "secret.txt", "secret")
      write(root, "file.txt", "x")
      nodeFs.symlinkSync(outside, nodePath.join(root, "link"))
      nodeFs.symlinkSync(nodePath.join(outside, "secret.txt"), nodePath.join(root, "secret-link.txt"))
      childProcess.execFileSync("mkfifo", [nodePath.join(root, "pipe")])
      const refuse = (absolute: string, mode: { write?: boolean; create?: boolean } = {}) =>
        Effect.scoped(Confined.openPath(root, absolute, "p", mode)).pipe(Effect.flip, Effect.map((e) => e.message))
      expect(yield* refuse(nodePath.join(root, "link/secret.txt"))).toContain("changed while it was being opened")
      expect(yield* refuse(nodePath.join(root, "link/new.txt"), { write: true, create: true })).toContain("changed while")
      expect(yield* refuse(nodePath.join(root, "secret-link.txt"))).toContain("is a symbolic link, not a regular file")
      expect(yield* refuse(nodePath.join(root, "pipe"))).toContain("is a FIFO (named pipe)")
      expect(yield* refuse(nodePath.join(root, "file.txt/x"), { write: true, create: true })).toBe(
        `Cannot use "p": "file.txt" on the way is a file, not a directory`
      )
      expect(yield* refuse(outside)).toContain("escapes the workspace root")
      expect(yield* refuse(root)).toContain("is a directory")
      expect(nodeFs.readdirSync(outside)).toEqual(["secret.txt"])
    })))

  it.effect("the file tools work end to end", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        yield* text(writeFile, { path: "src/a.ts", content: "const a = 1\n" })
        yield* text(editFile, { path: "src/a.ts", old_text: "1", new_text: "2" })
        expect(yield* text(readFile, { path: "src/a.ts" })).toBe("     1\tconst a = 2")
        expect(yield* text(grep, { pattern: "a = 2" })).toBe("src/a.ts:1: const a = 2")
        expect(yield* text(listDir, { recursive: true })).toBe("src/\nsrc/a.ts")
        nodeFs.symlinkSync("/etc", nodePath.join(root, "etc"))
        expect(yield* failure(readFile, { path: "etc/passwd" })).toContain("symbolic link")
      })
    ))
}
