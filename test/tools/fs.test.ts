import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option } from "effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import {
  builtinTools,
  CurrentTurn,
  type CurrentTurnShape,
  editFile,
  grep,
  listDir,
  makeGrep,
  makeListDir,
  makeReadFile,
  readFile,
  ToolRegistry,
  ToolRegistryLive,
  Workspace,
  WorkspaceLive,
  writeFile
} from "effect-agent-loop"
import { failure, text, toolContext as context, withWorkspace, write } from "../support/toolWorkspace.ts"

describe("Workspace confinement", () => {
  it.effect("resolves relative and absolute paths inside the root", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        const workspace = yield* Workspace
        expect(workspace.root).toBe(root)
        expect(yield* workspace.resolve("a/b.txt")).toBe(nodePath.join(root, "a/b.txt"))
        expect(yield* workspace.resolve(nodePath.join(root, "x"))).toBe(nodePath.join(root, "x"))
        expect(yield* workspace.resolve("a/../c")).toBe(nodePath.join(root, "c"))
        expect(yield* workspace.resolve(".")).toBe(root)
      })
    ))

  it.effect("refuses `..` escapes, absolute paths outside, and symlinks out, with clear messages", () =>
    withWorkspace(({ root, outside }) =>
      Effect.gen(function*() {
        nodeFs.symlinkSync(outside, nodePath.join(root, "link"))
        nodeFs.symlinkSync(nodePath.join(outside, "missing"), nodePath.join(root, "dangling"))
        const workspace = yield* Workspace
        const refuse = (input: string) => Effect.flip(workspace.resolve(input)).pipe(Effect.map((e) => e.message))
        expect(yield* refuse("../etc")).toBe(`Path "../etc" escapes the workspace root; use a path inside the workspace`)
        expect(yield* refuse("a/../../b")).toContain("escapes the workspace root")
        expect(yield* refuse("/etc/passwd")).toContain(`Path "/etc/passwd" is outside the workspace root`)
        expect(yield* refuse("link/secret.txt")).toContain("symbolic link to a location outside the workspace root")
        expect(yield* refuse("link/new/deeper.txt")).toContain("symbolic link")
        expect(yield* refuse("dangling")).toContain("symbolic link")
      })
    ))

  it.effect("allows a symlink whose target stays inside the root", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "real/file.txt", "inside\n")
        nodeFs.symlinkSync(nodePath.join(root, "real"), nodePath.join(root, "alias"))
        expect(yield* text(readFile, { path: "alias/file.txt" })).toBe("     1\tinside")
      })
    ))

  it.effect("fails to build on a missing root with a ConfigError", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        Effect.gen(function*() {
          yield* Workspace
        }).pipe(Effect.provide(WorkspaceLive.layer("/definitely/not/here")), Effect.provide(NodeServices.layer))
      )
      expect(Exit.isFailure(exit)).toBe(true)
      expect(String(exit)).toContain("ConfigError")
    }))
})

