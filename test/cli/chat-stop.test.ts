/**
 * `agent-loop chat` on a real terminal (tmux): Esc stops the running turn now — the model call in
 * flight is cancelled, what was streamed is kept with the stop recorded, no further call is made,
 * and the prompt comes back at once. Skipped, saying so, when tmux is not installed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { STOPPED_NOTE } from "../../src/programs/internal/turnEnd.ts"
import { isolatedEnv, launcher, root, tempDir } from "../support/cliProcess.ts"
import { gate, start } from "../support/openaiServer.ts"
import { hasTmux, startPane } from "../support/tmux.ts"

describe.skipIf(!hasTmux)(hasTmux ? "agent-loop chat: Esc (tmux)" : "agent-loop chat Esc: SKIPPED because tmux is not installed (apt-get install -y tmux)", () => {
  it("Esc mid-stream stops the turn now: interrupted, the prompt back, no further call; the next turn sees what was said and the stop", async (context) => {
    const never = gate()
    const server = await start([{ text: ["Half of", " an answer"], hold: never.promise }, { text: "Carrying on." }])
    const home = tempDir()
    const workspace = path.join(home, "ws")
    fs.mkdirSync(workspace)
    const pane = startPane([process.execPath, launcher, "chat", "--base-url", server.url, "--model", "fake-model", "--workspace", workspace], isolatedEnv(home), root)
    context.onTestFinished(async () => {
      pane.kill()
      await server.close()
    })
    await pane.waitFor(/^> $/m)
    pane.line("go")
    await pane.waitFor(/Half of/)
    pane.keys("Escape")
    // the held stream is never released: only the stop can end the turn
    await pane.waitFor(/⏹ stopped[\s\S]*── interrupted[^\n]*\n> $/m)
    expect(server.requests).toHaveLength(1)
    pane.line("and now?")
    await pane.waitFor(/Carrying on\.\n── completed/)
    expect(server.requests).toHaveLength(2)
    expect(server.requests[1]!.body.messages.slice(-4).map((m: any) => [m.role, m.content])).toEqual([
      ["user", "go"],
      ["assistant", "Half of"],
      ["user", STOPPED_NOTE],
      ["user", "and now?"]
    ])
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })

  it("Esc at the prompt does nothing", async (context) => {
    const server = await start([{ text: "Fine." }])
    const home = tempDir()
    const workspace = path.join(home, "ws")
    fs.mkdirSync(workspace)
    const pane = startPane([process.execPath, launcher, "chat", "--base-url", server.url, "--model", "fake-model", "--workspace", workspace], isolatedEnv(home), root)
    context.onTestFinished(async () => {
      pane.kill()
      await server.close()
    })
    await pane.waitFor(/^> $/m)
    pane.keys("Escape")
    pane.line("hello")
    await pane.waitFor(/Fine\.\n── completed/)
    expect(pane.capture()).not.toMatch(/stopped/)
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })
})
