/**
 * `agent-loop run` on a real terminal (tmux): the waiting indicator while the model has not
 * started to answer and while a tool runs (never in plain mode), and a retried answer marked as
 * discarded. Skipped, saying so, when tmux is not installed.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, launcher, root, runCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import { gate, type Script, start } from "../support/openaiServer.ts"
import { hasTmux, startPane } from "../support/tmux.ts"
import { waitUntil } from "../support/waitUntil.ts"

const runInPane = async (context: TestContext, script: Script, extra: ReadonlyArray<string> = [], extraEnv: Record<string, string> = {}) => {
  const server = await start(script)
  const home = tempDir()
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace)
  const pane = startPane(
    [process.execPath, launcher, "run", "--base-url", server.url, "--model", "fake-model", "--workspace", workspace, "--ephemeral", ...extra, "go"],
    { ...isolatedEnv(home), ...extraEnv },
    root
  )
  context.onTestFinished(async () => {
    pane.kill()
    await server.close()
  })
  return { server, pane, home }
}

describe.skipIf(!hasTmux).concurrent(hasTmux ? "agent-loop run on a terminal (tmux)" : "agent-loop run on a terminal: SKIPPED because tmux is not installed", () => {
  it("shows a spinner with the elapsed time while the model has not answered, and erases it when the answer streams", async (context) => {
    const answer = gate()
    context.onTestFinished(() => answer.open())
    const { pane } = await runInPane(context, [{ before: answer.promise, text: "The answer." }])
    await pane.waitFor(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for fake-model · \d/)
    answer.open()
    const shown = await pane.waitFor(/── completed/)
    expect(shown).not.toContain("waiting for")
    expect(shown).toMatch(/^The answer\.$/m)
  })

  it("shows the running tool with its elapsed time, then its result line", async (context) => {
    const fifo = path.join(tempDir(), "release")
    execFileSync("mkfifo", [fifo])
    /** Writes a line to the command waiting on the pipe; false when no one is reading yet (never blocks). */
    const release = () => {
      try {
        const fd = fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)
        fs.writeSync(fd, "go\n")
        fs.closeSync(fd)
        return true
      } catch {
        return false
      }
    }
    context.onTestFinished(() => void release())
    const { pane } = await runInPane(context, [
      { toolCalls: [{ name: "exec", arguments: { command: `read line < '${fifo}'; echo released` } }] },
      { text: "Done." }
      // unconfined: the pipe lies in the /tmp that the sandbox replaces with its own
    ], ["--yes", "--sandbox", "off"])
    await pane.waitFor(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] running exec · \d/)
    // the spinner shows once the tool starts, which can be before its shell opens the pipe
    await waitUntil("the command to open the pipe", release)
    const shown = await pane.waitFor(/── completed/)
    expect(shown).toMatch(/✓ exec/)
    expect(shown).not.toContain("running exec")
  })

  it("shows no spinner with NO_COLOR (plain mode) nor in pipes", async (context) => {
    const answer = gate()
    context.onTestFinished(() => answer.open())
    const { server, pane } = await runInPane(context, [{ before: answer.promise, text: "Plain." }], [], { NO_COLOR: "1" })
    await server.received(1)
    const before = pane.capture()
    answer.open()
    const shown = await pane.waitFor(/── completed/)
    expect(before + shown).not.toMatch(/waiting for|[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/)
    const piped = await runCli(["run", "--base-url", server.url, "--model", "fake-model", "--ephemeral", "go"], { env: isolatedEnv(tempDir()) })
    expect(piped.stderr).not.toMatch(/waiting for|\r/)
  })

  it("marks a truncated answer that is asked for again: the text above is discarded", async (context) => {
    const { pane } = await runInPane(context, [{ text: "A long answer that got c", finish: "length" }, { text: "Short answer." }])
    const shown = await pane.waitFor(/── completed/)
    expect(shown).toMatch(/A long answer that got c\n↻ retry 1 Truncated: .*\(the text above is discarded\)\nShort answer\./)
  })
})
