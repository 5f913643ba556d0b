/**
 * `web_fetch`, on by default, asks before each new host on a terminal (tmux), as Claude Code's
 * WebFetch does: a host said yes to once is not asked about again in the session, another host
 * is; and the yes does not open a loopback address, which still needs a rule naming its host.
 * Skipped, saying so, when tmux is not installed.
 */
import { describe, expect, it } from "@effect/vitest"
import { cliSetup, launcher, root } from "../support/cliProcess.ts"
import { hasTmux, startPane } from "../support/tmux.ts"

const toolResults = (body: any): Array<string> => body.messages.filter((m: any) => m.role === "tool").map((m: any) => m.content)

describe.skipIf(!hasTmux)(hasTmux ? "web_fetch on a terminal (tmux)" : "web_fetch on a terminal: SKIPPED because tmux is not installed", () => {
  it("asks once per new host, and the address guard still holds", async (context) => {
    const { env, flags, server } = await cliSetup(context, [
      { toolCalls: [{ id: "one", name: "web_fetch", arguments: { url: "http://127.0.0.1:9/a" } }] },
      { toolCalls: [{ id: "two", name: "web_fetch", arguments: { url: "http://127.0.0.1:9/b" } }] },
      { toolCalls: [{ id: "three", name: "web_fetch", arguments: { url: "http://localhost:9/c" } }] },
      { text: "Finished." }
    ])
    const pane = startPane([process.execPath, launcher, "run", ...flags, "go"], env, root)
    context.onTestFinished(() => pane.kill())
    await pane.waitFor(/web_fetch wants to run[\s\S]*127\.0\.0\.1:9\/a[\s\S]*allow web_fetch\? \[y\/a(?:\/s)?\/N\] $/m)
    pane.line("y")
    // the same host is not asked about again; a new one is
    await pane.waitFor(/web_fetch wants to run[\s\S]*localhost:9\/c[\s\S]*allow web_fetch\? \[y\/a(?:\/s)?\/N\] $/m)
    pane.line("y")
    await pane.waitFor(/── completed/)
    expect(await pane.exitStatus()).toBe(0)
    expect(pane.capture().match(/web_fetch wants to run/g)).toHaveLength(2)
    const results = toolResults(server.requests[3]!.body)
    expect(results[0]).toContain("resolves to 127.0.0.1, which is not a public address")
    expect(results[1]).toContain("resolves to 127.0.0.1, which is not a public address")
    expect(results[2]).toMatch(/resolves to (127\.0\.0\.1|::1), which is not a public address/)
  })
})
