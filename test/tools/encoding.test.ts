/**
 * Files that are not what they seem: the file tools never re-encode bytes they did not change,
 * refuse to edit or replace what is not UTF-8 text, and say so when they skip a binary file.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { editFile, grep, makeEditFile, readFile, writeFile } from "effect-agent-loop"
import { failure, text, withWorkspace, write } from "../support/toolWorkspace.ts"

const bytes = (...parts: Array<string | ReadonlyArray<number>>) =>
  Buffer.concat(parts.map((part) => typeof part === "string" ? Buffer.from(part, "utf8") : Buffer.from(part)))

const read = (root: string, file: string) => nodeFs.readFileSync(nodePath.join(root, file))

describe("edit_file never corrupts a file", () => {
  it.effect("refuses Latin-1 and stray FF FE bytes (not UTF-8) and leaves every byte in place", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        const latin1 = bytes("caf", [0xe9], " = 1\nx = 2\n")
        const strayBom = bytes("hello\n", [0xff, 0xfe], "world\nx = 2\n")
        write(root, "latin1.txt", latin1)
        write(root, "stray.txt", strayBom)
        for (const file of ["latin1.txt", "stray.txt"]) {
          const message = yield* failure(editFile, { path: file, old_text: "x = 2", new_text: "x = 3" })
          expect(message).toContain(`"${file}" is not valid UTF-8`)
          expect(message).toContain("byte")
        }
        expect(read(root, "latin1.txt").equals(latin1)).toBe(true)
        expect(read(root, "stray.txt").equals(strayBom)).toBe(true)
      })
    ))

  it.effect("refuses a file with NUL bytes anywhere, even past the first 8 KiB", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        const late = bytes("x = 2\n", "y".repeat(20_000), [0], "\n")
        write(root, "late.bin", late)
        write(root, "early.bin", bytes([0], "x = 2\n"))
        for (const file of ["late.bin", "early.bin"]) {
          expect(yield* failure(editFile, { path: file, old_text: "x = 2", new_text: "x = 3" })).toContain(
            `"${file}" is a binary file (it contains NUL bytes)`
          )
        }
        expect(read(root, "late.bin").equals(late)).toBe(true)
      })
    ))

  it.effect("keeps a UTF-8 BOM and every untouched byte exactly", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "bom.txt", bytes([0xef, 0xbb, 0xbf], "first é 👍\nsecond\nthird\n"))
        yield* text(editFile, { path: "bom.txt", old_text: "second", new_text: "2nd" })
        expect(read(root, "bom.txt").equals(bytes([0xef, 0xbb, 0xbf], "first é 👍\n2nd\nthird\n"))).toBe(true)
      })
    ))

  it.effect("matches LF old_text in a CRLF file (as read_file shows it) and keeps CRLF endings", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "dos.txt", "one\r\ntwo\r\nthree\r\n")
        expect(yield* text(editFile, { path: "dos.txt", old_text: "two\nthree", new_text: "2\n3" })).toBe(
          `Edited "dos.txt": replaced 1 occurrence at line 2`
        )
        expect(read(root, "dos.txt").toString("latin1")).toBe("one\r\n2\r\n3\r\n")
        yield* text(editFile, { path: "dos.txt", old_text: "one", new_text: "one\nhalf" })
        expect(read(root, "dos.txt").toString("latin1")).toBe("one\r\nhalf\r\n2\r\n3\r\n")
        // a file with mixed endings is matched exactly only: nothing is converted
        write(root, "mixed.txt", "a\r\nb\nc\n")
        yield* text(editFile, { path: "mixed.txt", old_text: "b\nc", new_text: "b\nd" })
        expect(read(root, "mixed.txt").toString("latin1")).toBe("a\r\nb\nd\n")
        expect(yield* failure(editFile, { path: "mixed.txt", old_text: "a\nb", new_text: "x" })).toContain("not found")
      })
    ))

  it.effect("refuses files larger than its limit; exactly at the limit it edits", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        const tool = makeEditFile({ maxFileBytes: 10 })
        write(root, "ten.txt", "0123456789")
        write(root, "eleven.txt", "0123456789a")
        yield* text(tool, { path: "ten.txt", old_text: "0", new_text: "x" })
        expect(read(root, "ten.txt").toString()).toBe("x123456789")
        expect(yield* failure(tool, { path: "eleven.txt", old_text: "0", new_text: "x" })).toContain(
          `"eleven.txt" is 11 bytes, more than edit_file's limit of 10 bytes`
        )
      })
    ))
})

describe("write_file, read_file and grep on binary and non-UTF-8 files", () => {
  it.effect("write_file refuses to replace a binary file, and says so when it replaces non-UTF-8 text", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        const blob = bytes([0x89], "PNG", [0, 0, 0x0d])
        write(root, "image.png", blob)
        const message = yield* failure(writeFile, { path: "image.png", content: "text" })
        expect(message).toContain(`"image.png" is a binary file (it contains NUL bytes); write_file will not replace it`)
        expect(read(root, "image.png").equals(blob)).toBe(true)
        write(root, "latin1.txt", bytes("caf", [0xe9], "\n"))
        expect(yield* text(writeFile, { path: "latin1.txt", content: "café\n" })).toBe(
          `Overwrote "latin1.txt": wrote 6 bytes (the previous content was not valid UTF-8; the file is UTF-8 now)`
        )
      })
    ))

  it.effect("read_file notes undecodable bytes; grep says when the file it was given is binary, and counts binary files that match", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "latin1.txt", bytes("caf", [0xe9], "\n"))
        expect(yield* text(readFile, { path: "latin1.txt" })).toBe(
          "     1\tcaf\uFFFD\n" +
            `[note: "latin1.txt" is not valid UTF-8; undecodable bytes are shown as \uFFFD, and edit_file will not edit it]`
        )
        write(root, "a.bin", bytes("needle", [0], "\n"))
        write(root, "b.txt", "needle\n")
        expect(yield* failure(grep, { pattern: "needle", path: "a.bin" })).toBe(
          `"a.bin" is a binary file (it contains NUL bytes); grep searches text files only`
        )
        write(root, "c.bin", bytes("haystack", [0], "\n"))
        expect(yield* text(grep, { pattern: "needle" })).toBe("b.txt:1: needle\n[1 binary file(s) also match; grep shows lines of text files only]")
      })
    ))
})
