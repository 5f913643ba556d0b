/**
 * The `agent-loop` CLI end to end: a real child process (its sources under Node 24) against
 * a scripted OpenAI-compatible server on 127.0.0.1.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { AgentEvent, AgentLoopConfig, BuiltinToolName } from "effect-agent-loop"
import { INTERRUPT_HINT } from "../../src/programs/internal/runTurn.ts"
import { cliSetup, isolatedEnv, root, runCli, spawnCli, tempDir, type TestContext, DURATION } from "../support/cliProcess.ts"
import { gate, type Script } from "../support/openaiServer.ts"

/** A server, a home with a workspace holding `notes.md`, and the flags that point the CLI at them. */
const setup = (context: TestContext, script: Script) => cliSetup(context, script, { notes: "# Notes\nThe answer is 42.\n" })

const decodeEvent = Schema.decodeUnknownSync(AgentEvent.AgentEvent)
const readEvents = (file: string) => fs.readFileSync(file, "utf8").trimEnd().split("\n").map((line) => decodeEvent(JSON.parse(line)))

const lastLine = (text: string) => text.trimEnd().split("\n").at(-1)

describe.concurrent("agent-loop run", () => {
  it("streams the answer to stdout, shows each tool call with its duration and ends with tokens and time", async (context) => {
    const { server, flags, env } = await setup(context, [
      { text: ["Let me ", "look."], toolCalls: [{ name: "list_dir", arguments: { path: "." } }] },
      { toolCalls: [{ name: "read_file", arguments: { path: "notes.md" } }] },
      { text: ["The answer ", "is 42."], usage: { prompt: 1234, completion: 56 } }
    ])
    const result = await runCli(["run", ...flags, "What is the answer?"], { env })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe("Let me look.\nThe answer is 42.\n")
    expect(result.stderr).toMatch(new RegExp(String.raw`⚙ list_dir \{"path":"\."\}\n\s+✓ list_dir ${DURATION}`))
    expect(result.stderr).toMatch(new RegExp(String.raw`⚙ read_file \{"path":"notes\.md"\}\n\s+✓ read_file ${DURATION}`))
    expect(lastLine(result.stderr)).toMatch(new RegExp(String.raw`^── completed · 3 iterations · 1,444 in · 96 out tokens · ${DURATION}$`))
    expect(server.requests).toHaveLength(3)
    expect(server.requests[0]!.body.tools.map((t: any) => t.function.name)).toEqual(["read_file", "list_dir", "grep", "glob", "write_file", "edit_file", "exec", "exec_output", "exec_kill", "todo_write", "web_fetch"])
    expect(server.requests[2]!.body.messages.at(-1).content).toContain("The answer is 42.")
  })

  it("--events writes every event as a JSON line, TurnStart first and TurnEnd last", async (context) => {
    const { flags, env, home } = await setup(context, [
      { toolCalls: [{ name: "list_dir", arguments: {} }] },
      { text: "done" }
    ])
    const file = path.join(home, "events.jsonl")
    const result = await runCli(["run", ...flags, "--events", file, "go"], { env })
    expect(result.code).toBe(0)
    const events = readEvents(file)
    expect(events[0]).toMatchObject({ _tag: "TurnStart", input: "go", depth: 0 })
    expect(events.at(-1)).toMatchObject({ _tag: "TurnEnd", status: "completed", iterations: 2 })
    expect(events.filter((e) => e._tag !== "LLMDelta").map((e) => e._tag)).toEqual([
      "TurnStart",
      "LLMRequest",
      "LLMResponse",
      "ToolExecStart",
      "ToolExecEnd",
      "LLMRequest",
      "LLMResponse",
      "TurnEnd"
    ])
    expect(events.filter((e) => e._tag === "LLMDelta" && e.kind === "text").map((e) => e._tag === "LLMDelta" && e.text)).toEqual(["done"])
    expect(new Set(events.map((e) => e.turnId)).size).toBe(1)
  })

  it.skipIf(!fs.existsSync("/dev/full"))("an events file that cannot be written is warned about once, and the turn goes on", async (context) => {
    const { flags, env } = await setup(context, [
      { text: ["Let me ", "look."], toolCalls: [{ name: "list_dir", arguments: {} }] },
      { text: ["Done ", "looking."] }
    ])
    const result = await runCli(["run", ...flags, "--events", "/dev/full", "go"], { env })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe("Let me look.\nDone looking.\n")
    const warnings = result.stderr.split("\n").filter((line) => line.includes("events file"))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/^agent-loop: warn: events file \/dev\/full: .*further failures are not reported/)
  })

  it("a 401 exits 1 with a one-line reason, no stack trace, and never prints the key", async (context) => {
    const secret = "sk-test-do-not-print-1234567890"
    const { server, flags, env } = await setup(context, [{ status: 401, error: `Incorrect API key provided: ${secret}` }])
    const result = await runCli(["run", ...flags, "--api-key-env", "OPENAI_API_KEY", "hi"], { env: { ...env, OPENAI_API_KEY: secret } })
    expect(result.code).toBe(1)
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${secret}`)
    expect(lastLine(result.stderr)).toMatch(/^agent-loop: ProviderRejected: .*Incorrect API key provided/)
    expect(result.stderr).not.toMatch(/\n\s+at /)
    expect(result.stdout + result.stderr).not.toContain(secret)
  })

  it("OPENAI_API_KEY is not sent to a --base-url elsewhere than OpenAI, and a note names the flag that sends it", async (context) => {
    const secret = "sk-test-stays-home-1234567890"
    const { server, flags, env } = await setup(context, [{ status: 401, error: "Missing bearer token" }])
    const result = await runCli(["run", ...flags, "hi"], { env: { ...env, OPENAI_API_KEY: secret } })
    expect(result.code).toBe(1)
    expect(server.requests[0]!.headers.authorization).toBeUndefined()
    expect(result.stderr).toContain(
      `agent-loop: note: OPENAI_API_KEY is set but not sent to ${new URL(server.url).origin}, which is not the provider's own host: --api-key-env OPENAI_API_KEY sends it\n`
    )
    expect(result.stdout + result.stderr).not.toContain(secret)
  })

  it("a 400 exits 1 with the server's message on one line", async (context) => {
    const { flags, env } = await setup(context, [{ status: 400, error: "model 'fake-model' does not support tools" }])
    const result = await runCli(["run", ...flags, "hi"], { env })
    expect(result.code).toBe(1)
    expect(lastLine(result.stderr)).toMatch(/^agent-loop: ProviderRejected: .*does not support tools/)
    // one failure line (the note about the model not being in the registry is not a failure)
    expect(result.stderr.split("\n").filter((line) => line.startsWith("agent-loop:") && !line.startsWith("agent-loop: note:"))).toHaveLength(1)
  })

  it("Ctrl-C interrupts gracefully: remaining tools are skipped, the model sums up without tools, exit 130", async (context) => {
    const held = gate()
    const { server, flags, env, home } = await setup(context, [
      { text: ["Working on it"], hold: held.promise, toolCalls: [{ name: "list_dir", arguments: {} }] },
      { text: "Summary: nothing done." }
    ])
    const file = path.join(home, "events.jsonl")
    const cli = spawnCli(["run", ...flags, "--events", file, "go"], { env })
    await server.received(1)
    cli.child.kill("SIGINT")
    await cli.waitFor("interrupting")
    held.open()
    const { code } = await cli.exited
    expect(code).toBe(130)
    expect(cli.stdout()).toContain("Summary: nothing done.")
    expect(cli.stderr()).toContain("⊘ list_dir skipped")
    expect(server.requests[1]!.body.tools).toBeUndefined()
    expect(server.requests[1]!.body.messages.at(-1).content).toContain(INTERRUPT_HINT)
    expect(readEvents(file).at(-1)).toMatchObject({ _tag: "TurnEnd", status: "interrupted" })
  })

  it("a second Ctrl-C aborts: exit 130, TurnEnd aborted, nothing of the conversation saved, the outcome recorded", async (context) => {
    const never = gate()
    const { server, flags, env, home } = await setup(context, [{ text: ["Thinking"], hold: never.promise }])
    const file = path.join(home, "events.jsonl")
    const cli = spawnCli(["run", ...flags, "--events", file, "--session", "s1", "go"], { env })
    await server.received(1)
    cli.child.kill("SIGINT")
    await cli.waitFor("interrupting")
    cli.child.kill("SIGINT")
    const { code } = await cli.exited
    expect(code).toBe(130)
    expect(cli.stderr()).toContain("⏹ aborting")
    expect(readEvents(file).at(-1)).toMatchObject({ _tag: "TurnEnd", status: "aborted" })
    const shown = await runCli(["sessions", "show", "s1"], { env })
    // the conversation holds nothing of the turn; the log keeps its outcome record only
    expect([shown.code, shown.stdout]).toEqual([0, ""])
    const all = await runCli(["sessions", "show", "s1", "--all"], { env })
    expect(all.stdout).toMatch(/^── turn \S+ aborted ──$/m)
    expect(all.stdout.split("\n").filter((line) => line !== "" && !line.startsWith("── "))).toEqual([])
  })

  it("without a terminal and without --yes, a call that needs approval is denied and stderr says why", async (context) => {
    const { server, flags, env } = await setup(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "echo ran" } }] },
      { text: "ok" }
    ])
    const result = await runCli(["run", ...flags, "--tools", "exec", "run it"], { env })
    expect(result.code).toBe(0)
    expect(result.stderr).toContain(
      "agent-loop: denied exec {\"command\":\"echo ran\"}: it needs approval and there is no terminal to ask (pass --yes to approve)"
    )
    const toolResult = server.requests[1]!.body.messages.at(-1)
    expect(toolResult.role).toBe("tool")
    expect(toolResult.content).toContain("no terminal to ask")
    expect(toolResult.content).not.toContain("ran\n")
  })

  it("with --yes, a call that needs approval runs", async (context) => {
    const { server, flags, env } = await setup(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "echo ran" } }] },
      { text: "ok" }
    ])
    const result = await runCli(["run", ...flags, "--tools", "exec", "--yes", "run it"], { env })
    expect(result.code).toBe(0)
    expect(result.stderr).toMatch(new RegExp(String.raw`⚙ exec \{"command":"echo ran"\}\n\s+✓ exec ${DURATION}`))
    expect(server.requests[1]!.body.messages.at(-1).content).toContain("ran")
  })

  it("sessions persist: list marks the last one, show prints it, --continue sends its history", async (context) => {
    const { server, flags, env, workspace } = await setup(context, [{ text: "First answer." }, { text: "Second answer." }])
    expect((await runCli(["run", ...flags, "--session", "work", "first question"], { env })).code).toBe(0)
    const listed = await runCli(["sessions", "list"], { env, cwd: workspace })
    expect(listed.stdout).toMatch(/^\* work  \d{4}-\d\d-\d\d \d\d:\d\d  2 messages  first question\n$/)
    const shown = await runCli(["sessions", "show", "work"], { env })
    expect(shown.stdout).toBe("user: first question\nassistant: First answer.\n")
    expect((await runCli(["run", ...flags, "--continue", "second question"], { env })).code).toBe(0)
    expect(server.requests[1]!.body.messages.map((m: any) => m.content)).toEqual([
      expect.any(String),
      "first question",
      "First answer.",
      "second question"
    ])
  })

  it("--record writes a cassette that --replay answers from with no server", async (context) => {
    const { flags, env, home, workspace } = await setup(context, [
      { toolCalls: [{ name: "read_file", arguments: { path: "notes.md" } }] },
      { text: ["It says ", "42."] }
    ])
    const cassette = path.join(home, "cassette.jsonl")
    const recorded = await runCli(["run", ...flags, "--record", cassette, "--ephemeral", "read it"], { env })
    expect(recorded.code).toBe(0)
    const replayed = await runCli(["run", "--replay", cassette, "--workspace", workspace, "--ephemeral", "read it"], { env })
    expect(replayed.code).toBe(0)
    expect(replayed.stdout).toBe("It says 42.\n")
    const mismatch = await runCli(["run", "--replay", cassette, "--workspace", workspace, "--ephemeral", "something else"], { env })
    expect(mismatch.code).toBe(1)
    expect(lastLine(mismatch.stderr)).toMatch(/^agent-loop: ProviderRejected: ReplayMismatch: call #1 .* differs in messages/)
  })

  it("project file hooks are loaded: a pre-tool-call hook that exits 2 denies the call", async (context) => {
    const { server, flags, env, workspace } = await setup(context, [
      { toolCalls: [{ name: "read_file", arguments: { path: "notes.md" } }] },
      { text: "ok" }
    ])
    const hookDir = path.join(workspace, ".agents", "hooks", "no-notes")
    fs.mkdirSync(path.join(hookDir, "scripts"), { recursive: true })
    fs.writeFileSync(
      path.join(hookDir, "HOOK.md"),
      "---\nname: no-notes\ndescription: keeps notes private\ntrigger: pre-tool-call\nmatcher:\n  tool: read_file\n---\n"
    )
    fs.writeFileSync(path.join(hookDir, "scripts", "run.sh"), "#!/bin/sh\necho 'notes are private' >&2\nexit 2\n", { mode: 0o755 })
    expect((await runCli(["trust", workspace], { env })).code).toBe(0)
    const broken = path.join(workspace, ".agents", "hooks", "broken")
    fs.mkdirSync(broken)
    fs.writeFileSync(path.join(broken, "HOOK.md"), "---\nname: broken\ndescription: no trigger\n---\n")
    const listed = await runCli(["hooks", "list", "--workspace", workspace], { env })
    expect(listed.code).toBe(0)
    expect(listed.stdout).toMatch(/^no-notes {2}pre-tool-call \(tool ~ read_file\) {2}priority 100 {2}project: .*HOOK\.md\n$/)
    expect(listed.stderr).toMatch(/^skipped .*broken\/HOOK\.md: trigger: /m)
    const result = await runCli(["run", ...flags, "go"], { env })
    expect(result.code).toBe(0)
    expect(result.stderr).toMatch(/^agent-loop: warn: file hook skipped: .*broken\/HOOK\.md: trigger: /m)
    expect(server.requests[1]!.body.messages.at(-1).content).toContain("notes are private")
  })

  it("--mcp-config adds the tools of MCP servers, and the model can call them", async (context) => {
    const { server, flags, env, home } = await setup(context, [
      { toolCalls: [{ name: "lookup", arguments: { key: "a" } }] },
      { text: "It is alpha." }
    ])
    const config = path.join(home, "mcp.json")
    fs.writeFileSync(config, JSON.stringify({ mcpServers: { kv: { command: process.execPath, args: [path.join(root, "test", "support", "mcpServer.mjs")] } } }))
    const result = await runCli(["run", ...flags, "--tools", "read_file,kv__*", "--mcp-config", config, "look up a"], { env })
    expect(result.code).toBe(0)
    expect(server.requests[0]!.body.tools.map((t: any) => t.function.name)).toEqual(["read_file", "lookup", "put"])
    expect(result.stderr).toMatch(new RegExp(String.raw`⚙ lookup \{"key":"a"\}\n\s+✓ lookup ${DURATION}`))
    expect(server.requests[1]!.body.messages.at(-1)).toMatchObject({ role: "tool", content: "a=alpha" })
    const broken = await runCli(["run", ...flags, "--mcp-config", path.join(home, "missing.json"), "hi"], { env })
    expect(broken.code).toBe(1)
    expect(lastLine(broken.stderr)).toMatch(/^agent-loop: ConfigError: Cannot read MCP config .*missing\.json/)
  })

  it("bad flags fail before anything starts, with one line", async (context) => {
    const { flags, env } = await setup(context, [{ text: "unused" }])
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      [
        ["--tools", "read_file,nope"],
        "agent-loop: unknown tool \"nope\" in --tools; built-in tools: read_file, list_dir, grep, glob, write_file, edit_file, exec, todo_write, web_fetch; MCP tools: server__tool or server__*"
      ],
      [["--replay", "x.jsonl", "--record", "y.jsonl"], "agent-loop: --record and --replay cannot be used together"],
      [["--continue"], "agent-loop: no session to continue in this workspace yet: start one without --continue"],
      [["--provider", "replay"], "agent-loop: --provider replay needs a cassette: --replay FILE"]
    ]
    for (const [extra, message] of cases) {
      const result = await runCli(["run", ...flags, ...extra, "hi"], { env })
      expect(result.code).toBe(1)
      expect(result.stderr).toBe(`${message}\n`)
    }
    const noModel = await runCli(["run", "--base-url", "http://127.0.0.1:9/v1", "hi"], { env })
    expect(noModel.stderr).toBe("agent-loop: no model: pass --model NAME, set AGENT_LOOP_MODEL, or add \"model\" to a settings file\n")
  })

  it("--help describes every command", async () => {
    const env = isolatedEnv(tempDir())
    const top = await runCli(["--help"], { env })
    expect(top.code).toBe(0)
    for (const command of ["run", "chat", "hooks", "sessions", "models", "trust", "untrust"]) {
      expect(top.stdout).toMatch(new RegExp(`^  ${command} `, "m"))
    }
    const run = await runCli(["run", "--help"], { env })
    for (const flag of [
      "--provider", "--base-url", "--model", "--session", "--continue", "--max-iterations", "--tools", "--workspace", "--yes",
      "--approval", "--context-files", "--settings", "--output-format", "--events", "--record", "--replay", "--mcp-config", "--mcp-workspace", "--verbose"
    ]) {
      expect(run.stdout).toContain(flag)
    }
    expect(run.stdout).toContain(
      `built-ins (${BuiltinToolName.literals.join(",")}) and MCP tools as server__tool or server__*; ` +
        `default ${BuiltinToolName.literals.join(",")} (or the settings' "tools") and every MCP tool;`
    )
    expect(run.stdout).toContain(`(default ${AgentLoopConfig.makeUnsafe({ model: "m" }).maxIterations})`)
    const show = await runCli(["sessions", "show", "--help"], { env })
    expect(show.code).toBe(0)
    expect(show.stdout).toContain("agent-loop sessions show [flags] <key>")
  })
})

