/**
 * The CLI's parts that need no process: the Ctrl-C double-press window (on TestClock), the
 * approval decisions, colours and NO_COLOR, line handling of the screen, and --tools parsing.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { PassThrough } from "node:stream"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Option, Schema } from "effect"
import { TestClock } from "effect/testing"
import { approvalHook, DENIED_REASON, NO_TERMINAL_REASON } from "../../src/cli/permissions/approval.ts"
import * as CtrlC from "../../src/cli/terminal/ctrlC.ts"
import { dataDir } from "../../src/cli/config/dataDir.ts"
import * as EventSink from "../../src/cli/output/eventSink.ts"
import { CliFailure } from "../../src/cli/terminal/failure.ts"
import * as Format from "../../src/cli/terminal/format.ts"
import * as LineInput from "../../src/cli/input/lineInput.ts"
import * as CliLogger from "../../src/cli/runtime/logger.ts"
import * as Screen from "../../src/cli/terminal/screen.ts"
import { parseTools } from "../../src/cli/settings/settings.ts"
import { styleFor } from "../../src/cli/terminal/style.ts"
import { AgentEvent, AgentLoop, EventBus, EventBusLive, type Hook, Tool } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { recordingScreen } from "../support/screen.ts"

const fakeScreen = (interactive: boolean) => recordingScreen({ stdinIsTTY: interactive })

const call: Hook.HookToolCall = { id: "c1", name: "exec", arguments: { command: "rm -rf build" }, readOnly: false, requiresApproval: true }
const context = { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }

/** The hook's decision; it must make one. */
const decide = (hook: ReturnType<typeof approvalHook>) => {
  const result = hook.approveTool!({ context, call })
  return Effect.flatMap(Effect.isEffect(result) ? result : Effect.succeed(result), (decision) =>
    decision === undefined ? Effect.die(new Error("no decision")) : Effect.succeed(decision))
}

describe("Ctrl-C", () => {
  it.effect("first press interrupts gracefully, a press within 2 s aborts, a later one does not; idle presses go to the command", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const idle: Array<boolean> = []
      const { out, screen } = fakeScreen(true)
      const press = yield* CtrlC.controller({ sessionKey: "s", onIdle: (repeated) => Effect.sync(() => idle.push(repeated)) }).pipe(
        Effect.provideService(Screen.Screen, screen)
      )
      yield* press
      expect(idle).toEqual([false])

      const turn = yield* Effect.forkChild(loop.turn("s", "go"))
      yield* Testing.settled(Effect.map(loop.activeTurn("s"), (info) => info?.phase === "llm" || undefined))
      yield* press
      expect(out.stderr).toBe("")
      yield* TestClock.adjust(CtrlC.DOUBLE_PRESS_MS + 1)
      yield* press
      expect((yield* events).filter((e) => e._tag === "InterruptReceived").map((e) => e._tag === "InterruptReceived" && e.kind)).toEqual(["graceful"])
      expect(out.stderr).toBe("(press Ctrl-C again within 2 s to abort)\n")
      yield* TestClock.adjust(CtrlC.DOUBLE_PRESS_MS)
      yield* press
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("aborted")
      expect((yield* events).filter((e) => e._tag === "InterruptReceived").map((e) => e._tag === "InterruptReceived" && e.kind)).toEqual([
        "graceful",
        "hard"
      ])

      yield* press
      yield* press
      yield* TestClock.adjust(CtrlC.DOUBLE_PRESS_MS + 1)
      yield* press
      expect(idle).toEqual([false, false, true, false])
    }).pipe(Effect.provide(Testing.layer({ script: [{ content: "thinking", stall: true }] }))))
})

