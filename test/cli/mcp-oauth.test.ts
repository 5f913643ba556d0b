/**
 * OAuth for a remote MCP server through the `agent-loop` binary: before a login the server's 401
 * says to run `mcp login`; `mcp login NAME` prints the authorization URL (the test plays the
 * browser), waits on the loopback redirect and keeps the tokens 0600 in the data directory; `run`
 * and `mcp list` then reach the server with them; `mcp logout` forgets them.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { cliSetup, runCli, spawnCli } from "../support/cliProcess.ts"
import * as HttpMcp from "../support/mcpHttpServer.ts"
import * as AuthServer from "../support/oauthServer.ts"

describe("agent-loop mcp login", () => {
  it.live("a remote server is logged in to once, then used by run and mcp list with its token; logout forgets it", () =>
    Effect.gen(function*() {
      const auth = yield* AuthServer.start()
      let url = ""
      const mcp = yield* HttpMcp.start(["2025-11-25"], auth.guard(() => url))
      url = mcp.url
      const finished: Array<() => void> = []
      yield* Effect.addFinalizer(() => Effect.sync(() => finished.forEach((f) => f())))
      const { env, flags, home, server, workspace } = yield* Effect.promise(() =>
        cliSetup({ onTestFinished: (f: () => void) => finished.push(f) } as never, [
          { toolCalls: [{ name: "lookup", arguments: { key: "k" } }] },
          { text: "done" }
        ])
      )
      const settings = path.join(env["XDG_CONFIG_HOME"]!, "agent-loop", "settings.json")
      fs.mkdirSync(path.dirname(settings), { recursive: true })
      fs.writeFileSync(settings, JSON.stringify({ mcpServers: { remote: { type: "http", url: mcp.url } } }))
      const cli = (args: ReadonlyArray<string>) => Effect.promise(() => runCli(args, { env, cwd: workspace }))

      const before = yield* cli(["mcp", "list"])
      expect(before.stdout).toMatch(/^remote: failed to start: .*401.*: the server asks for authorization: run agent-loop mcp login remote; from /m)

      const login = spawnCli(["mcp", "login", "remote"], { env, cwd: workspace })
      yield* Effect.promise(() => login.waitFor(/open this URL in a browser:\n\n {2}(\S+)\n/))
      const authorizationUrl = /open this URL in a browser:\n\n {2}(\S+)\n/.exec(login.stderr())![1]!
      expect(authorizationUrl.startsWith(`${auth.issuer}/authorize?`)).toBe(true)
      // the browser: the authorization server approves and redirects to the CLI's loopback
      const approved = yield* Effect.promise(() => fetch(authorizationUrl, { redirect: "manual" }))
      const redirect = approved.headers.get("location")!
      expect(redirect).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?code=/)
      expect(yield* Effect.promise(() => fetch(redirect).then((r) => r.text()))).toContain("Authorized")
      expect((yield* Effect.promise(() => login.exited)).code).toBe(0)
      const file = path.join(home, "data", "mcp-oauth.json")
      expect(login.stdout()).toBe(`authorized remote (${mcp.url}) with ${auth.issuer}, refreshed as it expires; the tokens are in ${file}\n`)
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)
      const token = JSON.parse(fs.readFileSync(file, "utf8"))[mcp.url].tokens.accessToken as string
      expect(login.stdout() + login.stderr()).not.toContain(token)

      const run = yield* cli(["run", ...flags, "--yes", "look k up"])
      expect(run.code).toBe(0)
      expect(server.requests[1]!.body.messages.filter((m: any) => m.role === "tool").map((m: any) => m.content)).toEqual(["k=value"])
      expect(mcp.requests.filter((r) => r.method === "tools/call").map((r) => r.headers.authorization)).toEqual([`Bearer ${token}`])
      expect(run.stdout + run.stderr).not.toContain(token)

      const listed = yield* cli(["mcp", "list"])
      expect(listed.stdout).toContain("remote: connected (http, MCP 2025-11-25), 1 tools, from ")

      const logout = yield* cli(["mcp", "logout", "remote"])
      expect(logout).toMatchObject({ code: 0, stdout: `logged out of remote (${mcp.url})\n` })
      expect(JSON.parse(fs.readFileSync(file, "utf8"))).toEqual({})
      const again = yield* cli(["mcp", "logout", "remote"])
      expect(again.code).toBe(1)
      expect(again.stderr).toContain("remote is not logged in")
    }).pipe(Effect.scoped))
})
