/**
 * `agent-loop chat` on a real terminal (tmux), against a loopback model: plan mode (Shift-Tab,
 * `/plan`, `--permission-mode plan`), the status line under the prompt, the notification when a
 * turn ends while the terminal is not focused, Tab completion and Ctrl-R's history search.
 * Skipped, saying so, when tmux is not installed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, launcher, root, tempDir, type TestContext } from "../support/cliProcess.ts"
import { start } from "../support/openaiServer.ts"
import { hasTmux, startPane } from "../support/tmux.ts"
import { waitUntil } from "../support/waitUntil.ts"

const PLAN = "## Plan\n\n1. Create `hello.txt` with **hi**\n2. Check it"

const names = (request: any): ReadonlyArray<string> => (request.body.tools ?? []).map((tool: any) => tool.function.name)

/**
 * A model that plans when it may only read (calling exit_plan_mode), writes `hello.txt` once it
 * may write, and otherwise says which tools it was offered.
 */
const planner = (request: any) => {
  const offered = names(request)
  const messages = request.body.messages
  const last = messages.at(-1)
  if (last?.role === "tool" && last.tool_call_id === "w1") return { text: "Wrote it." }
  if (offered.includes("write_file")) return { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "hello.txt", content: "hi\n" } }] }
  if (offered.includes("exit_plan_mode")) return { toolCalls: [{ id: `p${messages.length}`, name: "exit_plan_mode", arguments: { plan: PLAN } }] }
  return { text: `offered: ${offered.join(",")}` }
}

const open = async (
  context: TestContext,
  options: {
    readonly args?: ReadonlyArray<string>
    readonly env?: Record<string, string>
    readonly size?: { columns: number; rows: number }
    readonly script?: Parameters<typeof start>[0]
  } = {}
) => {
  const server = await start(options.script ?? planner)
  const home = tempDir()
  const workspace = path.join(home, "ws")
  fs.mkdirSync(path.join(workspace, "src", "parser"), { recursive: true })
  fs.writeFileSync(path.join(workspace, "src", "parser", "tokenizer.ts"), "export {}\n")
  fs.writeFileSync(path.join(workspace, "README.md"), "# ws\n")
  const pane = startPane(
    [process.execPath, launcher, "chat", "--base-url", server.url, "--model", "fake-model", "--workspace", workspace, ...(options.args ?? [])],
    { ...isolatedEnv(home), ...options.env },
    root,
    options.size ?? { columns: 80, rows: 24 }
  )
  context.onTestFinished(async () => {
    pane.kill()
    await server.close()
  })
  return { server, pane, workspace }
}

