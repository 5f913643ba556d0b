/**
 * `glob` finds files by pattern, most recently modified first, capped; it walks as grep does
 * (`.gitignore`, `.git` and `node_modules`, hidden files, links not followed, path rules), and a
 * pattern's leading directories change where it starts, never what it finds.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { builtinTools, glob, makeGlob, type PathRule, WorkspaceLive } from "effect-agent-loop"
import { failure, tempDir, text, withWorkspace, write } from "../support/toolWorkspace.ts"

/** Sets a file's modification time to `seconds` after the epoch. */
const touch = (root: string, file: string, seconds: number) => nodeFs.utimesSync(nodePath.join(root, file), seconds, seconds)

describe("glob", () => {
  it.effect("lists matching files newest first, the walk's order among equals; a pattern without / matches names at any depth", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "src/a.ts", "")
        write(root, "src/lib/b.ts", "")
        write(root, "src/lib/c.tsx", "")
        write(root, "top.ts", "")
        write(root, "README.md", "")
        touch(root, "src/a.ts", 1_000)
        touch(root, "src/lib/b.ts", 3_000)
        touch(root, "top.ts", 2_000)
        touch(root, "src/lib/c.tsx", 2_000)
        expect(yield* text(glob, { pattern: "**/*.ts" })).toBe("src/lib/b.ts\ntop.ts\nsrc/a.ts")
        expect(yield* text(glob, { pattern: "*.ts" })).toBe("src/lib/b.ts\ntop.ts\nsrc/a.ts")
        expect(yield* text(glob, { pattern: "*.{ts,tsx}" })).toBe("src/lib/b.ts\nsrc/lib/c.tsx\ntop.ts\nsrc/a.ts")
        expect(yield* text(glob, { pattern: "src/*.ts" })).toBe("src/a.ts")
        expect(yield* text(glob, { pattern: "./src/lib/*" })).toBe("src/lib/b.ts\nsrc/lib/c.tsx")
        // anchored to path: a file right there; an absolute pattern inside the workspace is from its root
        expect(yield* text(glob, { pattern: "/*.ts" })).toBe("top.ts")
        expect(yield* text(glob, { pattern: "./*.ts" })).toBe("top.ts")
        expect(yield* text(glob, { pattern: "/*.ts", path: "src" })).toBe("src/a.ts")
        expect(yield* text(glob, { pattern: `${root}/src/**/*.ts`, path: "src/lib" })).toBe("src/lib/b.ts\nsrc/a.ts")
        // relative to path, shown from the root
        expect(yield* text(glob, { pattern: "lib/*.ts", path: "src" })).toBe("src/lib/b.ts")
        expect(yield* text(glob, { pattern: "*.md", path: "src" })).toBe(`No files match "*.md" in "src"`)
        expect(yield* text(glob, { pattern: "nothing/**/*.ts" })).toBe(`No files match "nothing/**/*.ts" in "."`)
      })
    ))

  it.effect("stops at the cap, saying how many matched", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        for (let i = 0; i < 5; i++) {
          write(root, `f${i}.txt`, "")
          touch(root, `f${i}.txt`, 1_000 + i)
        }
        const tool = makeGlob({ maxResults: 3 })
        expect(yield* text(tool, { pattern: "*.txt" })).toBe(
          "f4.txt\nf3.txt\nf2.txt\n[showing the 3 most recently modified of 5 files; narrow the pattern or path to see the rest]"
        )
        expect(yield* text(makeGlob({ maxResults: 5 }), { pattern: "*.txt" })).toBe("f4.txt\nf3.txt\nf2.txt\nf1.txt\nf0.txt")
      })
    ))

  it.effect("orders thousands of matches (their times read in batches by other threads) exactly as one by one", () =>
    withWorkspace(({ outside, root }) =>
      Effect.gen(function*() {
        // 3,000 files over 30 directories, times repeating every 700 files so that ties cross batches
        const expected: Array<{ readonly path: string; readonly time: number; readonly walk: number }> = []
        for (let d = 0; d < 30; d++) {
          for (let f = 0; f < 100; f++) {
            const path = `d${String(d).padStart(2, "0")}/f${String(f).padStart(3, "0")}.txt`
            const time = 1_000 + ((d * 100 + f) * 7919) % 700
            write(root, path, "")
            touch(root, path, time)
            expected.push({ path, time, walk: expected.length })
          }
        }
        // a link among them to a newer file outside: never listed, never followed for its time
        write(outside, "new.txt", "")
        touch(outside, "new.txt", 9_000)
        nodeFs.symlinkSync(nodePath.join(outside, "new.txt"), nodePath.join(root, "d05/f050x.txt"))
        const order = [...expected].sort((a, b) => b.time - a.time || a.walk - b.walk).map((file) => file.path)
        expect(yield* text(makeGlob({ maxResults: 3_000 }), { pattern: "**/*.txt" })).toBe(order.join("\n"))
        expect(yield* text(makeGlob({ maxResults: 1_000 }), { pattern: "*.txt" })).toBe(
          [...order.slice(0, 1_000), "[showing the 1000 most recently modified of 3000 files; narrow the pattern or path to see the rest]"]
            .join("\n")
        )
      })
    ))

  it.effect("walks as grep does: .gitignore, .git, node_modules, hidden files, links", () =>
    withWorkspace(({ outside, root }) =>
      Effect.gen(function*() {
        write(root, ".gitignore", "dist/\n*.log\n!keep.log\n")
        write(root, "src/x.js", "")
        write(root, "dist/x.js", "")
        write(root, "src/dist/y.js", "")
        write(root, "a.log", "")
        write(root, "keep.log", "")
        write(root, ".config/z.js", "")
        write(root, "node_modules/m/x.js", "")
        write(root, ".git/hooks/x.js", "")
        write(outside, "o.js", "")
        nodeFs.symlinkSync(outside, nodePath.join(root, "out"))
        nodeFs.symlinkSync(nodePath.join(root, "src/x.js"), nodePath.join(root, "link.js"))
        for (const [i, file] of ["src/x.js", "keep.log", ".config/z.js"].entries()) touch(root, file, 1_000 + i)
        expect(yield* text(glob, { pattern: "**/*.js" })).toBe(".config/z.js\nsrc/x.js")
        expect(yield* text(glob, { pattern: "*.log" })).toBe("keep.log")
        // leading directories the walk would not enter are not entered either
        expect(yield* text(glob, { pattern: "dist/*.js" })).toBe(`No files match "dist/*.js" in "."`)
        expect(yield* text(glob, { pattern: "node_modules/**" })).toBe(`No files match "node_modules/**" in "."`)
        expect(yield* text(glob, { pattern: "out/*.js" })).toBe(`No files match "out/*.js" in "."`)
        expect(yield* failure(glob, { pattern: "*", path: "out" })).toContain("symbolic link")
        expect(yield* failure(glob, { pattern: "*", path: "../" })).toContain("escapes the workspace root")
        expect(yield* failure(glob, { pattern: "*", path: "keep.log" })).toBe(`"keep.log" is not a directory; glob searches a directory's files`)
        expect(yield* failure(glob, { pattern: "" })).toContain("The pattern is empty")
      })
    ))

  it.effect("leaves out what the path rules deny, and counts what they ask about", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir("ws-glob-rules-")
      write(root, "notes/a.md", "")
      write(root, "notes/private.md", "")
      write(root, "asked/b.md", "")
      const pathRule: PathRule = (tool, path) =>
        tool !== "glob"
          ? undefined
          : path === "notes/private.md"
          ? { _tag: "Deny", rule: "Read(notes/private.md)" }
          : path === "asked"
          ? { _tag: "Ask", rule: "Read(asked/)" }
          : undefined
      yield* Effect.gen(function*() {
        expect(yield* text(glob, { pattern: "**/*.md" })).toBe(
          "notes/a.md\n[1 file(s) or directories the permission rules ask about were left out; name them in path to be asked]"
        )
        expect(yield* text(glob, { pattern: "notes/*.md" })).toBe("notes/a.md")
        // the rule the user was asked about for the path itself is answered
        expect(yield* text(glob, { pattern: "*.md", path: "asked" })).toBe("asked/b.md")
        expect(yield* failure(glob, { pattern: "*", path: "notes/private.md" })).toContain("denied")
      }).pipe(Effect.provide(WorkspaceLive.layer(root, { pathRule }).pipe(Layer.provideMerge(NodeServices.layer))))
    })))

  it.effect("leaves out exactly what git leaves out, for .gitignore files of every shape", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        const ignores: Record<string, string> = {
          ".gitignore": [
            "# a comment",
            "*.log",
            "!important.log",
            "/root-only.txt",
            "build/",
            "docs/*.tmp",
            "deep/**/gen",
            "star/**",
            "!star/keep.txt",
            "\\#hash.txt",
            "\\!bang.txt",
            "spaced.txt   ",
            "escaped\\ ",
            "[abc]x.txt",
            "q?.md",
            "crlf.txt\r",
            "a**b.txt",
            "*.{js,ts}",
            ""
          ].join("\n"),
          "sub/.gitignore": "!*.log\nlocal/\n/anchored.txt\n",
          "sub/inner/.gitignore": "*.log\n"
        }
        const files = [
          "x.log", "important.log", "root-only.txt", "sub/root-only.txt", "build/a.txt", "src/build/b.txt", "build.txt",
          "docs/a.tmp", "docs/nested/b.tmp", "deep/gen", "deep/one/two/gen", "deep/one/gen/inside.txt", "star/a.txt",
          "star/keep.txt", "star", "#hash.txt", "!bang.txt", "spaced.txt", "escaped ", "ax.txt", "dx.txt", "q1.md",
          "q12.md", "crlf.txt", "ab.txt", "aXYb.txt", "file.{js,ts}", "file.js", "sub/x.log", "sub/inner/y.log",
          "sub/local/z.txt", "sub/anchored.txt", "sub/deeper/anchored.txt", ".hidden/h.txt"
        ]
        for (const [file, content] of Object.entries(ignores)) write(root, file, content)
        for (const file of files) {
          if (file === "star") continue
          write(root, file, "")
        }
        execFileSync("git", ["init", "-q"], { cwd: root })
        const byGit = execFileSync("git", ["ls-files", "--others", "--exclude-per-directory=.gitignore", "-z"], { cwd: root, encoding: "utf8" })
          .split("\0").filter(Boolean).sort()
        const ours = (yield* text(makeGlob({ maxResults: 1000 }), { pattern: "**" })).split("\n").sort()
        expect(ours).toEqual(byGit)
        expect(ours).toContain("important.log")
        expect(ours).not.toContain("x.log")
      })
    ))

  it("is a read-only built-in tool, on by default", () => {
    const tool = builtinTools().find((t) => t.name === "glob")
    expect([tool?.readOnly, tool?.requiresApproval, tool?.idempotent]).toEqual([true, false, true])
  })
})
