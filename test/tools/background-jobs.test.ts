/**
 * Background commands: `exec` with `background: true` answers at once with a job id; `exec_output`
 * reads what it printed since the last read (waiting on the Clock when asked), `exec_kill` stops
 * it with everything it started; a session sees only its own jobs, holds at most `MAX_JOBS`, keeps
 * the newest `MAX_OUTPUT_BYTES` of output; and the registry's end kills every job still running.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { builtinTools, Tool, type ToolError, ToolRegistry, ToolRegistryLive, WorkspaceLive } from "effect-agent-loop"
import { Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Jobs from "../../src/tools/backgroundJobs.ts"
import { MAX_JOBS, MAX_KEPT_JOBS, MAX_OUTPUT_BYTES } from "../../src/tools/backgroundJobs.ts"
import { waitUntil } from "../support/waitUntil.ts"

const workspace = () => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "jobs-")))

/** Whether `pid` runs (a zombie does not). */
const alive = (pid: number) => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
  } catch {
    return false
  }
}

/** The registry of the built-in tools on `root`, in a scope the test closes itself. */
const registryIn = (root: string, scope: Scope.Scope) =>
  Layer.buildWithScope(ToolRegistryLive.layer(builtinTools({ enable: ["exec"] })).pipe(
    Layer.provide(WorkspaceLive.layer(root)),
    Layer.provide(NodeServices.layer)
  ), scope).pipe(Effect.map((context) => context.mapUnsafe.get(ToolRegistry.key) as ToolRegistry["Service"]))

const caller = (registry: ToolRegistry["Service"]) => (name: string, args: unknown, sessionKey = "s") =>
  Effect.gen(function*() {
    // as the loop calls it (a registered tool asks `CurrentTurn` of the turn; these never use it)
    const tool: Tool.Tool<any> = Option.getOrThrow(yield* registry.get(name))
    const decoded = yield* Effect.orDie(tool.decode(args))
    // a tool's failure reaches the model as an error result, as the loop makes it
    const run = tool.execute(decoded, { toolCallId: "c", turnId: "t", sessionKey, iteration: 1, depth: 0 }) as Effect.Effect<string | Tool.ToolOutput, ToolError>
    return yield* run.pipe(
      Effect.map(Tool.toOutput),
      Effect.catchTag("ToolError", (e) => Effect.succeed({ content: e.message, isError: true }))
    )
  })

const jobId = (text: string) => /Started background job (job-\d+)/.exec(text)![1]!