describe("read_file", () => {
  it.effect("numbers lines like cat -n and reads a window with offset and limit", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "notes.txt", "one\ntwo\nthree\nfour\n")
        expect(yield* text(readFile, { path: "notes.txt" })).toBe("     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour")
        expect(yield* text(readFile, { path: "notes.txt", offset: 2, limit: 2 })).toBe(
          "     2\ttwo\n     3\tthree\n[more lines follow; call read_file with offset=4 to continue]"
        )
        expect(yield* text(readFile, { path: "notes.txt", offset: 4, limit: 1 })).toBe("     4\tfour")
        write(root, "empty.txt", "")
        expect(yield* text(readFile, { path: "empty.txt" })).toBe(`(empty file "empty.txt")`)
      })
    ))

  it.effect("refuses escapes, symlinks out, directories, binaries, missing files and offsets past the end", () =>
    withWorkspace(({ root, outside }) =>
      Effect.gen(function*() {
        write(outside, "secret.txt", "top secret\n")
        nodeFs.symlinkSync(outside, nodePath.join(root, "link"))
        nodeFs.symlinkSync(nodePath.join(outside, "secret.txt"), nodePath.join(root, "secret-link.txt"))
        write(root, "a.txt", "x\n")
        nodeFs.writeFileSync(nodePath.join(root, "blob.bin"), new Uint8Array([1, 0, 2]))
        expect(yield* failure(readFile, { path: "../secret.txt" })).toContain("escapes the workspace root")
        expect(yield* failure(readFile, { path: nodePath.join(outside, "secret.txt") })).toContain("outside the workspace root")
        for (const through of ["link/secret.txt", "secret-link.txt"]) {
          const message = yield* failure(readFile, { path: through })
          expect(message).toContain("symbolic link")
          expect(message).not.toContain("top secret")
        }
        expect(yield* failure(readFile, { path: "." })).toContain("is a directory; use list_dir")
        expect(yield* failure(readFile, { path: "blob.bin" })).toContain("binary")
        expect(yield* failure(readFile, { path: "nope.txt" })).toBe(`Path "nope.txt" does not exist`)
        expect(yield* failure(readFile, { path: "a.txt", offset: 5 })).toBe(
          `offset 5 is past the end of "a.txt", which has 1 lines`
        )
      })
    ))

  it.effect("caps output at maxBytes: exactly at the cap nothing is cut, one line more is cut with a note", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        // each numbered line "     N\tab" is 9 bytes plus a newline: 3 lines are exactly 30 bytes
        const tool = makeReadFile({ maxBytes: 30 })
        write(root, "three.txt", "ab\nab\nab\n")
        write(root, "four.txt", "ab\nab\nab\nab\n")
        expect(yield* text(tool, { path: "three.txt" })).toBe("     1\tab\n     2\tab\n     3\tab")
        const cut = yield* text(tool, { path: "four.txt" })
        expect(cut).toBe(
          "     1\tab\n     2\tab\n     3\tab\n" +
            "[output truncated at the 30-byte limit after line 3; call read_file with offset=4 to continue]"
        )
        expect(yield* text(tool, { path: "four.txt", offset: 4 })).toBe("     4\tab")
        write(root, "long.txt", "x".repeat(100) + "\nnext\n")
        const long = yield* text(tool, { path: "long.txt" })
        expect(long.split("\n")[0]).toBe("     1\t" + "x".repeat(23))
        expect(long).toContain("line 1 is longer than the 30-byte limit and was cut; call read_file with offset=2")
      })
    ))

  it.effect("default cap is 256 KiB", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "big.txt", ("y".repeat(1000) + "\n").repeat(400))
        const content = yield* text(readFile, { path: "big.txt" })
        const [shown, note] = [content.slice(0, content.lastIndexOf("\n")), content.slice(content.lastIndexOf("\n") + 1)]
        expect(new TextEncoder().encode(shown).length).toBeLessThanOrEqual(256 * 1024)
        expect(shown.split("\n").length).toBe(Math.floor(256 * 1024 / 1008))
        expect(note).toContain("262144-byte limit")
        expect(note).toContain(`offset=${Math.floor(256 * 1024 / 1008) + 1}`)
      })
    ))
})

describe("list_dir", () => {
  it.effect("lists sorted entries with dirs marked, recursively to a depth, without entering node_modules", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "b.txt", "")
        write(root, "a/x.ts", "")
        write(root, "a/deep/y.ts", "")
        write(root, "node_modules/pkg/index.js", "")
        expect(yield* text(listDir, {})).toBe("a/\nb.txt\nnode_modules/")
        expect(yield* text(listDir, { path: "a" })).toBe("deep/\nx.ts")
        expect(yield* text(listDir, { recursive: true })).toBe("a/\na/deep/\na/deep/y.ts\na/x.ts\nb.txt\nnode_modules/")
        expect(yield* text(listDir, { recursive: true, max_depth: 2 })).toBe("a/\na/deep/\na/x.ts\nb.txt\nnode_modules/")
        write(root, "empty/.keep", "")
        nodeFs.rmSync(nodePath.join(root, "empty/.keep"))
        expect(yield* text(listDir, { path: "empty" })).toBe(`(empty directory "empty")`)
      })
    ))

  it.effect("refuses escapes and files", () =>
    withWorkspace(({ root, outside }) =>
      Effect.gen(function*() {
        write(root, "f.txt", "")
        nodeFs.symlinkSync(outside, nodePath.join(root, "out"))
        expect(yield* failure(listDir, { path: ".." })).toContain("escapes the workspace root")
        expect(yield* failure(listDir, { path: "out" })).toContain("symbolic link")
        expect(yield* failure(listDir, { path: "f.txt" })).toContain("is not a directory")
      })
    ))

  it.effect("caps entries: exactly maxEntries are listed without a note, one more adds the note", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        const tool = makeListDir({ maxEntries: 3 })
        for (const name of ["a", "b", "c"]) write(root, name, "")
        expect(yield* text(tool, {})).toBe("a\nb\nc")
        write(root, "d", "")
        expect(yield* text(tool, {})).toBe("a\nb\nc\n[listing stopped at 3 entries; list a subdirectory to see the rest]")
      })
    ))
})