describe("Ctrl-C during an approval prompt", () => {
  let runs = 0
  const danger = Tool.make({
    name: "danger",
    description: "Needs approval",
    parameters: Schema.Struct({}),
    requiresApproval: true,
    execute: () => Effect.sync(() => `ran ${++runs}`)
  })

  it.effect("answers the prompt no at once: the call is denied, the turn sums up, and a later y is only a line", () =>
    Effect.gen(function*() {
      const stdin = new PassThrough()
      const input = yield* LineInput.fromReadable(stdin)
      const { out, screen } = fakeScreen(true)
      const loop = yield* AgentLoop
      yield* loop.registerHook(approvalHook({ policy: "ask", screen, ask: input.ask }))
      const press = yield* CtrlC.controller({ sessionKey: "s", onIdle: () => Effect.void, cancelQuestions: input.cancelQuestions }).pipe(
        Effect.provideService(Screen.Screen, screen)
      )
      const turn = yield* Effect.forkChild(loop.turn("s", "go"))
      yield* Testing.settled(Effect.sync(() => out.stderr.includes("? allow danger? [y/a/N] ") || undefined))
      yield* press
      stdin.write("y\n")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("interrupted")
      expect(runs).toBe(0)
      expect(result.messages.find((m) => m.role === "tool")?.content).toContain(DENIED_REASON)
      expect(out.stderr).toContain("(denied danger)")
      expect(yield* input.next).toEqual(Option.some("y"))
    }).pipe(
      Effect.scoped,
      Effect.provide(Testing.layer({ script: [{ toolCalls: [{ name: "danger", arguments: {} }] }, { content: "Stopped." }], tools: [danger] }))
    ))
})

describe("line input", () => {
  it.effect("with continuation, a trailing backslash joins lines into one input; answers stay single lines; a piped backslash is kept", () =>
    Effect.gen(function*() {
      const stdin = new PassThrough()
      const input = yield* LineInput.fromReadable(stdin, { continuation: true })
      const answer = yield* Effect.forkChild(input.ask, { startImmediately: true })
      stdin.write("yes \\\n")
      expect(yield* Fiber.join(answer)).toBe("yes \\")
      stdin.write("first \\\nsecond\\\nthird\nalone\nunfinished\\\n")
      stdin.end()
      expect(yield* input.next).toEqual(Option.some("first \nsecond\nthird"))
      expect(yield* input.next).toEqual(Option.some("alone"))
      expect(yield* input.next).toEqual(Option.some("unfinished"))
      expect(yield* input.next).toEqual(Option.none())
      const piped = new PassThrough()
      const plain = yield* LineInput.fromReadable(piped)
      piped.end("C:\\dir\\\nnext\n")
      expect(yield* plain.next).toEqual(Option.some("C:\\dir\\"))
      expect(yield* plain.next).toEqual(Option.some("next"))
    }).pipe(Effect.scoped))

  it.effect("on a terminal, the history file keeps the newest inputs up to its bound, without answers", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "agent-loop-history-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const historyFile = nodePath.join(dir, "data", "chat-history.jsonl")
      fs.mkdirSync(nodePath.dirname(historyFile))
      const older = Array.from({ length: LineInput.HISTORY_SIZE + 20 }, (_, i) => `old ${i}`)
      fs.writeFileSync(historyFile, older.map((entry) => JSON.stringify(entry)).join("\n") + "\nnot json\n")
      const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => stdin })
      const output = Object.assign(new PassThrough(), { isTTY: true, columns: 80 })
      output.resume()
      const input = yield* LineInput.fromReadable(stdin, { continuation: true, terminal: { output, prompt: () => "> ", historyFile } })
      const answer = yield* Effect.forkChild(input.ask, { startImmediately: true })
      stdin.write("y\r")
      expect(yield* Fiber.join(answer)).toBe("y")
      stdin.write("new line\r")
      expect(yield* input.next).toEqual(Option.some("new line"))
      const saved = fs.readFileSync(historyFile, "utf8").trim().split("\n").map((line) => JSON.parse(line))
      expect(saved).toHaveLength(LineInput.HISTORY_SIZE)
      expect(saved.at(-1)).toBe("new line")
      expect(saved.at(-2)).toBe(older.at(-1))
      expect(saved).not.toContain("y")
      expect(fs.statSync(historyFile).mode & 0o777).toBe(0o600)
    }).pipe(Effect.scoped))
})

