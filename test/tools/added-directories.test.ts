/**
 * Directories added beside the workspace root (Claude Code's `--add-dir`,
 * `permissions.additionalDirectories`): the file tools reach them under the workspace's own rules
 * (a link leading out of every root is refused, the host's path rules apply, protected locations
 * ask), and show their paths absolute.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { editFile, glob, grep, listDir, readFile, Workspace, WorkspaceLive, writeFile } from "effect-agent-loop"
import { failure, tempDir, text, write } from "../support/toolWorkspace.ts"

/** A workspace, a directory added beside it, and one outside both. */
const withAdded = <A, E>(
  body: (dirs: { root: string; added: string; outside: string }) => Effect.Effect<A, E, Workspace | NodeServices.NodeServices>,
  pathRule?: (tool: string, path: string) => { readonly _tag: "Deny" | "Ask"; readonly rule: string } | undefined
) =>
  Effect.scoped(Effect.gen(function*() {
    const root = yield* tempDir("ws-")
    const added = yield* tempDir("added-")
    const outside = yield* tempDir("outside-")
    return yield* body({ root, added, outside }).pipe(
      Effect.provide(WorkspaceLive.layer(root, { additionalDirectories: [added], ...(pathRule === undefined ? {} : { pathRule }) }))
    )
  })).pipe(Effect.provide(NodeServices.layer))

describe("added directories", () => {
  it.effect("read_file, write_file, edit_file, list_dir, glob and grep reach an added directory by absolute path, and show its paths absolute", () =>
    withAdded(({ added, root }) =>
      Effect.gen(function*() {
        write(added, "lib/util.ts", "export const answer = 42\n")
        write(root, "src/main.ts", "import { answer } from 'lib'\n")
        const file = nodePath.join(added, "lib/util.ts")
        expect(yield* text(readFile, { path: file })).toBe("     1\texport const answer = 42")
        // relative paths that lead into it are taken too
        expect(yield* text(readFile, { path: nodePath.relative(root, file) })).toBe("     1\texport const answer = 42")
        expect(yield* text(editFile, { path: file, old_text: "42", new_text: "43" })).toBe(`Edited "${file}": replaced 1 occurrence at line 1`)
        expect(yield* text(writeFile, { path: nodePath.join(added, "lib/new.ts"), content: "export {}\n" })).toMatch(/^Created ".*\/lib\/new\.ts": wrote 10 bytes/)
        expect(nodeFs.readFileSync(file, "utf8")).toBe("export const answer = 43\n")
        expect(yield* text(listDir, { path: nodePath.join(added, "lib") })).toBe("new.ts\nutil.ts")
        expect((yield* text(glob, { pattern: "**/*.ts", path: added })).split("\n").sort()).toEqual([nodePath.join(added, "lib/new.ts"), file])
        expect(yield* text(grep, { pattern: "answer", path: added })).toBe(`${file}:1: export const answer = 43`)
        // the workspace's own paths are as before
        expect(yield* text(grep, { pattern: "answer", path: "." })).toBe("src/main.ts:1: import { answer } from 'lib'")
        expect(yield* text(glob, { pattern: "**/*.ts" })).toBe("src/main.ts")
      })))

  it.effect("a path outside every root is refused naming them, and so is a link in an added directory that leads out", () =>
    withAdded(({ added, outside, root }) =>
      Effect.gen(function*() {
        write(outside, "secret.txt", "no")
        nodeFs.symlinkSync(nodePath.join(outside, "secret.txt"), nodePath.join(added, "link.txt"))
        nodeFs.symlinkSync(outside, nodePath.join(added, "out"))
        expect(yield* failure(readFile, { path: nodePath.join(outside, "secret.txt") })).toBe(
          `Path "${nodePath.join(outside, "secret.txt")}" is outside the workspace root ${root} and the added directories (${added}); use a path relative to the workspace root`
        )
        expect(yield* failure(readFile, { path: nodePath.join(added, "link.txt") })).toMatch(/resolves through a symbolic link to a location outside the workspace root .* and the added directories/)
        expect(yield* failure(writeFile, { path: nodePath.join(added, "out", "x.txt"), content: "x" })).toMatch(/resolves through a symbolic link/)
        expect(nodeFs.existsSync(nodePath.join(outside, "x.txt"))).toBe(false)
        // a link inside the workspace into the added directory is fine: both are reachable
        nodeFs.symlinkSync(added, nodePath.join(root, "vendor"))
        write(added, "a.txt", "from the added one")
        expect(yield* text(readFile, { path: "vendor/a.txt" })).toBe("     1\tfrom the added one")
      })))

  it.effect("the host's path rules are asked about an added directory's files by their absolute paths, in walks too", () => {
    const asked: Array<string> = []
    return withAdded(({ added }) =>
      Effect.gen(function*() {
        write(added, ".env", "TOKEN=1")
        write(added, "notes.txt", "TOKEN is in .env")
        expect(yield* failure(readFile, { path: nodePath.join(added, ".env") })).toMatch(/denied to read_file by the permission rule "Read\(\/\/.*\.env\)"/)
        // grep walks the added directory: the denied file is passed by
        expect(yield* text(grep, { pattern: "TOKEN", path: added })).toBe(`${nodePath.join(added, "notes.txt")}:1: TOKEN is in .env`)
        expect(asked).toContain(nodePath.join(added, "notes.txt"))
      }), (_tool, path) => {
      asked.push(path)
      return path.endsWith("/.env") ? { _tag: "Deny", rule: `Read(/${path})` } : undefined
    })
  })

  it.effect("protected locations of an added directory ask before a write, as the workspace's do", () =>
    withAdded(({ added }) =>
      Effect.gen(function*() {
        nodeFs.mkdirSync(nodePath.join(added, ".git"))
        expect(writeFile.needsApproval({ path: nodePath.join(added, ".git", "config"), content: "" })).toBe(true)
        // reached through a link whose name does not look protected: refused, since nobody was asked
        nodeFs.symlinkSync(nodePath.join(added, ".git"), nodePath.join(added, "meta"))
        expect(yield* failure(writeFile, { path: nodePath.join(added, "meta", "config"), content: "x" })).toMatch(/\.git/)
      })))

  it.effect("an added directory that does not exist is skipped: its paths stay outside", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir("ws-")
      const gone = nodePath.join(root, "..", "no-such-dir-for-agent-loop")
      const workspace = yield* WorkspaceLive.make(root, { additionalDirectories: [gone] })
      expect(workspace.additional).toBeUndefined()
    })).pipe(Effect.provide(NodeServices.layer)))
})
