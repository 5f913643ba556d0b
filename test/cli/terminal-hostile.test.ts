/**
 * Regression: nothing from outside drives the terminal, and stopping works at the approval prompt.
 * Model text, tool names and arguments, and paths are shown without their escape sequences (a model
 * could retitle the window, clear the screen or colour text); with a pipe, stderr carries no escape
 * at all. Ctrl-C and SIGTERM end `run` within 2 s while it waits at the approval prompt. Real
 * terminals through tmux (skipped, saying so, without it).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, launcher, root, runCli, tempDir, type TestContext, DURATION } from "../support/cliProcess.ts"
import { gate, type Script, start } from "../support/openaiServer.ts"
import { hasTmux, startPane } from "../support/tmux.ts"

const ESC = "\u001b"
/** What a hostile model sends: a window title, a colour, a screen clear, a cursor move, an 8-bit CSI. */
const HOSTILE_TEXT = `Hello ${ESC}]2;PWNED\u0007there ${ESC}[31mred${ESC}[0m ${ESC}[2J${ESC}[Hstill \u009b1Ahere.`
const HOSTILE_TOOL = `evil${ESC}]2;TOOL\u0007`

const setup = async (context: TestContext, script: Script, workspaceName = "ws") => {
  const server = await start(script)
  const home = tempDir()
  const workspace = path.join(home, workspaceName)
  fs.mkdirSync(workspace)
  fs.mkdirSync(path.join(workspace, ".agents", "hooks"), { recursive: true })
  context.onTestFinished(() => server.close())
  return { server, home, workspace, env: isolatedEnv(home) }
}

describe.concurrent("escape sequences from outside, with pipes", () => {
  it("stderr carries no escape at all; stdout, a pipe, keeps the model's text as data", async (context) => {
    const { server, workspace, env } = await setup(context, [
      { toolCalls: [{ name: HOSTILE_TOOL, arguments: { path: `a${ESC}[2Jb` } }] },
      { text: HOSTILE_TEXT }
    ], `ws${ESC}]2;PATH\u0007`)
    const result = await runCli(["run", "--base-url", server.url, "--model", "m", "--workspace", workspace, "--ephemeral", "go"], { env })
    expect(result.code).toBe(0)
    expect(result.stderr).not.toContain(ESC)
    expect(result.stderr).not.toContain("\u009b")
    // an OSC sequence goes with its payload; JSON shows ESC in arguments as the six characters \u001b
    expect(result.stderr).toContain("⚙ evil {\"path\":\"a\\u001b[2Jb\"}")
    expect(result.stderr).toMatch(new RegExp(String.raw`✗ evil ${DURATION} Tool "evil" not found`))
    expect(result.stderr).toMatch(/agent-loop: warn: workspace \S*\/ws is not trusted/)
    expect(result.stdout).toBe(`${HOSTILE_TEXT}\n`)
  })

  it("a stream cut mid-answer and retried leaves only the final answer on stdout", async (context) => {
    const { server, workspace, env } = await setup(context, [{ text: ["Half of a wrong ans"], cut: true }, { text: "The right answer." }])
    const result = await runCli(["run", "--base-url", server.url, "--model", "m", "--workspace", workspace, "--ephemeral", "go"], { env })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe("The right answer.\n")
    expect(server.requests).toHaveLength(2)
  })
})

/** `agent-loop ARGS` in a tmux pane, against a scripted server. */
const inPane = async (context: TestContext, script: Script, args: ReadonlyArray<string>, extraEnv: Record<string, string> = {}) => {
  const { server, workspace, env } = await setup(context, script)
  const pane = startPane(
    [process.execPath, launcher, ...args, "--base-url", server.url, "--model", "m", "--workspace", workspace, "--ephemeral"],
    { ...env, ...extraEnv },
    root
  )
  context.onTestFinished(() => pane.kill())
  return { server, pane }
}

describe.skipIf(!hasTmux).concurrent(hasTmux ? "escape sequences on a terminal (tmux)" : "terminal: SKIPPED because tmux is not installed", () => {
  it("the model cannot retitle the window, colour text or clear what was shown", async (context) => {
    const { pane } = await inPane(context, [{ toolCalls: [{ name: HOSTILE_TOOL, arguments: {} }] }, { text: HOSTILE_TEXT }], ["run", "go"])
    const shown = await pane.waitFor(/── completed/)
    expect(pane.title()).not.toMatch(/PWNED|TOOL/)
    expect(shown).toMatch(/⚙ evil \{\}/)
    expect(shown).toMatch(/Hello there red still 1Ahere\./)
    // the tool line printed before the text is still on the screen: nothing cleared it
    expect(shown.indexOf("⚙ evil")).toBeLessThan(shown.indexOf("Hello there"))
    const styled = pane.captureStyled()
    const line = styled.split("\n").find((l) => l.includes("Hello"))!
    expect(line).not.toContain(`${ESC}[31m`)
    expect(await pane.exitStatus(30_000)).toBe(0)
  })
})

describe.skipIf(!hasTmux).concurrent(hasTmux ? "stopping at the approval prompt (tmux)" : "approval prompt: SKIPPED because tmux is not installed", () => {
  const askExec: Script = [{ toolCalls: [{ name: "exec", arguments: { command: "echo hi" } }] }, { before: new Promise(() => {}) }]

  it("SIGTERM exits 143 within 2 s", async (context) => {
    const { pane } = await inPane(context, askExec, ["run", "go"])
    await pane.waitFor(/\? exec wants to run:\n {4}echo hi\n[\s\S]*\? allow exec\? \[y\/a\/N\]/)
    const pid = pane.pid()
    // from the signal's delivery (kill delivers it before it returns) to the exit the pane's wrapper saw
    const sent = Date.now()
    process.kill(pid, "SIGTERM")
    expect(await pane.exitStatus(10_000)).toBe(143)
    expect(pane.signalTimes().exitedAt! - sent).toBeLessThanOrEqual(2000)
  })

  it("Ctrl-C answers the prompt no and interrupts; a second Ctrl-C exits 130 within 2 s", async (context) => {
    const never = gate()
    context.onTestFinished(() => never.open())
    const { server, pane } = await inPane(context, [askExec[0]!, { before: never.promise }], ["run", "go"])
    await pane.waitFor(/\? exec wants to run:\n {4}echo hi\n[\s\S]*\? allow exec\? \[y\/a\/N\]/)
    pane.keys("C-c")
    await pane.waitFor(/\(denied exec\)[\s\S]*interrupting/)
    await server.received(2)
    pane.keys("C-c")
    expect(await pane.exitStatus(10_000)).toBe(130)
    // from the second SIGINT's delivery (the terminal sends it to the CLI and its wrapper at once) to
    // the exit, both as the wrapper saw them: the time tmux takes to press the key is not the CLI's
    const { interrupts, exitedAt } = pane.signalTimes()
    expect(interrupts).toHaveLength(2)
    expect(exitedAt! - interrupts[1]!).toBeLessThanOrEqual(2000)
  })
})