describe("event sink", () => {
  const place = { turnId: "t1", sessionKey: "s", iteration: 1, depth: 0 }
  const turnStart = AgentEvent.make("TurnStart", place, 0, { input: "go" })
  const delta = AgentEvent.make("LLMDelta", place, 1, { kind: "text", text: "Hi" })
  const error = AgentEvent.make("Error", place, 1, { stage: "afterTool", message: "boom" })
  const turnEnd = AgentEvent.make("TurnEnd", place, 2, {
    status: "completed",
    iterations: 1,
    durationMs: 0,
    usage: { inputTokens: 0, outputTokens: 0 }
  })

  /** A sink of `capacity` whose one handler waits for `gate` before recording each event. */
  const gatedSink = (capacity: number) =>
    Effect.gen(function*() {
      const bus = yield* EventBus
      const gate = yield* Deferred.make<void>()
      const handled: Array<string> = []
      const sink = yield* EventSink.start([(event) => Effect.andThen(Deferred.await(gate), Effect.sync(() => handled.push(event._tag)))], capacity)
      return { bus, gate, handled, sink }
    })

  it.effect("flushed waits until the turn's TurnEnd has been handled", () =>
    Effect.gen(function*() {
      const { bus, gate, handled, sink } = yield* gatedSink(10)
      yield* Effect.forEach([turnStart, delta, turnEnd], bus.publish)
      const flushed = yield* Effect.forkChild(sink.flushed("t1"))
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow
      expect(flushed.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(flushed)
      expect(handled).toEqual(["TurnStart", "LLMDelta", "TurnEnd"])
    }).pipe(Effect.scoped, Effect.provide(EventBusLive.layerCapacity())))

  // The bus gives up a TurnEnd only for a buffer that holds nothing but lifecycle events (an Error here).
  it.effect("flushed does not wait for a TurnEnd that the full buffer dropped", () =>
    Effect.gen(function*() {
      const { bus, gate, handled, sink } = yield* gatedSink(1)
      yield* bus.publish(turnStart)
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow
      yield* bus.publish(error)
      yield* bus.publish(turnEnd)
      expect(yield* sink.dropped).toBe(1)
      const flushed = yield* Effect.forkChild(sink.flushed("t1"))
      yield* Deferred.succeed(gate, undefined)
      yield* Testing.settled(Effect.sync(() => flushed.pollUnsafe() !== undefined || undefined))
      yield* Testing.settled(Effect.sync(() => handled.length === 2 || undefined))
      expect(handled).toEqual(["TurnStart", "Error"])
    }).pipe(Effect.scoped, Effect.provide(EventBusLive.layerCapacity())))
})

describe("approval", () => {
  it.effect("--yes approves without asking", () =>
    Effect.gen(function*() {
      const { out, screen } = fakeScreen(false)
      const decision = yield* decide(approvalHook({ policy: "approve", screen, ask: undefined }))
      expect(decision).toEqual({ _tag: "Approve" })
      expect(out.stderr).toBe("")
    }))

  it.effect("with no terminal it denies, tells the model, and says why on stderr", () =>
    Effect.gen(function*() {
      const { out, screen } = fakeScreen(false)
      const decision = yield* decide(approvalHook({ policy: "ask", screen, ask: undefined }))
      expect(decision).toEqual({ _tag: "Deny", reason: NO_TERMINAL_REASON })
      expect(out.stderr).toBe(
        "agent-loop: denied exec {\"command\":\"rm -rf build\"}: it needs approval and there is no terminal to ask (pass --yes to approve)\n"
      )
    }))

  it.effect("on a terminal it asks: y or yes approves, anything else or end of input denies", () =>
    Effect.gen(function*() {
      const answers: ReadonlyArray<readonly [string | undefined, string]> = [
        ["y", "Approve"],
        [" YES ", "Approve"],
        ["n", "Deny"],
        ["", "Deny"],
        ["yeah", "Deny"],
        [undefined, "Deny"]
      ]
      for (const [answer, expected] of answers) {
        const { out, screen } = fakeScreen(true)
        const decision = yield* decide(approvalHook({ policy: "ask", screen, ask: Effect.succeed(answer) }))
        expect(decision._tag).toBe(expected)
        if (decision._tag === "Deny") expect(decision.reason).toBe(DENIED_REASON)
        expect(out.stderr).toContain("? exec wants to run:\n    rm -rf build\n")
        expect(out.stderr).toContain("? allow exec? [y/a/N] ")
      }
    }))
})

describe("terminal output", () => {
  it("colours only on a TTY, and never with NO_COLOR", () => {
    expect(styleFor(true, {}).red("x")).toBe("\u001b[31mx\u001b[39m")
    expect(styleFor(false, {}).red("x")).toBe("x")
    expect(styleFor(true, { NO_COLOR: "1" }).red("x")).toBe("x")
    expect(styleFor(true, { NO_COLOR: "" }).red("x")).toBe("\u001b[31mx\u001b[39m")
  })

  it.effect("a stderr line first ends the partial text line on stdout", () =>
    Effect.gen(function*() {
      const { out, screen } = fakeScreen(false)
      yield* screen.text("Let me")
      yield* screen.text(" look.")
      yield* screen.line("tool")
      yield* screen.text("Done.\n")
      yield* screen.line("end")
      expect(out.stdout).toBe("Let me look.\nDone.\n")
      expect(out.stderr).toBe("tool\nend\n")
    }))

  it.effect("a log line goes through the screen: it starts on a line of its own after partial text", () =>
    Effect.gen(function*() {
      const { out, screen } = fakeScreen(false)
      yield* screen.text("Half a sen")
      yield* Effect.logWarning("file hook skipped: x").pipe(Effect.provide(CliLogger.layer(screen)))
      expect(out.stdout).toBe("Half a sen\n")
      expect(out.stderr).toBe("agent-loop: warn: file hook skipped: x\n")
    }))

  it.effect("a log line with a cause says what the cause is (as \"Shard lock storage is unhealthy\" logs it)", () =>
    Effect.gen(function*() {
      const { out, screen } = fakeScreen(false)
      const timeout = Cause.fail(new Cause.TimeoutError("Operation timed out after '5s'"))
      yield* Effect.logError("Shard lock storage is unhealthy", timeout).pipe(Effect.provide(CliLogger.layer(screen)))
      expect(out.stderr.split("\n")[0]).toBe("agent-loop: error: Shard lock storage is unhealthy (cause: TimeoutError: Operation timed out after '5s')")
    }))

  it("formats arguments, durations and usage for one line", () => {
    expect(Format.args("{ \"path\": \"a\",\n \"n\": 1 }")).toBe("{\"path\":\"a\",\"n\":1}")
    expect(Format.args(JSON.stringify({ text: "x".repeat(200) }), 20)).toBe("{\"text\":\"xxxxxxxxxx…")
    expect(Format.args("not json\nat all")).toBe("not json at all")
    expect(Format.duration(850)).toBe("850 ms")
    expect(Format.duration(1440)).toBe("1.4 s")
    expect(Format.duration(125_000)).toBe("2 min 5 s")
    expect(Format.usage({ inputTokens: 1234, outputTokens: 5, costUsd: 0.00123 })).toBe("1,234 in · 5 out tokens · $0.0012")
  })
})

describe("data directory", () => {
  it("is $AGENT_LOOP_DATA_DIR, else under an absolute $XDG_DATA_HOME, else under ~/.local/share", () => {
    const fallback = nodePath.join(os.homedir(), ".local", "share", "agent-loop")
    expect(dataDir({ AGENT_LOOP_DATA_DIR: "/own", XDG_DATA_HOME: "/xdg" })).toBe("/own")
    expect(dataDir({ XDG_DATA_HOME: "/xdg" })).toBe("/xdg/agent-loop")
    expect(dataDir({ XDG_DATA_HOME: "relative/xdg" })).toBe(fallback)
    expect(dataDir({ AGENT_LOOP_DATA_DIR: "" })).toBe(fallback)
  })
})

describe("--tools", () => {
  it.effect("takes a comma-separated list, tolerating spaces and repeats; empty means none", () =>
    Effect.gen(function*() {
      expect(yield* parseTools("read_file, exec,read_file")).toEqual({ tools: ["read_file", "exec"], mcp: [] })
      expect(yield* parseTools("")).toEqual({ tools: [], mcp: [] })
      const bad = yield* Effect.exit(parseTools("read_file,shell"))
      expect(Exit.isFailure(bad) && bad.cause.toString()).toContain("unknown tool \"shell\"")
      const error = yield* Effect.flip(parseTools("shell"))
      expect(error).toBeInstanceOf(CliFailure)
      expect(error.code).toBe(1)
    }))

  it.effect("names MCP tools as server__tool or server__*, apart from the built-ins", () =>
    Effect.gen(function*() {
      expect(yield* parseTools("read_file,fs__read_text_file,kv__*,fs__read_text_file")).toEqual({
        tools: ["read_file"],
        mcp: ["fs__read_text_file", "kv__*"]
      })
      const bad = yield* Effect.flip(parseTools("__x"))
      expect(bad.message).toBe(
        "unknown tool \"__x\" in --tools; built-in tools: read_file, list_dir, grep, glob, write_file, edit_file, exec, todo_write, web_fetch; MCP tools: server__tool or server__*"
      )
    }))
})
