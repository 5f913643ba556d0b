/**
 * `stream-json` that scripts written for Claude Code can read: a first `system`/`init` line, the
 * loop's events, a `result` line per turn, `type` beside `_tag` on every line; and
 * `--input-format stream-json`, user messages as JSON lines on stdin, one turn each, one process.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { MAX_INPUT_LINE_BYTES, userInputs } from "../../src/cli/output/streamJson.ts"
import { isolatedEnv, launcher, root, spawnCli, tempDir } from "../support/cliProcess.ts"
import { start } from "../support/openaiServer.ts"
import { hasTmux, startPane } from "../support/tmux.ts"

const lines = (stdout: string) => stdout.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))

const user = (content: unknown) => JSON.stringify({ type: "user", message: { role: "user", content } })

const workspaceIn = (home: string) => {
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace)
  return workspace
}

/** Runs the CLI with `input` on stdin, to its end. */
const runWithStdin = async (args: ReadonlyArray<string>, env: Record<string, string>, input: string) => {
  const cli = spawnCli(args, { env, stdin: true })
  cli.child.stdin!.end(input)
  const { code } = await cli.exited
  return { code, stdout: cli.stdout(), stderr: cli.stderr() }
}

/** The line Claude Code's scripts read for one reply of model "m" in session "s". */
const assistantLine = (content: ReadonlyArray<unknown>, stop_reason: string, usage: { readonly input_tokens: number; readonly output_tokens: number }) => ({
  type: "assistant",
  _tag: "AssistantMessage",
  message: { type: "message", role: "assistant", model: "m", content, stop_reason, usage },
  parent_tool_use_id: null,
  session_id: "s"
})

const common = (url: string, workspace: string) =>
  ["--base-url", url, "--model", "m", "--workspace", workspace, "--no-settings", "--no-context-files", "--tools", "read_file,list_dir", "--session", "s"]

describe("stream-json output", () => {
  it("starts with an init line, ends with a result line, and every line has type and _tag", async (context) => {
    const server = await start([
      { toolCalls: [{ name: "list_dir", arguments: {}, id: "call_1" }], usage: { prompt: 10, completion: 2 } },
      { text: ["Hel", "lo"], usage: { prompt: 12, completion: 3 } }
    ])
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const workspace = workspaceIn(home)
    const result = await runWithStdin(["run", ...common(server.url, workspace), "--output-format", "stream-json", "hi"], isolatedEnv(home), "")
    expect(result.code, result.stderr).toBe(0)
    const out = lines(result.stdout)
    expect({ ...out[0], tools: [...out[0].tools].sort() }).toEqual({
      type: "system",
      subtype: "init",
      _tag: "Init",
      session_id: "s",
      sessionKey: "s",
      model: "m",
      tools: ["list_dir", "read_file"],
      cwd: workspace
    })
    for (const line of out) {
      expect(typeof line.type).toBe("string")
      expect(typeof line._tag).toBe("string")
    }
    const events = out.slice(1, -1).filter((line) => line.type === "event")
    // Claude Code's message lines: the replies as assistant messages, the tool result as a user message
    expect(out.filter((line) => line.type === "assistant" || line.type === "user")).toEqual([
      assistantLine([{ type: "tool_use", id: "call_1", name: "list_dir", input: {} }], "tool_calls", { input_tokens: 10, output_tokens: 2 }),
      {
        type: "user",
        _tag: "ToolResultMessage",
        message: { role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: expect.any(String), is_error: false }] },
        parent_tool_use_id: null,
        session_id: "s"
      },
      assistantLine([{ type: "text", text: "Hello" }], "stop", { input_tokens: 12, output_tokens: 3 })
    ])
    expect(events[0]._tag).toBe("TurnStart")
    expect(events.at(-1)._tag).toBe("TurnEnd")
    expect(events.filter((e) => e._tag === "LLMDelta" && e.kind === "text").map((e) => e.text).join("")).toBe("Hello")
    const last = out.at(-1)
    expect(last).toMatchObject({
      type: "result",
      _tag: "Result",
      subtype: "success",
      is_error: false,
      status: "completed",
      result: "Hello",
      session_id: "s",
      num_turns: 2,
      usage: { inputTokens: 22, outputTokens: 5, input_tokens: 22, output_tokens: 5 }
    })
    expect(last.duration_ms).toBe(last.durationMs)
    expect(last.duration_ms).toBeGreaterThanOrEqual(0)
    expect(last).toHaveProperty("total_cost_usd", null)
  })
})