describe("grep", () => {
  it.effect("prints file:line: text for matches, honours glob and path, skips .git and node_modules", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "src/a.ts", "const x = 1\nfunction foo() {}\n")
        write(root, "src/b.md", "function in docs\n")
        write(root, "lib/c.ts", "nothing\nFUNCTION upper\n")
        write(root, "node_modules/m/index.ts", "function hidden\n")
        write(root, ".git/config", "function hidden\n")
        expect(yield* text(grep, { pattern: "function" })).toBe("src/a.ts:2: function foo() {}\nsrc/b.md:1: function in docs")
        expect(yield* text(grep, { pattern: "function", glob: "*.ts" })).toBe("src/a.ts:2: function foo() {}")
        expect(yield* text(grep, { pattern: "function", glob: "src/**/*.md" })).toBe("src/b.md:1: function in docs")
        expect(yield* text(grep, { pattern: "^function", ignore_case: true, path: "lib" })).toBe("lib/c.ts:2: FUNCTION upper")
        expect(yield* text(grep, { pattern: "const", path: "src/a.ts" })).toBe("src/a.ts:1: const x = 1")
        expect(yield* text(grep, { pattern: "zzz" })).toBe(`No matches for /zzz/ in "."`)
      })
    ))

  it.effect("rejects an invalid regex with a clear ToolError", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        const message = yield* failure(grep, { pattern: "foo(" })
        expect(message).toContain(`Invalid regular expression "foo("`)
        expect(message).toContain("JavaScript RegExp syntax")
      })
    ))

  it.effect("does not search outside: escapes are refused and symlinks are not followed", () =>
    withWorkspace(({ root, outside }) =>
      Effect.gen(function*() {
        write(outside, "secret.txt", "password=hunter2\n")
        nodeFs.symlinkSync(outside, nodePath.join(root, "out"))
        nodeFs.symlinkSync(nodePath.join(outside, "secret.txt"), nodePath.join(root, "secret.txt"))
        expect(yield* text(grep, { pattern: "password" })).toBe(`No matches for /password/ in "."`)
        expect(yield* failure(grep, { pattern: "password", path: "out" })).toContain("symbolic link")
        expect(yield* failure(grep, { pattern: "password", path: "../" })).toContain("escapes the workspace root")
      })
    ))

  it.effect("caps matches at the bound: exactly maxMatches without a note, one more with it", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        const tool = makeGrep({ maxMatches: 3 })
        write(root, "f.txt", "hit\nhit\nhit\n")
        expect(yield* text(tool, { pattern: "hit" })).toBe("f.txt:1: hit\nf.txt:2: hit\nf.txt:3: hit")
        write(root, "g.txt", "hit\n")
        expect(yield* text(tool, { pattern: "hit" })).toBe(
          "f.txt:1: hit\nf.txt:2: hit\nf.txt:3: hit\n[stopped after 3 matches; narrow the pattern, path or glob to see the rest]"
        )
      })
    ))

  it.effect("default cap is 200 matches", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "many.txt", "match\n".repeat(201))
        const lines = (yield* text(grep, { pattern: "match" })).split("\n")
        expect(lines.length).toBe(201)
        expect(lines[199]).toBe("many.txt:200: match")
        expect(lines[200]).toContain("stopped after 200 matches")
      })
    ))
})

