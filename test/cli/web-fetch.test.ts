/**
 * `web_fetch` end to end: a scripted model on 127.0.0.1 asks the real CLI to fetch a page from a
 * loopback web server, which is refused unless a permission rule names the host. On by default,
 * it asks before each new host (`web-fetch-hosts.test.ts` holds that on a terminal).
 */
import { describe, expect, it } from "@effect/vitest"
import { cliSetup, runCli, type TestContext } from "../support/cliProcess.ts"
import type { Script } from "../support/openaiServer.ts"
import { startWebServer } from "../support/webServer.ts"

const setup = async (context: TestContext, script: (web: string) => Script) => {
  const web = await startWebServer()
  context.onTestFinished(() => web.close())
  const { server, flags, env } = await cliSetup(context, script(web.url))
  return { web, server, flags, env }
}

/** The content of the tool result the model got back in its second request. */
const toolResult = (server: { requests: ReadonlyArray<{ body: any }> }) =>
  server.requests[1]!.body.messages.find((m: any) => m.role === "tool").content

describe.concurrent("agent-loop web_fetch", () => {
  it("fetches a page as Markdown when --tools enables it and a rule allows the domain", async (context) => {
    const { env, flags, server, web } = await setup(context, (url) => [
      { toolCalls: [{ name: "web_fetch", arguments: { url: `${url}/page` } }] },
      { text: "Version 2 is out." }
    ])
    const result = await runCli(["run", ...flags, "--tools", "read_file,web_fetch", "--allow", "WebFetch(domain:127.0.0.1)", "news?"], { env })
    expect(result.code, result.stderr).toBe(0)
    expect(server.requests[0]!.body.tools.map((t: any) => t.function.name)).toEqual(["read_file", "web_fetch"])
    expect(toolResult(server)).toContain("# Release notes\n\nVersion **2** is [out](/changes).")
    expect(web.requests.map((r) => r.path)).toEqual(["/page"])
    expect(web.requests[0]!.headers["authorization"]).toBeUndefined()
    expect(result.stdout).toBe("Version 2 is out.\n")
  })

  it("is on by default, needs approval without a rule, and refuses a loopback address when approved without one", async (context) => {
    // each turn: the model fetches the page, then answers
    const { env, flags, server, web } = await setup(context, (url) => (request) =>
      request.body.messages.at(-1).role === "user"
        ? { toolCalls: [{ name: "web_fetch", arguments: { url: `${url}/page` } }] }
        : { text: "Could not." })
    // among the default tools; without a terminal and without a rule, the call is denied before anything is sent
    const denied = await runCli(["run", ...flags, "news?"], { env })
    expect(server.requests[0]!.body.tools.map((t: any) => t.function.name)).toContain("web_fetch")
    expect(denied.code, denied.stderr).toBe(0)
    expect(toolResultOf(server, 1)).toContain("this call needs the user's approval, and agent-loop has no terminal to ask")
    // approved (--yes) but with no rule for the host: refused after resolving it, still nothing sent
    const approved = await runCli(["run", ...flags, "--yes", "news?"], { env })
    expect(approved.code, approved.stderr).toBe(0)
    expect(toolResultOf(server, 3)).toContain("resolves to 127.0.0.1, which is not a public address")
    expect(web.requests).toEqual([])
  })
})

/** The tool result in the request at `index` (the one after the tool call). */
const toolResultOf = (server: { requests: ReadonlyArray<{ body: any }> }, index: number) =>
  server.requests[index]!.body.messages.find((m: any) => m.role === "tool").content
