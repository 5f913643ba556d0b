/**
 * `web_fetch` reaches a loopback, private or metadata address only by a rule the user wrote naming
 * that host: no wildcard rule (`domain:*`, `domain:127.0.0.*`) unlocks one, whatever spelling of
 * the address the URL uses, and a host allowed for the session at the approval prompt (when its
 * name may have resolved to a public address) is checked again at every fetch, so a name that now
 * resolves to 127.0.0.1 (DNS rebinding) is refused.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as dns from "node:dns"
import { vi } from "vitest"
import { type Hook, makeWebFetch, Tool, type ToolError } from "effect-agent-loop"
import { approvalHook } from "../../src/cli/permissions/approval.ts"
import { parseRule, type Rule, RuleError, type RuleKind } from "../../src/cli/permissions/rules.ts"
import * as Permissions from "../../src/cli/permissions/state.ts"
import * as Screen from "../../src/cli/terminal/screen.ts"
import { cliSetup, runCli } from "../support/cliProcess.ts"
import { toolContext } from "../support/toolWorkspace.ts"
import { startWebServer, type WebServer } from "../support/webServer.ts"

const ruled = (kind: RuleKind) => (...texts: ReadonlyArray<string>): ReadonlyArray<Rule> =>
  texts.map((text) => {
    const rule = parseRule(text, kind, "settings.json")
    if (rule instanceof RuleError) throw rule
    return rule
  })
const allowing = ruled("allow")

/** Addresses and names that are not public, as the URL's host gives them. */
const PRIVATE_HOSTS = [
  "127.0.0.1", "localhost", "169.254.169.254", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1", "0.0.0.0",
  "::1", "fd00::1", "::ffff:127.0.0.1", "::ffff:7f00:1"
]

describe("web_fetch and private addresses", () => {
  it("no wildcard rule unlocks a private host; a rule naming it does, unless a deny or ask rule matches it", () => {
    const wildcards = Permissions.make(
      allowing("WebFetch(domain:*)", "web_fetch(domain:127.0.0.*)", "WebFetch(domain:169.254.*)", "WebFetch(domain:*.internal)", "WebFetch(domain:local?ost)"),
      "/ws",
      undefined
    )
    for (const host of [...PRIVATE_HOSTS, "wiki.internal"]) expect([host, wildcards.reachesPrivate(host)]).toEqual([host, false])
    for (const host of [...PRIVATE_HOSTS, "wiki.internal"]) {
      const literal = Permissions.make(allowing("WebFetch(domain:*)", `WebFetch(domain:${host})`), "/ws", undefined)
      expect([host, literal.reachesPrivate(host)]).toEqual([host, true])
    }
    for (const kind of ["deny", "ask"] as const) {
      const overruled = Permissions.make([...allowing("WebFetch(domain:localhost)"), ...ruled(kind)("WebFetch(domain:localhost)")], "/ws", undefined)
      expect([kind, overruled.reachesPrivate("localhost")]).toEqual([kind, false])
    }
    // `web_fetch` alone allows every fetch, and unlocks nothing
    expect(Permissions.make(allowing("web_fetch"), "/ws", undefined).reachesPrivate("localhost")).toBe(false)
  })

  it("a wildcard rule fetches nothing from loopback, in any spelling of the address", async (context) => {
    const web = await startWebServer()
    context.onTestFinished(() => web.close())
    const urls = [
      `http://127.0.0.1:${web.port}/text`,
      `http://2130706433:${web.port}/text`,
      `http://0x7f.1:${web.port}/text`,
      `http://0177.0.0.1:${web.port}/text`,
      `http://127.1:${web.port}/text`,
      `http://localhost:${web.port}/text`,
      `http://[::ffff:127.0.0.1]:${web.port}/text`
    ]
    const { env, flags, server } = await cliSetup(context, [
      { toolCalls: urls.map((url, i) => ({ id: `f${i}`, name: "web_fetch", arguments: { url } })) },
      { text: "done" }
    ])
    const result = await runCli([
      "run", ...flags, "--ephemeral", "--tools", "web_fetch", "--allow", "WebFetch(domain:*)", "--allow", "web_fetch(domain:127.0.0.*)", "go"
    ], { env })
    expect(result.code, result.stderr).toBe(0)
    const results = server.requests[1]!.body.messages.filter((m: any) => m.role === "tool").map((m: any) => String(m.content))
    expect(results).toHaveLength(urls.length)
    for (const text of results) expect(text).toContain("which is not a public address")
    expect(web.requests).toEqual([])
  })

  it.live("a host allowed for the session at the prompt is refused when its name now resolves to 127.0.0.1", () =>
    Effect.acquireUseRelease(Effect.promise(startWebServer), (web: WebServer) =>
      Effect.gen(function*() {
        const permissions = Permissions.make([], "/ws", undefined)
        const screen = Screen.make({ stdout: { write: () => true }, stderr: { write: () => true }, stdinIsTTY: true, env: { NO_COLOR: "1" } })
        const hook = approvalHook({ policy: "ask", screen, ask: Effect.succeed("a"), permissions })
        const url = `http://rebind.invalid:${web.port}/text`
        const call: Hook.HookToolCall = { id: "w1", name: "web_fetch", arguments: { url }, readOnly: false, requiresApproval: true }
        const context = { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }
        const decision = hook.approveTool!({ context, call })
        expect(yield* (Effect.isEffect(decision) ? decision : Effect.succeed(decision))).toEqual({ _tag: "Approve" })
        // the session rule answers the next call without asking
        expect(permissions.evaluate(call)._tag).toBe("Allow")
        // what the CLI gives web_fetch as its policy (app.ts)
        expect(typeof permissions.reachesPrivate).toBe("function")
        const tool = makeWebFetch({ allowPrivate: permissions.reachesPrivate })
        const fetchOnce = tool.decode({ url }).pipe(Effect.orDie, Effect.flatMap((args) => tool.execute(args, toolContext)), Effect.map(Tool.toOutput))
        // the name resolved to a public address when it was approved; now it says 127.0.0.1
        const lookup = vi.spyOn(dns.promises, "lookup").mockImplementation((async () => [{ address: "127.0.0.1", family: 4 }]) as any)
        const [first, second] = yield* Effect.all([Effect.flip(fetchOnce), Effect.flip(fetchOnce)]).pipe(Effect.ensuring(Effect.sync(() => lookup.mockRestore())))
        for (const error of [first, second]) expect((error as ToolError).message).toContain("resolves to 127.0.0.1, which is not a public address")
        expect(web.requests).toEqual([])
      }), (web) => Effect.promise(web.close)))
})
