/**
 * `agent-loop run` for scripts, end to end (the real launcher against a scripted
 * OpenAI-compatible server on 127.0.0.1): the prompt from stdin, JSON output, events on stdout,
 * models and cost, a missing key, `exec` by default, retried and truncated answers, and unknown
 * token counts.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { AgentEvent } from "effect-agent-loop"
import { TRUNCATION_PROMPT } from "../../src/programs/internal/callModel.ts"
import { cliSetup, isolatedEnv, launcher, root, runCli, spawnCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import type { Script } from "../support/openaiServer.ts"

const setup = (context: TestContext, script: Script, model = "fake-model") => cliSetup(context, script, { model, flags: ["--ephemeral"] })

/** Runs the CLI with `input` piped to its stdin. */
const runWithStdin = (args: ReadonlyArray<string>, env: Record<string, string>, input: string | Uint8Array) => {
  const cli = spawnCli(args, { env, stdin: true })
  cli.child.stdin!.end(input)
  return cli.exited.then(({ code }) => ({ code, stdout: cli.stdout(), stderr: cli.stderr() }))
}

const decodeEvent = Schema.decodeUnknownSync(AgentEvent.AgentEvent)
const lastLine = (text: string) => text.trimEnd().split("\n").at(-1)
const userMessage = (body: any) => body.messages.at(-1)

describe.concurrent("the prompt from stdin", () => {
  it("echo question | run, and run -, send stdin as the prompt; an argument gets piped input attached", async (context) => {
    const { server, flags, env } = await setup(context, [{ text: "ok" }])
    expect((await runWithStdin(["run", ...flags], env, "What is 2 + 2?\n")).code).toBe(0)
    expect((await runWithStdin(["run", ...flags, "-"], env, "From a dash\n")).code).toBe(0)
    const attached = await runWithStdin(["run", ...flags, "Review this diff"], env, "--- a/x\n+++ b/x\n")
    expect(attached.code).toBe(0)
    expect(attached.stdout).toBe("ok\n")
    expect(server.requests.map((r) => userMessage(r.body).content)).toEqual([
      "What is 2 + 2?\n",
      "From a dash\n",
      "Review this diff\n\n<stdin>\n--- a/x\n+++ b/x\n</stdin>"
    ])
  })

  it("an empty prompt, stdin that is not text, and no prompt at all fail with one line and send nothing", async (context) => {
    const { server, flags, env } = await setup(context, [{ text: "unused" }])
    const empty = await runWithStdin(["run", ...flags], env, "  \n")
    expect([empty.code, empty.stderr]).toEqual([1, "agent-loop: empty prompt: pass it as an argument, or on stdin\n"])
    const binary = await runWithStdin(["run", ...flags, "-"], env, new Uint8Array([0x61, 0xff, 0x00]))
    expect([binary.code, binary.stderr]).toEqual([1, "agent-loop: stdin is not UTF-8 text\n"])
    const nothing = await runCli(["run", ...flags], { env })
    expect([nothing.code, nothing.stderr]).toEqual([1, "agent-loop: empty prompt: pass it as an argument, or on stdin\n"])
    expect(server.requests).toHaveLength(0)
  })
})

