/**
 * `agent-loop chat`'s line editing on a real terminal (tmux): up/down recall earlier inputs (of
 * this chat and, from a private file in the data directory, of earlier ones), a bracketed paste of
 * several lines is one message, an edited line keeps its prompt, and Ctrl-C in the terminal's raw mode still interrupts, aborts
 * and stops the running command. Skipped, saying so, when tmux is not installed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, launcher, root, tempDir, type TestContext } from "../support/cliProcess.ts"
import { gate, type Script, start } from "../support/openaiServer.ts"
import { chatHistoryFile } from "../../src/cli/config/dataDir.ts"
import { hasTmux, startPane } from "../support/tmux.ts"

/** `agent-loop chat` against `server` in a tmux pane, with its data (history included) under `home`. */
const chatIn = async (context: TestContext, home: string, url: string, extra: ReadonlyArray<string> = []) => {
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace, { recursive: true })
  const pane = startPane(
    [process.execPath, launcher, "chat", "--base-url", url, "--model", "fake-model", "--workspace", workspace, ...extra],
    isolatedEnv(home),
    root
  )
  context.onTestFinished(() => pane.kill())
  await pane.waitFor(/^> $/m)
  return pane
}

const serve = async (context: TestContext, script: Script) => {
  const server = await start(script)
  context.onTestFinished(() => server.close())
  return server
}

const lastContent = (body: any) => body.messages.at(-1).content

/** Resolves once `pid` has ended; rejects at the deadline. */
const ended = (pid: number, timeoutMs = 10_000) =>
  new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + timeoutMs
    const tick = () => {
      try {
        process.kill(pid, 0)
      } catch {
        return resolve()
      }
      if (Date.now() > deadline) return reject(new Error(`process ${pid} still runs`))
      setTimeout(tick, 25)
    }
    tick()
  })

describe.skipIf(!hasTmux).concurrent(hasTmux ? "agent-loop chat line editing (tmux)" : "agent-loop chat line editing: SKIPPED because tmux is not installed (apt-get install -y tmux)", () => {
  it("up recalls earlier inputs of this chat, and of an earlier chat from a private history file", async (context) => {
    const server = await serve(context, [{ text: "One." }, { text: "Two." }, { text: "Three." }, { text: "Four." }])
    const home = tempDir()
    const pane = await chatIn(context, home, server.url)
    pane.line("first question")
    await pane.waitFor(/One\.\n── completed/)
    pane.line("second question")
    await pane.waitFor(/Two\.\n── completed/)
    pane.keys("Up", "Up", "Enter")
    await pane.waitFor(/Three\.\n── completed/)
    expect(lastContent(server.requests[2]!.body)).toBe("first question")
    pane.keys("C-d")
    expect(await pane.exitStatus()).toBe(0)

    // the history of this workspace, private
    const history = chatHistoryFile(path.join(home, "data"), fs.realpathSync(path.join(home, "ws")))
    expect(fs.statSync(history).mode & 0o777).toBe(0o600)
    const again = await chatIn(context, home, server.url)
    // the recalled input is the newest again, once
    again.keys("Up", "Up", "Down", "Enter")
    await again.waitFor(/Four\.\n── completed/)
    expect(lastContent(server.requests[3]!.body)).toBe("first question")
    again.keys("C-d")
    expect(await again.exitStatus()).toBe(0)
    expect(fs.readFileSync(history, "utf8").trim().split("\n").map((line) => JSON.parse(line))).toEqual([
      "second question",
      "first question"
    ])
  })

  it("a pasted block of several lines is one message, recalled as one", async (context) => {
    const server = await serve(context, [{ text: "Got it." }, { text: "Again." }])
    const pane = await chatIn(context, tempDir(), server.url)
    pane.line("\x1b[200~first pasted line\nsecond pasted line\x1b[201~")
    await pane.waitFor(/Got it\.\n── completed/)
    pane.keys("Up", "Enter")
    await pane.waitFor(/Again\.\n── completed/)
    expect(server.requests).toHaveLength(2)
    expect(lastContent(server.requests[0]!.body)).toBe("first pasted line\nsecond pasted line")
    expect(lastContent(server.requests[1]!.body)).toBe("first pasted line\nsecond pasted line")
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })

  it("editing an answer to the approval prompt, or an input, redraws the same prompt", async (context) => {
    const server = await serve(context, [{ toolCalls: [{ name: "exec", arguments: { command: "echo hi" } }] }, { text: "Done." }])
    const pane = await chatIn(context, tempDir(), server.url, ["--tools", "exec"])
    pane.line("go")
    await pane.waitFor(/\? allow exec\? \[y\/a\/N\] $/m)
    pane.keys("x", "BSpace", "y")
    await pane.waitFor(/^\? allow exec\? \[y\/a\/N\] y$/m)
    pane.keys("Enter")
    await pane.waitFor(/Done\.\n── completed[^\n]*\n> $/m)
    pane.keys("a", "b", "BSpace")
    await pane.waitFor(/Done\.\n── completed[^\n]*\n> a$/m)
    pane.keys("C-u", "C-d")
    expect(await pane.exitStatus()).toBe(0)
  })

  it("Ctrl-C interrupts, a second aborts and stops the running command, and twice at the prompt quits", async (context) => {
    const home = tempDir()
    const pidFile = path.join(home, "ws", "command.pid")
    const never = gate()
    const server = await serve(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "echo $$ > command.pid; exec sleep 1000" } }] },
      { text: ["Never"], hold: never.promise }
    ])
    // unconfined: in the sandbox `$$` is the command's pid in a namespace of its own, not this machine's
    const pane = await chatIn(context, home, server.url, ["--tools", "exec", "--yes", "--sandbox", "off"])
    pane.line("run it")
    await pane.waitFor(/exec/)
    const pid = await new Promise<number>((resolve, reject) => {
      const deadline = Date.now() + 10_000
      const tick = () => {
        const text = fs.existsSync(pidFile) ? fs.readFileSync(pidFile, "utf8").trim() : ""
        if (text !== "") return resolve(Number(text))
        if (Date.now() > deadline) return reject(new Error(`the command never started; the pane shows:\n${pane.capture()}`))
        setTimeout(tick, 25)
      }
      tick()
    })
    pane.keys("C-c")
    await pane.waitFor(/interrupting/)
    pane.keys("C-c")
    await pane.waitFor(/── aborted[^\n]*\n> $/m)
    await ended(pid)
    pane.keys("C-c")
    await pane.waitFor(/Ctrl-C again to quit/)
    pane.keys("C-c")
    expect(await pane.exitStatus()).toBe(130)
  })
})