describe("write_file", () => {
  it.effect("creates parent directories and reports bytes written (UTF-8)", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        expect(yield* text(writeFile, { path: "deep/er/f.txt", content: "héllo" })).toBe(
          `Created "deep/er/f.txt": wrote 6 bytes`
        )
        expect(nodeFs.readFileSync(nodePath.join(root, "deep/er/f.txt"), "utf8")).toBe("héllo")
        expect(yield* text(writeFile, { path: "deep/er/f.txt", content: "x" })).toBe(`Overwrote "deep/er/f.txt": wrote 1 bytes`)
        expect(nodeFs.readFileSync(nodePath.join(root, "deep/er/f.txt"), "utf8")).toBe("x")
      })
    ))

  it.effect("refuses escapes and writes through symlinked dirs, leaving the outside untouched", () =>
    withWorkspace(({ root, outside }) =>
      Effect.gen(function*() {
        nodeFs.symlinkSync(outside, nodePath.join(root, "linked"))
        nodeFs.symlinkSync(nodePath.join(outside, "new.txt"), nodePath.join(root, "dangling.txt"))
        expect(yield* failure(writeFile, { path: "../x.txt", content: "x" })).toContain("escapes the workspace root")
        expect(yield* failure(writeFile, { path: nodePath.join(outside, "x.txt"), content: "x" })).toContain(
          "outside the workspace root"
        )
        expect(yield* failure(writeFile, { path: "linked/new.txt", content: "x" })).toContain("symbolic link")
        expect(yield* failure(writeFile, { path: "linked/sub/new.txt", content: "x" })).toContain("symbolic link")
        expect(yield* failure(writeFile, { path: "dangling.txt", content: "x" })).toContain("symbolic link")
        expect(yield* failure(writeFile, { path: ".", content: "x" })).toContain("workspace root")
        expect(nodeFs.readdirSync(outside)).toEqual([])
      })
    ))
})

describe("edit_file", () => {
  it.effect("replaces one exact unique occurrence", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "f.ts", "const a = 1\nconst b = 2\n")
        expect(yield* text(editFile, { path: "f.ts", old_text: "b = 2", new_text: "b = $&3" })).toBe(
          `Edited "f.ts": replaced 1 occurrence at line 2`
        )
        expect(nodeFs.readFileSync(nodePath.join(root, "f.ts"), "utf8")).toBe("const a = 1\nconst b = $&3\n")
      })
    ))

  it.effect("fails clearly on missing or repeated text and leaves the file unchanged", () =>
    withWorkspace(({ root, outside }) =>
      Effect.gen(function*() {
        write(root, "f.ts", "x = 1\nx = 1\n")
        expect(yield* failure(editFile, { path: "f.ts", old_text: "y = 2", new_text: "z" })).toContain(
          `old_text not found in "f.ts"`
        )
        expect(yield* failure(editFile, { path: "f.ts", old_text: "x = 1", new_text: "z" })).toBe(
          `old_text found 2 times in "f.ts"; include more context so it matches exactly once`
        )
        expect(yield* failure(editFile, { path: "f.ts", old_text: "", new_text: "z" })).toContain("old_text is empty")
        expect(nodeFs.readFileSync(nodePath.join(root, "f.ts"), "utf8")).toBe("x = 1\nx = 1\n")
        write(outside, "o.txt", "abc")
        nodeFs.symlinkSync(nodePath.join(outside, "o.txt"), nodePath.join(root, "o.txt"))
        expect(yield* failure(editFile, { path: "o.txt", old_text: "abc", new_text: "z" })).toContain("symbolic link")
        expect(nodeFs.readFileSync(nodePath.join(outside, "o.txt"), "utf8")).toBe("abc")
      })
    ))
})

describe("builtinTools", () => {
  it.effect("plug into ToolRegistryLive.layer, which takes their requirements once", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "hello.txt", "hi\n")
        const workspace = yield* Workspace
        const registry = yield* ToolRegistry.pipe(
          Effect.provide(ToolRegistryLive.layer(builtinTools()).pipe(Layer.provide(Layer.succeed(Workspace, workspace))))
        )
        expect((yield* registry.list).map((t) => t.name)).toEqual(builtinTools().map((t) => t.name))
        expect((yield* registry.list).map((t) => t.name)).toHaveLength(10)
        const tool = Option.getOrThrow(yield* registry.get("read_file"))
        const output = yield* tool.execute({ path: "hello.txt" }, context).pipe(
          Effect.provideService(CurrentTurn, {} as CurrentTurnShape)
        )
        expect(output).toBe("     1\thi")
      })
    ))
})