describe.concurrent("machine-readable output", () => {
  it("--output-format json prints one object at the end: status, result, usage, cost, session key, error", async (context) => {
    const { flags, env } = await setup(context, [
      { text: ["Let me ", "look."], toolCalls: [{ name: "list_dir", arguments: {} }], usage: { prompt: 1000, completion: 10 } },
      { text: "It is empty.", usage: { prompt: 2000, completion: 20 } }
    ], "gpt-4.1-mini")
    const result = await runCli(["run", ...flags, "--session", "s1", "--output-format", "json", "what is here?"], { env })
    expect(result.code).toBe(0)
    const lines = result.stdout.trimEnd().split("\n")
    expect(lines).toHaveLength(1)
    const json = JSON.parse(lines[0]!)
    expect(json).toMatchObject({
      type: "result",
      status: "completed",
      result: "It is empty.",
      sessionKey: "s1",
      model: "gpt-4.1-mini",
      iterations: 2,
      usage: { inputTokens: 3000, outputTokens: 30 },
      error: null
    })
    // 3000 × $0.40/M + 30 × $1.60/M
    expect(json.costUsd).toBeCloseTo(0.001248, 9)
    expect(json.durationMs).toBeGreaterThanOrEqual(0)
    expect(result.stderr).toMatch(/⚙ list_dir/)
  })

  it("--output-format json of a failed turn carries the error; tokens a server did not report are null", async (context) => {
    const failing = await setup(context, [{ status: 400, error: "model does not exist" }])
    const failed = await runCli(["run", ...failing.flags, "--output-format", "json", "hi"], { env: failing.env })
    expect(failed.code).toBe(1)
    expect(JSON.parse(failed.stdout)).toMatchObject({ status: "failed", result: "", usage: null, costUsd: null, error: expect.stringContaining("model does not exist") })
    expect(lastLine(failed.stderr)).toMatch(/^agent-loop: ProviderRejected: .*model does not exist/)
    const silent = await setup(context, [{ text: "Hi.", usage: null }], "gpt-4.1-mini")
    const unknown = await runCli(["run", ...silent.flags, "--output-format", "json", "hi"], { env: silent.env })
    expect(JSON.parse(unknown.stdout)).toMatchObject({ status: "completed", result: "Hi.", usage: null, costUsd: null })
  })

  it("--output-format stream-json prints every event as a JSON line between the init and result lines, and nothing else on stdout", async (context) => {
    const { flags, env } = await setup(context, [{ toolCalls: [{ name: "list_dir", arguments: {} }] }, { text: ["Done ", "here."] }])
    const result = await runCli(["run", ...flags, "--output-format", "stream-json", "go"], { env })
    expect(result.code).toBe(0)
    const lines = result.stdout.trimEnd().split("\n").map((line) => JSON.parse(line))
    expect([lines[0].type, lines.at(-1).type]).toEqual(["system", "result"])
    // Claude Code's message lines, each right after the event it stands for
    const kinds = lines.slice(1, -1).map((line) => line.type === "event" ? line._tag : line.type)
    expect(kinds.filter((kind) => ["LLMResponse", "assistant", "ToolExecEnd", "user"].includes(kind))).toEqual(["LLMResponse", "assistant", "ToolExecEnd", "user", "LLMResponse", "assistant"])
    kinds.forEach((kind, i) => kind === "assistant" || kind === "user" ? expect(kinds[i - 1]).toBe(kind === "assistant" ? "LLMResponse" : "ToolExecEnd") : undefined)
    const events = lines.filter((line) => line.type === "event").map((line) => decodeEvent(line))
    expect(events[0]).toMatchObject({ _tag: "TurnStart", input: "go" })
    expect(events.at(-1)).toMatchObject({ _tag: "TurnEnd", status: "completed" })
    expect(events.filter((e) => e._tag === "LLMDelta" && e.kind === "text").map((e) => e._tag === "LLMDelta" && e.text)).toEqual(["Done ", "here."])
    expect(result.stderr).toMatch(/── completed · 2 iterations/)
  })

  it("--events /dev/stdout writes whole event lines, with stdout a pipe or a file, and no answer text mixed in", async (context) => {
    const { flags, env, home } = await setup(context, [{ text: ["Partial ", "answer."] }])
    const piped = await runCli(["run", ...flags, "--events", "/dev/stdout", "go"], { env })
    expect(piped.code).toBe(0)
    const fromPipe = piped.stdout.trimEnd().split("\n").map((line) => decodeEvent(JSON.parse(line)))
    expect(fromPipe.at(-1)).toMatchObject({ _tag: "TurnEnd" })
    // stdout redirected to a file: a second descriptor on it would write over the text
    const file = path.join(home, "out.jsonl")
    const fd = fs.openSync(file, "w")
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, [launcher, "run", ...flags, "--events", "/dev/stdout", "go"], { cwd: root, env, stdio: ["ignore", fd, "ignore"] })
      child.on("close", resolve)
    })
    fs.closeSync(fd)
    expect(code).toBe(0)
    const fromFile = fs.readFileSync(file, "utf8").trimEnd().split("\n").map((line) => decodeEvent(JSON.parse(line)))
    expect(fromFile.map((e) => e._tag)).toEqual(fromPipe.map((e) => e._tag))
  })
})