describe.concurrent("agent-loop chat with piped input", () => {
  it("each line is its own turn, in order, even a line that arrives while a turn runs", async (context) => {
    const held = gate()
    const { server, flags, env } = await setup(context, [{ text: ["First ", "answer."], hold: held.promise }, { text: "Second answer." }])
    const cli = spawnCli(["chat", ...flags], { env, stdin: true })
    cli.child.stdin!.write("first\n")
    await server.received(1)
    cli.child.stdin!.end("second\n")
    held.open()
    const { code } = await cli.exited
    expect(code).toBe(0)
    expect(cli.stdout()).toBe("First answer.\nSecond answer.\n")
    expect(cli.stderr().match(/── completed · 1 iteration · /g)).toHaveLength(2)
    expect(server.requests).toHaveLength(2)
    expect(server.requests[0]!.body.messages.at(-1)).toEqual({ role: "user", content: "first" })
    expect(server.requests[1]!.body.messages.slice(-3).map((m: any) => [m.role, m.content])).toEqual([
      ["user", "first"],
      ["assistant", "First answer."],
      ["user", "second"]
    ])
  })

  it("never asks for approval: a call that needs it is denied, and stderr says why", async (context) => {
    const { server, flags, env } = await setup(context, [{ toolCalls: [{ name: "exec", arguments: { command: "echo ran" } }] }, { text: "ok" }])
    const cli = spawnCli(["chat", ...flags, "--tools", "exec"], { env, stdin: true })
    cli.child.stdin!.write("run it\n")
    await cli.waitFor(/denied exec|\? allow/)
    cli.child.stdin!.end()
    const { code } = await cli.exited
    expect(code).toBe(0)
    expect(cli.stderr()).toContain(
      "agent-loop: denied exec {\"command\":\"echo ran\"}: it needs approval and there is no terminal to ask (pass --yes to approve)"
    )
    expect(cli.stderr()).not.toContain("? allow")
    expect(server.requests[1]!.body.messages.at(-1).content).toContain("no terminal to ask")
  })
})
