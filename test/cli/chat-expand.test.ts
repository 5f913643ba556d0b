/**
 * `agent-loop chat` on a real terminal (tmux): Ctrl-O shows the last tool call whole — a command's
 * every line where its preview showed the last five, a written file's every line where the preview
 * folded after twenty — then the prompt again; before any call it says there is none. At 80×24 in
 * colour and at 200×50 with `NO_COLOR`. And Shift-Enter, where the terminal reports it (Esc Enter,
 * or `CSI 13;2u`), starts a new line of the same input as a trailing backslash does. Skipped,
 * saying so, when tmux is not installed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, launcher, root, tempDir, type TestContext } from "../support/cliProcess.ts"
import { type Script, start } from "../support/openaiServer.ts"
import { hasTmux, startPane } from "../support/tmux.ts"

const chat = async (context: TestContext, script: Script, size: { columns: number; rows: number }, env: Record<string, string> = {}) => {
  const server = await start(script)
  const home = tempDir()
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace)
  const pane = startPane(
    [process.execPath, launcher, "chat", "--base-url", server.url, "--model", "fake-model", "--workspace", workspace, "--yes", "--no-context-files"],
    isolatedEnv(home, env),
    root,
    size
  )
  context.onTestFinished(async () => {
    pane.kill()
    await server.close()
  })
  await pane.waitFor(/^> /m)
  return { pane, workspace, server }
}

/** The lines of the pane that are only a number (a command's output lines, indented). */
const numbers = (shown: string) => shown.split("\n").map((line) => line.trim()).filter((line) => /^\d+$/.test(line)).map(Number)

describe.skipIf(!hasTmux)(hasTmux ? "agent-loop chat: Ctrl-O (tmux)" : "agent-loop chat Ctrl-O: SKIPPED because tmux is not installed (apt-get install -y tmux)", () => {
  it("at 80x24 in colour: a command's preview shows its last lines; Ctrl-O shows every line, then the prompt", async (context) => {
    const { pane } = await chat(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "seq 1 40" } }] },
      { text: "Counted." }
    ], { columns: 80, rows: 24 })
    pane.keys("C-o")
    await pane.waitFor(/no tool call has ended yet/)
    pane.line("count")
    await pane.waitFor(/Counted\.\n── completed/)
    expect(pane.capture()).toContain("… 35 earlier lines")
    expect(numbers(pane.capture())).toEqual([36, 37, 38, 39, 40])
    pane.keys("C-o")
    await pane.waitFor(/⚙ exec[^\n]*seq 1 40[^\n]*\n(\s+\d+\n){40}/)
    expect(numbers(pane.capture())).toEqual([36, 37, 38, 39, 40, ...Array.from({ length: 40 }, (_, i) => i + 1)])
    // styled: the header's name in bold
    expect(pane.captureStyled()).toMatch(/\u001b\[1mexec/)
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })

  it("Shift-Enter (Esc Enter, or CSI 13;2u) starts a new line of the same input; Enter sends the whole", async (context) => {
    const { pane, server } = await chat(context, [{ text: "Got three lines." }], { columns: 80, rows: 24 })
    pane.keys("-l", "first")
    pane.keys("M-Enter")
    pane.keys("-l", "second")
    pane.keys("-l", "\u001b[13;2u")
    pane.keys("-l", "third")
    pane.keys("Enter")
    await pane.waitFor(/Got three lines\.\n── completed/)
    expect(server.requests).toHaveLength(1)
    expect(server.requests[0]!.body.messages.at(-1)).toEqual({ role: "user", content: "first\nsecond\nthird" })
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })

  it("at 200x50 with NO_COLOR: a written file's preview folds after 20 lines; Ctrl-O shows all 30, unstyled", async (context) => {
    const content = Array.from({ length: 30 }, (_, i) => `row ${i + 1}`).join("\n") + "\n"
    const { pane, workspace } = await chat(context, [
      { toolCalls: [{ name: "write_file", arguments: { path: "rows.txt", content } }] },
      { text: "Written." }
    ], { columns: 200, rows: 50 }, { NO_COLOR: "1" })
    pane.line("write it")
    await pane.waitFor(/Written\.\n── completed/)
    expect(fs.readFileSync(path.join(workspace, "rows.txt"), "utf8")).toBe(content)
    expect(pane.capture()).toContain("… 10 more lines")
    expect(pane.capture()).not.toMatch(/\+ row 21$/m)
    pane.keys("C-o")
    await pane.waitFor(/\+ row 30$/m)
    const after = pane.capture().slice(pane.capture().lastIndexOf("⚙ write_file"))
    expect(after.split("\n").filter((line) => /\+ row \d+$/.test(line))).toHaveLength(30)
    expect(pane.captureStyled()).not.toMatch(/\u001b\[[0-9;]*m/)
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })
})