describe("background commands", () => {
  it.live("start at once, report new output and the exit, and stop with their children", () =>
    Effect.gen(function*() {
      const root = workspace()
      const scope = yield* Scope.make()
      const call = caller(yield* registryIn(root, scope))
      expect((yield* call("exec_output", { id: "job-1" })).isError).toBe(true)

      // a job that prints, waits for a file, then exits 3
      const started = yield* call("exec", { command: "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second; exit 3", background: true })
      expect(started.content).toMatch(/^Started background job job-1 \(running\)/)
      const first = yield* call("exec_output", { id: "job-1", wait_ms: 30_000 })
      expect(first.content).toBe("job job-1: running\nfirst\n")
      fs.writeFileSync(path.join(root, "go"), "")
      let last = ""
      yield* Effect.promise(() => waitUntil("the job to end", async () => {
        last += (await Effect.runPromise(call("exec_output", { id: "job-1", wait_ms: 1000 }))).content as string
        return last.includes("exited with code 3")
      }))
      expect(last).toContain("second\n")

      // kill: the job and what it started are gone
      const killed = jobId((yield* call("exec", { command: "sleep 300 & echo $! > child; echo $$ > parent; wait", background: true })).content as string)
      yield* Effect.promise(() => waitUntil("the pids", () => fs.existsSync(path.join(root, "child")) && fs.existsSync(path.join(root, "parent")) && fs.readFileSync(path.join(root, "child"), "utf8").trim() !== ""))
      const pids = ["child", "parent"].map((name) => Number(fs.readFileSync(path.join(root, name), "utf8")))
      expect(pids.every(alive)).toBe(true)
      expect((yield* call("exec_kill", { id: killed })).content).toMatch(new RegExp(`^job ${killed}: killed`))
      yield* Effect.promise(() => waitUntil("the job's processes to end", () => !pids.some(alive)))
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("belong to their session, and end with the registry", () =>
    Effect.gen(function*() {
      const root = workspace()
      const scope = yield* Scope.make()
      const call = caller(yield* registryIn(root, scope))
      const id = jobId((yield* call("exec", { command: "echo $$ > pid; exec sleep 300", background: true })).content as string)
      const other = yield* call("exec_output", { id }, "another-session")
      expect(other.isError).toBe(true)
      expect(other.content).toContain(`No background job "${id}" in this session`)
      yield* Effect.promise(() => waitUntil("the pid", () => fs.existsSync(path.join(root, "pid")) && fs.readFileSync(path.join(root, "pid"), "utf8").trim() !== ""))
      const pid = Number(fs.readFileSync(path.join(root, "pid"), "utf8"))
      expect(alive(pid)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      yield* Effect.promise(() => waitUntil("the job to be killed with the registry", () => !alive(pid)))
    }))

  it.live(`hold at most ${MAX_JOBS} running jobs per session, and keep the newest ${MAX_OUTPUT_BYTES} bytes of output`, () =>
    Effect.gen(function*() {
      const root = workspace()
      const scope = yield* Scope.make()
      const call = caller(yield* registryIn(root, scope))
      for (let i = 0; i < MAX_JOBS; i++) yield* call("exec", { command: "exec sleep 300", background: true })
      const refused = yield* call("exec", { command: "exec sleep 300", background: true })
      expect(refused.isError).toBe(true)
      expect(refused.content).toContain(`already runs ${MAX_JOBS} background jobs`)
      expect((yield* call("exec", { command: "exec sleep 300", background: true }, "s2")).isError).not.toBe(true)
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("drop the oldest output past the cap, saying how much", () =>
    Effect.gen(function*() {
      const root = workspace()
      const scope = yield* Scope.make()
      const call = caller(yield* registryIn(root, scope))
      // four times the cap: when the file appears, all but a pipe's buffer of it has been read
      const total = 4 * MAX_OUTPUT_BYTES
      const id = jobId((yield* call("exec", { command: `head -c ${total - 3} /dev/zero | tr '\\0' a; printf END; touch done`, background: true })).content as string)
      yield* Effect.promise(() => waitUntil("the job to print everything", () => fs.existsSync(path.join(root, "done"))))
      const reads: Array<{ dropped: number; output: string }> = []
      let ended = false
      while (!ended) {
        const content = (yield* call("exec_output", { id, wait_ms: 1000 })).content as string
        ended = content.startsWith(`job ${id}: exited with code 0`)
        const dropped = /^\[(\d+) earlier bytes dropped/m.exec(content)
        const output = content.split("\n").slice(dropped === null ? 1 : 2).join("\n")
        reads.push({ dropped: dropped === null ? 0 : Number(dropped[1]), output: output === "(no new output)" ? "" : output })
      }
      expect(reads[0]!.dropped).toBeGreaterThan(0)
      for (const read of reads) expect(read.output.length).toBeLessThanOrEqual(MAX_OUTPUT_BYTES)
      expect(reads.reduce((sum, read) => sum + read.dropped + read.output.length, 0)).toBe(total)
      expect(reads.map((read) => read.output).join("").endsWith("aEND")).toBe(true)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("wait for new output on the Clock, then answer with none", () =>
    Effect.gen(function*() {
      const root = workspace()
      const scope = yield* Scope.make()
      const call = caller(yield* registryIn(root, scope))
      const id = jobId((yield* call("exec", { command: "exec sleep 300", background: true })).content as string)
      const reading = yield* Effect.forkChild(call("exec_output", { id, wait_ms: 5000 }))
      yield* TestClock.adjust("4 seconds")
      expect(reading.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 second")
      expect((yield* Fiber.join(reading)).content).toBe(`job ${id}: running\n(no new output)`)
      yield* Scope.close(scope, Exit.void)
    }))
})

describe("the job table", () => {
  it.effect(`keeps at most ${MAX_KEPT_JOBS} jobs a session, forgetting the oldest ended ones first`, () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const table = yield* Jobs.make(scope)
      // one job that keeps running (never forgotten), then ended ones past the bound
      const running = yield* table.start("s", "server", () => Effect.never)
      for (let i = 0; i < MAX_KEPT_JOBS + 5; i++) {
        const job = yield* table.start("s", `job ${i}`, () => Effect.succeed(0))
        yield* Effect.yieldNow
        expect(job.id).toMatch(/^job-\d+$/)
      }
      const listed = yield* table.list("s")
      expect(listed).toHaveLength(MAX_KEPT_JOBS)
      expect(listed[0]!.id).toBe(running.id)
      // the newest ended jobs are the ones kept; the oldest five are gone
      expect(listed.slice(1).map((job) => job.command)).toEqual(Array.from({ length: MAX_KEPT_JOBS - 1 }, (_, i) => `job ${i + 6}`))
      expect((yield* Effect.flip(table.read("s", "job-2"))).message).toContain("No background job")
      // another session's jobs do not count against this one's
      yield* table.start("t", "other", () => Effect.succeed(0))
      expect(yield* table.list("s")).toHaveLength(MAX_KEPT_JOBS)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("decodes a character split between two reads whole", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const table = yield* Jobs.make(scope)
      const euro = Buffer.from("€")
      let emit: (chunk: Uint8Array) => void = () => {}
      const job = yield* table.start("s", "print", (onOutput) => Effect.sync(() => (emit = onOutput)).pipe(Effect.andThen(Effect.never)))
      yield* Effect.yieldNow
      emit(euro.subarray(0, 1))
      const first = yield* table.read("s", job.id)
      emit(euro.subarray(1))
      const second = yield* table.read("s", job.id)
      expect(first.output + second.output).toBe("€")
      yield* Scope.close(scope, Exit.void)
    }))
})