describe.skipIf(!hasTmux)(hasTmux ? "agent-loop chat: modes, status line, completion (tmux)" : "agent-loop chat modes: SKIPPED because tmux is not installed", () => {
  it("Shift-Tab into plan mode at 80x24 in colour: the model only reads, its plan is shown rendered; n REASON refines, y accepts and the turn writes", async (context) => {
    const { pane, server, workspace } = await open(context)
    await pane.waitFor(/^> \n[^\n]*default mode · context 0% · cost unknown/m)
    pane.keys("BTab")
    await pane.waitFor(/accept edits/)
    pane.keys("BTab")
    await pane.waitFor(/⏸ plan mode · context/)
    // the mode is on the status line, in colour
    expect(pane.captureStyled()).toMatch(/\u001b\[36m(\u001b\[49m)?⏸ plan mode/)
    pane.line("add hello.txt")
    await pane.waitFor(/accept this plan\? \[y\/d\/N\] $/m)
    expect(names(server.requests[0])).toContain("exit_plan_mode")
    expect(names(server.requests[0])).not.toContain("write_file")
    // rendered: the heading without its hashes, bold without asterisks
    const shown = pane.captureStyled()
    expect(shown).toMatch(/1;4m(\u001b\[\d+m)*Plan\n/)
    expect(pane.capture()).not.toContain("## Plan")
    expect(shown).not.toContain("**hi**")
    pane.line("n say where it goes")
    await pane.waitFor(/keep planning[\s\S]*accept this plan\?[\s\S]*accept this plan\? \[y\/d\/N\] $/m)
    const refined = server.requests[1]!.body.messages.at(-1)
    expect(refined.content).toContain("keep planning: say where it goes")
    pane.line("y")
    await pane.waitFor(/Wrote it\.[\s\S]*── completed/)
    expect(fs.readFileSync(path.join(workspace, "hello.txt"), "utf8")).toBe("hi\n")
    // accepted with y: accept edits from now on, shown above the prompt
    await pane.waitFor(/── completed[^\n]*\n> \n[^\n]*⏵⏵ accept edits · context [\d.]+%/)
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })

  it("--permission-mode plan and /plan at 200x50 with NO_COLOR: plain status line; d accepts in default mode", async (context) => {
    const { pane, server } = await open(context, { args: ["--permission-mode", "plan"], env: { NO_COLOR: "1" }, size: { columns: 200, rows: 50 } })
    await pane.waitFor(/^> \nfake-model · ⏸ plan mode · context 0% · cost unknown · shift\+tab: mode$/m)
    expect(pane.captureStyled()).not.toMatch(/\u001b\[3\dm/)
    // /tools says what plan mode offers
    pane.line("/tools")
    const listed = (await pane.waitFor(/^tools: [^\n]*exit_plan_mode$/m)).match(/^tools: [^\n]*$/m)![0]
    expect(listed).toContain("read_file")
    expect(listed).not.toContain("write_file")
    pane.line("go")
    await pane.waitFor(/accept this plan\? \[y\/d\/N\] $/m)
    // NO_COLOR: the plan as written
    expect(pane.capture()).toContain("## Plan")
    pane.line("d")
    await pane.waitFor(/Wrote it\.[\s\S]*── completed[\s\S]*default mode · context/)
    pane.line("/plan what tools now?")
    await pane.waitFor(/plan mode: the model only reads[\s\S]*accept this plan\? \[y\/d\/N\] $/m)
    expect(names(server.requests.at(-1))).not.toContain("write_file")
    pane.line("n")
    await pane.waitFor(/keep planning/)
    pane.keys("Escape")
    await pane.waitFor(/── interrupted/)
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })

  it("the bell rings when an approval waits while the terminal is not focused, and not for a turn that ends while it is", async (context) => {
    const { pane } = await open(context, {
      script: [
        { toolCalls: [{ name: "exec", arguments: { command: "echo hi" } }] },
        { text: "Denied, fine." },
        { toolCalls: [{ name: "exec", arguments: { command: "echo again" } }] },
        { text: "Denied again." }
      ],
      args: ["--tools", "exec,read_file"]
    })
    await pane.waitFor(/^> $/m)
    // focused: a turn's end says nothing
    pane.keys("-l", "\u001b[I")
    pane.line("run it")
    await pane.waitFor(/\? allow exec\? \[y\/a\/N\] $/m)
    expect(pane.rang()).toBe(false)
    pane.line("n")
    await pane.waitFor(/Denied, fine\.\n── completed/)
    expect(pane.rang()).toBe(false)
    // away: a question that waits rings, before it is answered
    pane.keys("-l", "\u001b[O")
    pane.line("run it again")
    await pane.waitFor(/echo again[\s\S]*\? allow exec\? \[y\/a\/N\] $/m)
    await waitUntil("the bell", () => pane.rang())
    pane.line("n")
    await pane.waitFor(/Denied again\.\n── completed/)
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })

  it("a turn that ends while the terminal is not focused rings the bell; Tab completes commands and @paths fuzzily; Ctrl-R finds an earlier input", async (context) => {
    const { pane, server } = await open(context)
    await pane.waitFor(/^> $/m)
    expect(pane.rang()).toBe(false)
    // Tab: a command
    pane.keys("-l", "/co")
    pane.keys("Tab")
    // two commands start so: both listed, the line kept
    await pane.waitFor(/\/compact {2}\/cost\n> \/co$/m)
    pane.keys("s", "Tab")
    await pane.waitFor(/^> \/cost $/m)
    pane.keys("Enter")
    await pane.waitFor(/0 turns/)
    // Tab: a path, by letters in order
    pane.keys("-l", "read @tknz")
    pane.keys("Tab")
    await pane.waitFor(/^> read @src\/parser\/tokenizer\.ts $/m)
    // the terminal says it lost focus (as it does with focus reporting on), then the turn ends
    pane.keys("-l", "\u001b[O")
    pane.keys("Enter")
    await pane.waitFor(/Wrote it\.\n── completed/)
    expect(server.requests[0]!.body.messages.at(-1).content).toContain("read @src/parser/tokenizer.ts")
    await pane.waitFor(/^> $/m)
    expect(pane.rang()).toBe(true)
    // Ctrl-R: the earlier input, found by what it holds, run again with Enter
    pane.keys("C-r")
    pane.keys("-l", "tokeni")
    await pane.waitFor(/reverse-i-search\)'tokeni': read @src\/parser\/tokenizer\.ts/)
    const before = server.requests.length
    pane.keys("Enter")
    await waitUntil("the second turn's request", () => server.requests.length > before)
    expect(server.requests[before]!.body.messages.at(-1).content).toContain("read @src/parser/tokenizer.ts")
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })
})
