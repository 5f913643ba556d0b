import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as childProcess from "node:child_process"
import * as nodeFs from "node:fs"
import * as fsp from "node:fs/promises"
import * as os from "node:os"
import * as nodePath from "node:path"
import { exec, makeExec, Message, Tool, type ToolError, Workspace, WorkspaceLive } from "effect-agent-loop"

const context: Tool.ToolContext = { toolCallId: "call-1", turnId: "turn-1", sessionKey: "s", iteration: 0, depth: 0 }

/** Runs `body` with a workspace on a fresh temp dir under the OS temp dir, removed afterwards. */
const withWorkspace = <A, E>(
  body: (root: string) => Effect.Effect<A, E, Workspace | NodeServices.NodeServices>
) =>
  Effect.scoped(Effect.gen(function*() {
    const root = yield* Effect.acquireRelease(
      Effect.sync(() => nodeFs.realpathSync(nodeFs.mkdtempSync(nodePath.join(os.tmpdir(), "exec-")))),
      (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
    )
    return yield* body(root).pipe(Effect.provide(WorkspaceLive.layer(root)))
  })).pipe(Effect.provide(NodeServices.layer))

const call = (tool: Tool.Tool<any>, args: unknown) =>
  tool.decode(args).pipe(Effect.orDie, Effect.flatMap((decoded) => tool.execute(decoded, context)), Effect.map(Tool.toOutput))

/** Whether `pid` is a live process (a zombie counts as gone: it runs nothing). */
const isAlive = (pid: number): boolean => {
  try {
    const stat = nodeFs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
  } catch {
    if (nodeFs.existsSync("/proc/self")) return false
    try {
      process.kill(pid, 0)
      return true
    } catch {
      return false
    }
  }
}

/**
 * Starts `command` through the tool in a fiber and waits, without any clock, until the command has
 * written a pid into a FIFO: from then on the process surely runs and the tool's timeout is armed.
 */
const startBlocking = (root: string, tool: Tool.Tool<any>, args: (fifo: string) => Record<string, unknown>) =>
  Effect.gen(function*() {
    const fifo = nodePath.join(root, "ready.fifo")
    childProcess.execFileSync("mkfifo", [fifo])
    const fiber = yield* Effect.forkChild(call(tool, args(fifo)))
    const pid = Number((yield* Effect.promise(() => fsp.readFile(fifo, "utf8"))).trim())
    expect(pid).toBeGreaterThan(0)
    return { fiber, pid }
  })

describe("exec", () => {
  it.effect("runs sh -c in the workspace root and reports the exit code with stdout and stderr", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const ok = yield* call(exec, { command: "pwd; echo out; echo err >&2" })
        expect(ok).toEqual({ content: `exit code: 0\n${root}\nout\nerr\n`, isError: false })
        const failed = yield* call(exec, { command: "echo partial; exit 3" })
        expect(failed).toEqual({ content: "exit code: 3\npartial\n", isError: true })
        expect((yield* call(exec, { command: "true" })).content).toBe("exit code: 0\n(no output)")
        expect((yield* call(exec, { command: "cat" })).content).toBe("exit code: 0\n(no output)")
      })
    ))

  it.effect("reports a command killed by a signal as an error, with the output it wrote", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        const error = (yield* Effect.flip(call(exec, { command: "echo before; kill -KILL $$" }))) as ToolError
        expect(error.message).toContain("Command failed to run or was killed")
        expect(error.message).toContain("SIGKILL")
        expect(error.message).toContain("before")
      })
    ))

  it.effect("withholds secret-looking environment variables", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        process.env.EXEC_TEST_API_KEY = "sk-do-not-leak"
        process.env.EXEC_TEST_PLAIN = "visible"
        const output = yield* call(exec, { command: "echo \"[$EXEC_TEST_API_KEY][$EXEC_TEST_PLAIN]\"" }).pipe(
          Effect.ensuring(Effect.sync(() => {
            delete process.env.EXEC_TEST_API_KEY
            delete process.env.EXEC_TEST_PLAIN
          }))
        )
        expect(output.content).toBe("exit code: 0\n[][visible]\n")
      })
    ))

  it.effect("caps output at 64 KiB: exactly at the cap nothing is cut, beyond it a note says how much was dropped", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        const exact = yield* call(exec, { command: "head -c 65536 /dev/zero | tr '\\0' a" })
        expect(exact.content).toBe(`exit code: 0\n${"a".repeat(65536)}`)
        const over = yield* call(exec, { command: "head -c 70000 /dev/zero | tr '\\0' a; echo done >&2" })
        expect(over.content).toBe(
          `exit code: 0\n${"a".repeat(65536)}\n[output truncated: showing the first 65536 of 70005 bytes; ` +
            "redirect output to a file and inspect it with grep or read_file]"
        )
        // "é" is two bytes: a cap of 2 falls inside it, and the half character is dropped, not garbled
        const small = yield* call(makeExec({ maxOutputBytes: 2 }), { command: "printf 'héllo'" })
        expect(Message.textOf(small.content).split("\n").slice(0, 3)).toEqual([
          "exit code: 0",
          "h",
          "[output truncated: showing the first 2 of 6 bytes; redirect output to a file and inspect it with grep or read_file]"
        ])
      })
    ))

  it.effect("times out on the Clock: kills the process and returns an error saying so", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const { fiber, pid } = yield* startBlocking(root, exec, (fifo) => ({
          command: `echo started; echo $$ > ${fifo}; exec sleep 30`
        }))
        yield* TestClock.adjust("29999 millis")
        expect(fiber.pollUnsafe()).toBeUndefined()
        expect(isAlive(pid)).toBe(true)
        yield* TestClock.adjust("1 millis")
        const error = (yield* Effect.flip(Fiber.join(fiber))) as ToolError
        expect(error._tag).toBe("ToolError")
        expect(error.message).toBe(
          "Command timed out after 30000 ms and was killed (pass a larger timeout_ms, at most 600000, if it needs " +
            "longer). Output before the timeout:\nstarted\n"
        )
        expect(isAlive(pid)).toBe(false)
      })
    ))

  it.effect("kills the whole process group, background children included, and caps timeout_ms at the maximum", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const tool = makeExec({ maxTimeout: "5 seconds", killGrace: "100 millis" })
        const { fiber, pid } = yield* startBlocking(root, tool, (fifo) => ({
          command: `sleep 30 & echo $! > ${fifo}; wait`,
          timeout_ms: 60_000
        }))
        yield* TestClock.adjust("5 seconds")
        const error = (yield* Effect.flip(Fiber.join(fiber))) as ToolError
        expect(error.message).toContain("Command timed out after 5000 ms")
        expect(isAlive(pid)).toBe(false)
      })
    ))

  it.effect("kills the process when the call is interrupted", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const { fiber, pid } = yield* startBlocking(root, exec, (fifo) => ({ command: `echo $$ > ${fifo}; exec sleep 30` }))
        expect(isAlive(pid)).toBe(true)
        yield* Fiber.interrupt(fiber)
        expect(isAlive(pid)).toBe(false)
      })
    ))
})
