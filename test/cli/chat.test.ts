/**
 * `agent-loop chat` on a real terminal (tmux): steering typed mid-turn, follow-ups, Ctrl-C
 * (graceful, then hard, then quit at the prompt) and the approval prompt. Skipped, saying so, when
 * tmux is not installed (`apt-get install -y tmux`).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { INTERRUPT_HINT } from "../../src/programs/internal/runTurn.ts"
import { isolatedEnv, launcher, root, tempDir, type TestContext } from "../support/cliProcess.ts"
import { gate, type Script, start } from "../support/openaiServer.ts"
import { hasTmux, startPane } from "../support/tmux.ts"

/** A server and `agent-loop chat` against it in a tmux pane; `settings`, when given, is the user's settings file. */
const chat = async (context: TestContext, script: Script, extra: ReadonlyArray<string> = [], options: { readonly model?: string; readonly settings?: unknown } = {}) => {
  const server = await start(script)
  const home = tempDir()
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace)
  if (options.settings !== undefined) {
    fs.mkdirSync(path.join(home, "config", "agent-loop"), { recursive: true })
    fs.writeFileSync(path.join(home, "config", "agent-loop", "settings.json"), JSON.stringify(options.settings))
  }
  const pane = startPane(
    [process.execPath, launcher, "chat", "--base-url", server.url, "--model", options.model ?? "fake-model", "--workspace", workspace, ...extra],
    isolatedEnv(home),
    root
  )
  context.onTestFinished(async () => {
    pane.kill()
    await server.close()
  })
  await pane.waitFor(/^> $/m)
  return { server, pane }
}

const lastMessage = (body: any) => body.messages.at(-1)

describe.skipIf(!hasTmux).concurrent(hasTmux ? "agent-loop chat (tmux)" : "agent-loop chat: SKIPPED because tmux is not installed (apt-get install -y tmux)", () => {
  it("a line typed mid-turn steers it: the model sees it in its next request; /followup runs after", async (context) => {
    const held = gate()
    const { server, pane } = await chat(context, [
      { text: ["Hello", " there."], hold: held.promise },
      { text: "Brief reply." },
      { text: "Follow-up done." }
    ])
    pane.line("first question")
    await pane.waitFor(/Hello/)
    pane.line("be brief")
    await pane.waitFor(/steering queued/)
    pane.line("/followup and then this")
    await pane.waitFor(/follow-up queued: and then this/)
    held.open()
    await pane.waitFor(/Follow-up done\.\n── completed/)
    expect(server.requests).toHaveLength(3)
    expect(server.requests[1]!.body.messages.slice(-3).map((m: any) => [m.role, m.content])).toEqual([
      ["user", "first question"],
      ["assistant", "Hello there."],
      ["user", "be brief"]
    ])
    expect(lastMessage(server.requests[2]!.body)).toEqual({ role: "user", content: "and then this" })
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })

  it("Ctrl-C interrupts gracefully, a second Ctrl-C aborts, and twice at the prompt quits", async (context) => {
    const first = gate()
    const never = gate()
    const { server, pane } = await chat(context, [
      { text: ["Working"], hold: first.promise, toolCalls: [{ name: "list_dir", arguments: {} }] },
      { text: "Summed up." },
      { text: ["Thinking"], hold: never.promise }
    ])
    pane.line("go")
    await pane.waitFor(/Working/)
    pane.keys("C-c")
    await pane.waitFor(/interrupting/)
    first.open()
    const interrupted = await pane.waitFor(/── interrupted/)
    expect(interrupted).toMatch(/⊘ list_dir skipped/)
    expect(interrupted).toMatch(/Summed up\./)
    expect(server.requests[1]!.body.tools).toBeUndefined()
    expect(lastMessage(server.requests[1]!.body).content).toContain(INTERRUPT_HINT)

    pane.line("again")
    await pane.waitFor(/Thinking/)
    pane.keys("C-c")
    await pane.waitFor(/interrupting[\s\S]*interrupting/)
    pane.keys("C-c")
    await pane.waitFor(/⏹ aborting\n[\s\S]*── aborted/)
    await pane.waitFor(/── aborted[^\n]*\n> $/m)

    pane.keys("C-c")
    await pane.waitFor(/Ctrl-C again to quit/)
    pane.keys("C-c")
    expect(await pane.exitStatus()).toBe(130)
  })

  it("asks before a tool that needs approval: y runs it, n denies it", async (context) => {
    const { server, pane } = await chat(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "echo approved-output" } }] },
      { toolCalls: [{ name: "exec", arguments: { command: "echo second" } }] },
      { text: "All done." }
    ], ["--tools", "exec"])
    pane.line("run things")
    await pane.waitFor(/\? exec wants to run:\n {4}echo approved-output\n[\s\S]*\? allow exec\? \[y\/a\/N\]/)
    pane.line("y")
    await pane.waitFor(/\? exec wants to run:\n {4}echo second\n[\s\S]*\? allow exec\? \[y\/a\/N\]/)
    pane.line("n")
    await pane.waitFor(/All done\.\n── completed/)
    expect(lastMessage(server.requests[1]!.body).content).toContain("approved-output")
    expect(lastMessage(server.requests[2]!.body).content).toContain("The user denied this call.")
    pane.keys("C-d")
    expect(await pane.exitStatus()).toBe(0)
  })

  it("a trailing backslash continues the input on the next line; each turn ends with its tokens and cost", async (context) => {
    // a priced model, so the cost is known: $2 per million input tokens
    const { server, pane } = await chat(context, [
      { text: "First answer.", usage: { prompt: 1_000_000, completion: 0 } },
      { text: "Second answer.", usage: { prompt: 500_000, completion: 0 } }
    ], [], { model: "priced-model", settings: { prices: { "priced-model": { inputPerMillion: 2, outputPerMillion: 8 } } } })
    pane.line("first line \\")
    pane.line("second line")
    await pane.waitFor(/First answer\.\n── completed · 1 iteration · 1,000,000 in · 0 out tokens · \$2\.0000 · /)
    expect(server.requests).toHaveLength(1)
    expect(lastMessage(server.requests[0]!.body)).toEqual({ role: "user", content: "first line \nsecond line" })
    pane.line("again")
    await pane.waitFor(/Second answer\.\n── completed · 1 iteration · 500,000 in · 0 out tokens · \$1\.0000 · /)
    expect(lastMessage(server.requests[1]!.body)).toEqual({ role: "user", content: "again" })
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })
})
