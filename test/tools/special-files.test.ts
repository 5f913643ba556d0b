/**
 * FIFOs, sockets and devices look like files by name, but opening a FIFO blocks until a writer
 * comes, forever, in a thread nothing can interrupt. The file tools refuse every file that is not a
 * regular file, without ever opening one in a way that could block. And every built-in tool has a
 * default timeout, so nothing a tool waits on can hold a turn forever.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as childProcess from "node:child_process"
import * as nodeFs from "node:fs"
import * as net from "node:net"
import * as nodePath from "node:path"
import { builtinTools, editFile, grep, listDir, makeExec, makeReadFile, readFile, writeFile } from "effect-agent-loop"
import { DEFAULT_FILE_TOOL_TIMEOUT } from "../../src/tools/workspace.ts"
import { failure, text, withWorkspace, write } from "../support/toolWorkspace.ts"

/** A FIFO at `file`, released at the end of the scope: a reader still blocked on it (the bug) gets a writer. */
const fifo = (file: string) =>
  Effect.acquireRelease(
    Effect.sync(() => childProcess.execFileSync("mkfifo", [file])),
    () =>
      Effect.sync(() => {
        const fd = nodeFs.openSync(file, nodeFs.constants.O_RDWR | nodeFs.constants.O_NONBLOCK)
        nodeFs.closeSync(fd)
      })
  )

/** A listening Unix socket at `file`, closed at the end of the scope. */
const socket = (file: string) =>
  Effect.acquireRelease(
    Effect.callback<net.Server>((resume) => {
      const server = net.createServer().listen(file, () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  )

describe("non-regular files are refused without blocking", () => {
  it.live("read_file, grep, edit_file and write_file refuse a FIFO; list_dir marks it; grep's walk passes it by", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        yield* fifo(nodePath.join(root, "pipe"))
        nodeFs.symlinkSync(nodePath.join(root, "pipe"), nodePath.join(root, "pipe-link"))
        write(root, "notes.txt", "needle\n")
        const refused = `"pipe" is a FIFO (named pipe), not a regular file; the file tools only read and write regular files`
        expect(yield* failure(readFile, { path: "pipe" })).toBe(refused)
        expect(yield* failure(readFile, { path: "pipe-link" })).toContain("is a FIFO (named pipe)")
        expect(yield* failure(grep, { pattern: "x", path: "pipe" })).toBe(refused)
        expect(yield* failure(editFile, { path: "pipe", old_text: "a", new_text: "b" })).toBe(refused)
        expect(yield* failure(writeFile, { path: "pipe", content: "x" })).toBe(refused)
        expect(nodeFs.lstatSync(nodePath.join(root, "pipe")).isFIFO()).toBe(true)
        expect(yield* text(grep, { pattern: "needle" })).toBe("notes.txt:1: needle")
        expect(yield* text(listDir, {})).toBe("notes.txt\npipe [FIFO]\npipe-link")
      })
    ))

  it.live("a socket is refused and marked", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        yield* socket(nodePath.join(root, "s.sock"))
        expect(yield* failure(readFile, { path: "s.sock" })).toBe(
          `"s.sock" is a socket, not a regular file; the file tools only read and write regular files`
        )
        expect(yield* failure(writeFile, { path: "s.sock", content: "x" })).toContain("is a socket")
        expect(yield* text(listDir, {})).toBe("s.sock [socket]")
      })
    ))

  it.live("a character device (where the test may create one) is refused", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        const device = nodePath.join(root, "null")
        try {
          childProcess.execFileSync("mknod", [device, "c", "1", "3"], { stdio: "ignore" })
        } catch {
          return // not allowed to create device nodes here
        }
        expect(yield* failure(readFile, { path: "null" })).toContain(`"null" is a device`)
        expect(yield* failure(writeFile, { path: "null", content: "x" })).toContain("is a device")
        expect(yield* text(listDir, {})).toBe("null [device]")
      })
    ))
})

describe("default timeouts", () => {
  it("every built-in tool has one: 30 s for the file tools, exec's own limit plus its kill grace for exec", () => {
    expect(Duration.toMillis(DEFAULT_FILE_TOOL_TIMEOUT)).toBe(30_000)
    const timeouts = Object.fromEntries(builtinTools().map((tool) => [tool.name, tool.timeout && Duration.toMillis(tool.timeout)]))
    expect(timeouts).toEqual({
      read_file: 30_000,
      list_dir: 30_000,
      grep: 30_000,
      glob: 30_000,
      write_file: 30_000,
      edit_file: 30_000,
      // exec's own timeout (at most 10 minutes) kills the command first; this only backs it up
      exec: 600_000 + 2 * 2_000 + 1_000
    })
    expect(Duration.toMillis(makeReadFile({ timeout: "5 seconds" }).timeout!)).toBe(5_000)
    expect(Duration.toMillis(makeExec({ maxTimeout: "1 minute", killGrace: "1 second" }).timeout!)).toBe(60_000 + 2_000 + 1_000)
  })
})
