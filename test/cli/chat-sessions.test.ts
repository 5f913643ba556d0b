/**
 * `chat`'s session commands on a real terminal (tmux), against the scripted server on 127.0.0.1:
 * `/compact` summarises the conversation (the next request starts from the summary, the log keeps
 * everything), `/clear` starts a new session, `/sessions` lists this workspace's, `/resume KEY`
 * and a bare `/resume` (the picker) switch back, and Ctrl-C acts on the session switched to.
 * Skipped, saying so, without tmux.
 */
import { describe, expect, it } from "@effect/vitest"
import { cliSetup, launcher, root, runCli } from "../support/cliProcess.ts"
import type { Received, Reply } from "../support/openaiServer.ts"
import { hasTmux, startPane } from "../support/tmux.ts"

const SLOW = 120_000

const isSummary = (request: Received) => String(request.body.messages[0]?.content ?? "").startsWith("Summarise the conversation")
const users = (request: Received) => request.body.messages.filter((m: any) => m.role === "user").map((m: any) => m.content)
const systems = (request: Received): ReadonlyArray<string> =>
  request.body.messages.filter((m: any) => m.role === "system").map((m: any) => String(m.content))

describe.skipIf(!hasTmux)(hasTmux ? "chat session commands (tmux)" : "chat session commands: SKIPPED because tmux is not installed (apt-get install -y tmux)", () => {
  it("/compact, /clear, /sessions, /resume KEY and the /resume picker; Ctrl-C follows the session", async (context) => {
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const reply = (request: Received): Reply => {
      if (isSummary(request)) return { text: "The user asked about alpha." }
      const last = users(request).at(-1)
      return last === "slow one" ? { text: ["Working"], hold: held } : { text: `Answer to ${last}.` }
    }
    const { env, flags, server, workspace } = await cliSetup(context, reply)
    const pane = startPane([process.execPath, launcher, "chat", ...flags], env, root)
    context.onTestFinished(async () => {
      release()
      pane.kill()
    })
    const first = /session (\S+) · model/.exec(await pane.waitFor(/^> $/m))![1]!
    const idle = /── completed[^\n]*\n> $/m

    pane.line("/compact")
    await pane.waitFor(/nothing to summarise yet\n> $/m)
    pane.line("alpha")
    await pane.waitFor(/Answer to alpha\./)
    await pane.waitFor(idle)
    pane.line("/compact")
    await pane.waitFor(/summarised 2 messages of the session\)\n> $/m)
    pane.line("beta")
    await pane.waitFor(/Answer to beta\./)
    const afterSummary = server.requests.at(-1)!
    expect(users(afterSummary)).toEqual(["beta"])
    expect(systems(afterSummary).some((text) => text.includes("The user asked about alpha."))).toBe(true)

    pane.line("/clear")
    const second = /new session (\S+); the last one stays saved: \/resume (\S+)/.exec(await pane.waitFor(/new session \S+;[^\n]*\n> $/m))!
    expect(second[2]).toBe(first)
    const fresh = second[1]!
    pane.line("gamma")
    await pane.waitFor(/Answer to gamma\./)
    expect(users(server.requests.at(-1)!)).toEqual(["gamma"])
    expect(systems(server.requests.at(-1)!).some((text) => text.includes("alpha"))).toBe(false)

    pane.line("/sessions")
    const listed = await pane.waitFor(/this chat's session; \/resume KEY continues another\)\n> $/m)
    expect(listed).toMatch(new RegExp(`\\* ${fresh} .*gamma`))
    expect(listed).toMatch(new RegExp(` ${first} .*alpha`))

    pane.line(`/resume ${first}`)
    await pane.waitFor(new RegExp(`session ${first}: .*alpha\\n> $`, "m"))
    pane.line("delta")
    await pane.waitFor(/Answer to delta\./)
    expect(users(server.requests.at(-1)!)).toEqual(["beta", "delta"])

    pane.line("/resume nope")
    await pane.waitFor(/no saved session nope \(\/sessions lists them\)/)

    // the picker offers the other sessions of the workspace; Enter takes the first
    pane.line("/resume")
    await pane.waitFor(/Resume which session\?[\s\S]*gamma[\s\S]*q cancels/)
    pane.keys("Enter")
    await pane.waitFor(new RegExp(`session ${fresh}: .*gamma\\n> $`, "m"))
    pane.line("slow one")
    await pane.waitFor(/Working/)
    pane.keys("C-c")
    await pane.waitFor(/interrupting/)
    release()
    await pane.waitFor(/── interrupted[^\n]*\n> $/m)
    const slow = server.requests.filter((request) => users(request).includes("slow one"))
    expect(users(slow[0]!)).toEqual(["gamma", "slow one"])

    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
    // both sessions are saved with their workspace, the first with its whole log
    const list = await runCli(["sessions", "list", "--workspace", workspace], { env })
    expect(list.stdout).toContain(first)
    expect(list.stdout).toContain(fresh)
    const shown = await runCli(["sessions", "show", first, "--all"], { env })
    expect(shown.stdout).toMatch(/alpha[\s\S]*compaction \(summary\)[\s\S]*beta[\s\S]*delta/)
  }, SLOW)
})