describe("stream-json input", () => {
  it("runs one turn per user line on stdin, in one session and one process", async (context) => {
    const server = await start([{ text: "one" }, { text: "two" }])
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const stdin = `${user("first question")}\n\n${user([{ type: "text", text: "second " }, { type: "text", text: "question" }])}\n`
    const result = await runWithStdin(
      ["run", ...common(server.url, workspaceIn(home)), "--input-format", "stream-json", "--output-format", "stream-json"],
      isolatedEnv(home),
      stdin
    )
    expect(result.code, result.stderr).toBe(0)
    const out = lines(result.stdout)
    expect(out.filter((line) => line.type === "system")).toHaveLength(1)
    expect(out.filter((line) => line.type === "result").map((line) => line.result)).toEqual(["one", "two"])
    expect(out.at(-1).type).toBe("result")
    // the second turn saw the first: one conversation
    const second = server.requests[1]!.body.messages.map((m: { role: string; content: unknown }) => [m.role, typeof m.content === "string" ? m.content : JSON.stringify(m.content)])
    expect(second.slice(1)).toEqual([
      ["user", "first question"],
      ["assistant", "one"],
      ["user", expect.stringContaining("second ")]
    ])
    expect(second[3][1]).toContain("question")
  })

  it("a line that is not a user message fails naming it, after the turns before it", async (context) => {
    const server = await start([{ text: "one" }])
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const result = await runWithStdin(
      ["run", ...common(server.url, workspaceIn(home)), "--input-format", "stream-json", "--output-format", "stream-json"],
      isolatedEnv(home),
      `${user("first")}\n{"type":"assistant","message":{"role":"assistant","content":"x"}}\n${user("never")}\n`
    )
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("line 2 of stdin is not a user message")
    expect(lines(result.stdout).filter((line) => line.type === "result").map((line) => line.result)).toEqual(["one"])
    expect(server.requests).toHaveLength(1)
  })

  it("needs stream-json output and no prompt argument", async () => {
    const home = tempDir()
    const env = isolatedEnv(home)
    const text = await runWithStdin(["run", "--model", "m", "--input-format", "stream-json"], env, "")
    expect([text.code, text.stderr.trim()]).toEqual([1, "agent-loop: --input-format stream-json needs --output-format stream-json"])
    const prompt = await runWithStdin(["run", "--model", "m", "--input-format", "stream-json", "--output-format", "stream-json", "hi"], env, "")
    expect(prompt.code).toBe(1)
    expect(prompt.stderr).toContain("give no prompt")
  })

  it.effect("reads lines up to the bound, and refuses a longer one by its number", () =>
    Effect.gen(function*() {
      expect(MAX_INPUT_LINE_BYTES).toBe(8 * 1024 * 1024)
      const exact = user("x".repeat(10))
      const bound = Buffer.byteLength(exact)
      // split across chunks, the last line without a newline
      const chunks = [exact.slice(0, 5), `${exact.slice(5)}\n${exact.slice(0, 3)}`, exact.slice(3)]
      const read = yield* Stream.runCollect(userInputs((async function*() {
        yield* chunks
      })(), bound))
      expect(read).toEqual(["x".repeat(10), "x".repeat(10)])
      const tooLong = yield* Effect.flip(Stream.runCollect(userInputs((async function*() {
        yield `${exact}\n${user("x".repeat(11))}\n`
      })(), bound)))
      expect(tooLong.message).toBe(`line 2 of stdin is longer than ${bound} bytes`)
      const notUtf8 = yield* Effect.flip(Stream.runCollect(userInputs((async function*() {
        yield Buffer.from([0xff, 0xfe, 0x0a])
      })(), bound)))
      expect(notUtf8.message).toBe("line 1 of stdin is not UTF-8 text")
    }))

  it.skipIf(!hasTmux)(hasTmux ? "on a terminal, every typed line is a message of the stream, none taken as steering" : "on a terminal: SKIPPED, tmux is not installed", async (context) => {
    const server = await start([{ text: "one" }, { text: "two" }])
    const home = tempDir()
    const pane = startPane(
      [process.execPath, launcher, "run", ...common(server.url, workspaceIn(home)), "--input-format", "stream-json", "--output-format", "stream-json"],
      isolatedEnv(home),
      root
    )
    context.onTestFinished(async () => {
      pane.kill()
      await server.close()
    })
    pane.line(user("first"))
    await pane.waitFor(/"type":"result".*"result":"one"/)
    pane.line(user("second"))
    await pane.waitFor(/"type":"result".*"result":"two"/)
    pane.keys("C-d")
    expect(await pane.exitStatus(30_000)).toBe(0)
    expect(server.requests.map((r) => r.body.messages.filter((m: { role: string }) => m.role === "user").length)).toEqual([1, 2])
  })
})