describe.concurrent("models, prices and keys", () => {
  it("agent-loop models lists the registry with the date of its prices", async () => {
    const result = await runCli(["models"], { env: isolatedEnv(tempDir()) })
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^model\s+provider\s+context/)
    expect(result.stdout).toMatch(/^gpt-4\.1-mini\s+openai\s+1,047,576\s+32,768\s+\$0\.4\s+\$1\.6\s+\$0\.1\s+-\s+yes\s+no$/m)
    expect(result.stdout).toMatch(/^claude-sonnet-4-5\s+anthropic\s+200k\s+64k\s+\$3\s+\$15\s+\$0\.3\s+\$3\.75\s+yes\s+yes$/m)
    expect(result.stderr).toMatch(/as of \d{4}-\d{2}-\d{2}/)
  })

  it("a priced model shows its cost on the final line; an unknown one works, with one note and no cost", async (context) => {
    const priced = await setup(context, [{ text: "ok", usage: { prompt: 1234, completion: 56 } }], "gpt-4.1-mini")
    const known = await runCli(["run", ...priced.flags, "hi"], { env: priced.env })
    expect(known.code).toBe(0)
    // 1234 × $0.40/M + 56 × $1.60/M = $0.000583
    expect(lastLine(known.stderr)).toMatch(/^── completed · 1 iteration · 1,234 in · 56 out tokens · \$0\.0006 · /)
    expect(known.stderr).not.toContain("note:")
    const other = await setup(context, [{ text: "one" }, { text: "two" }], "my-local-model")
    const cli = spawnCli(["chat", ...other.flags], { env: other.env, stdin: true })
    cli.child.stdin!.end("first\nsecond\n")
    expect((await cli.exited).code).toBe(0)
    expect(cli.stderr().match(/agent-loop: note: model "my-local-model" is not in the built-in registry/g)).toHaveLength(1)
    expect(cli.stderr()).not.toContain("$")
    expect(cli.stderr().match(/── completed · 1 iteration · \d+ in · 20 out tokens · /g)).toHaveLength(2)
  })

  it("the vendor's own URL without its key fails with one line naming the variable; nothing starts", async () => {
    const env = isolatedEnv(tempDir())
    const openai = await runCli(["run", "--model", "gpt-4.1-mini", "--ephemeral", "hi"], { env })
    expect([openai.code, openai.stderr]).toEqual([1, "agent-loop: OPENAI_API_KEY is not set: export it, or pass --base-url for a server that needs no key\n"])
    const anthropic = await runCli(["run", "--provider", "anthropic", "--model", "claude-haiku-4-5", "--ephemeral", "hi"], { env })
    expect([anthropic.code, anthropic.stderr]).toEqual([1, "agent-loop: ANTHROPIC_API_KEY is not set: export it, or pass --base-url for a server that needs no key\n"])
  })

  it("exec is a default tool: without a terminal or --yes it is denied with the reason; --tools still narrows", async (context) => {
    const { server, flags, env } = await setup(context, [{ toolCalls: [{ name: "exec", arguments: { command: "echo ran" } }] }, { text: "ok" }])
    const result = await runCli(["run", ...flags, "run it"], { env })
    expect(result.code).toBe(0)
    expect(server.requests[0]!.body.tools.map((t: any) => t.function.name)).toContain("exec")
    expect(result.stderr).toContain("agent-loop: denied exec {\"command\":\"echo ran\"}: it needs approval and there is no terminal to ask")
    expect(userMessage(server.requests[1]!.body).content).toContain("no terminal to ask")
    const narrowed = await runCli(["run", ...flags, "--tools", "read_file", "hi"], { env })
    expect(narrowed.code).toBe(0)
    expect(server.requests[2]!.body.tools.map((t: any) => t.function.name)).toEqual(["read_file"])
  })
})

describe.concurrent("retries and usage on the final line", () => {
  it("a truncated answer is asked for again: stdout holds only the final answer, stderr marks the retry", async (context) => {
    const { server, flags, env } = await setup(context, [
      { text: ["A very long answer that got c"], finish: "length" },
      { text: "Short answer." }
    ])
    const result = await runCli(["run", ...flags, "explain"], { env })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe("Short answer.\n")
    expect(result.stderr).toMatch(/↻ retry 1 Truncated: the answer hit the output token limit/)
    expect(userMessage(server.requests[1]!.body).content).toBe(TRUNCATION_PROMPT)
  })

  it("a stream cut mid-answer is retried: stdout holds only the final answer", async (context) => {
    const { server, flags, env } = await setup(context, [{ text: ["Half an ans"], cut: true }, { text: "Whole answer." }])
    const result = await runCli(["run", ...flags, "go"], { env })
    expect(result.code).toBe(0)
    expect(server.requests).toHaveLength(2)
    expect(result.stdout).toBe("Whole answer.\n")
    expect(result.stderr).toMatch(/↻ retry 1 in [\d.]+ m?s ProviderUnavailable/)
  })

  it("a server that reports no usage gives 'tokens unknown', not 0 in · 0 out", async (context) => {
    const { flags, env } = await setup(context, [{ text: "Hi.", usage: null }])
    const result = await runCli(["run", ...flags, "hi"], { env })
    expect(result.code).toBe(0)
    expect(lastLine(result.stderr)).toMatch(/^── completed · 1 iteration · tokens unknown · /)
    expect(result.stderr).not.toContain("0 in · 0 out")
  })
})
