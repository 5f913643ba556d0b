/**
 * MCP servers through the `agent-loop` binary: approval exactly like `exec`, `--tools` covering MCP
 * tools, one warning for a server that fails, and the workspace's `.mcp.json` only when asked for.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { cliSetup, root, runCli, type TestContext } from "../support/cliProcess.ts"
import type { Script } from "../support/openaiServer.ts"

const serverScript = path.join(root, "test", "support", "mcpServer.mjs")

/** A model server, a home with a workspace, an MCP config with our test server `kv` logging to `log`. */
const setup = async (context: TestContext, script: Script, servers: Record<string, unknown> = {}) => {
  const base = await cliSetup(context, script)
  const log = path.join(base.home, "kv.log")
  const config = path.join(base.home, "mcp.json")
  fs.writeFileSync(config, JSON.stringify({
    mcpServers: { kv: { command: process.execPath, args: [serverScript], env: { MCP_TEST_LOG: log } }, ...servers }
  }))
  return { ...base, log, config }
}

const started = (log: string) => fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").filter((l) => l.startsWith("start ")) : []

const toolNames = (request: { readonly body: any }) => (request.body.tools ?? []).map((t: any) => t.function.name)

const storeC: Script = [
  { toolCalls: [{ name: "put", arguments: { key: "c", value: "gamma" } }, { name: "lookup", arguments: { key: "a" } }] },
  { text: "done" }
]

// One CLI at a time: each is a whole Node process, and the suite shares two cores.
describe("agent-loop and MCP servers", () => {
  it("without a terminal and without --yes, an MCP tool that needs approval is denied like exec", async (context) => {
    const { flags, env, config, log, server } = await setup(context, storeC)
    const denied = await runCli(["run", ...flags, "--mcp-config", config, "store c"], { env })
    expect(denied.code).toBe(0)
    expect(denied.stderr).toMatch(/agent-loop: denied put \{"key":"c","value":"gamma"\}: it needs approval and there is no terminal to ask \(pass --yes to approve\)/)
    expect(started(log)).toEqual(["start lookup a"])
    expect(server.requests[1]!.body.messages.filter((m: any) => m.role === "tool").map((m: any) => m.content)).toEqual([
      expect.stringContaining("Not approved"),
      "a=alpha"
    ])
  })

  it("with --yes, an MCP tool that needs approval runs", async (context) => {
    const { flags, env, config, log } = await setup(context, storeC)
    const approved = await runCli(["run", ...flags, "--yes", "--mcp-config", config, "store c"], { env })
    expect(approved.code).toBe(0)
    expect(started(log)).toEqual(["start put c", "start lookup a"])
  })

  for (
    const [tools, expected] of [
      ["", []],
      ["list_dir,kv__*", ["list_dir", "lookup", "put"]],
      [undefined, ["read_file", "list_dir", "grep", "glob", "write_file", "edit_file", "exec", "exec_output", "exec_kill", "todo_write", "web_fetch", "lookup", "put"]]
    ] as const
  ) {
    it(`--tools covers MCP tools: ${tools === undefined ? "no --tools: the default built-ins and every MCP tool" : `"${tools}"`}`, async (context) => {
      const { flags, env, config, server } = await setup(context, [{ text: "ok" }])
      const result = await runCli(["run", ...flags, ...(tools === undefined ? [] : ["--tools", tools]), "--mcp-config", config, "hi"], { env })
      expect(result.code).toBe(0)
      expect(toolNames(server.requests[0]!)).toEqual(expected)
    })
  }

  it("a server that fails is one warning line naming it; the run goes on with the other tools; --verbose shows servers' stderr", async (context) => {
    const { flags, env, config, server } = await setup(context, [{ text: "ok" }], {
      ghost: { command: "/nonexistent/mcp-server" },
      noisy: { command: process.execPath, args: [serverScript, "MCP_TEST_MODE=noise"] }
    })
    const result = await runCli(["run", ...flags, "--mcp-config", config, "hi"], { env })
    expect(result.code).toBe(0)
    expect(result.stderr).toMatch(/^agent-loop: warn: MCP server "ghost" failed to start: Cannot spawn MCP server: .*; skipped$/m)
    expect(toolNames(server.requests[0]!)).toContain("kv__lookup")
    expect(result.stderr).not.toContain("debug:")
    const verbose = await runCli(["run", ...flags, "--mcp-config", config, "--verbose", "hi"], { env })
    expect(verbose.code).toBe(0)
    expect(verbose.stderr).toMatch(/^agent-loop: debug: MCP server "noisy" stderr: noise on stderr; GIVEN_TOKEN=$/m)
    expect(verbose.stderr).toMatch(/^agent-loop: debug: MCP server "noisy" stdout \(not JSON-RPC, ignored\): DEBUG \{not json$/m)
  })

  it("the workspace's .mcp.json is used in a trusted workspace unless --no-mcp-workspace, never in an untrusted one", async (context) => {
    const { flags, env, workspace, home, server } = await setup(context, [{ text: "ok" }])
    fs.writeFileSync(path.join(workspace, ".mcp.json"), JSON.stringify({
      mcpServers: { project: { command: process.execPath, args: [serverScript], env: { MCP_TEST_LOG: path.join(home, "p.log") } } }
    }))
    const notice = `MCP servers from ${path.join(workspace, ".mcp.json")}: project`
    const untrusted = await runCli(["run", ...flags, "--mcp-workspace", "hi"], { env })
    expect(untrusted.stderr).toContain(`so its .mcp.json was skipped; to use it, run: agent-loop trust ${workspace}`)
    const trustFile = path.join(env.XDG_CONFIG_HOME!, "agent-loop", "trusted-workspaces.json")
    fs.mkdirSync(path.dirname(trustFile), { recursive: true })
    fs.writeFileSync(trustFile, JSON.stringify({ trusted: [fs.realpathSync(workspace)] }))
    const optedOut = await runCli(["run", ...flags, "--no-mcp-workspace", "hi"], { env })
    const used = await runCli(["run", ...flags, "hi"], { env })
    expect([untrusted.code, optedOut.code, used.code]).toEqual([0, 0, 0])
    expect([untrusted, optedOut, used].map((result) => result.stderr.includes(notice))).toEqual([false, false, true])
    expect(server.requests.map((request) => toolNames(request).includes("lookup"))).toEqual([false, false, true])
  })

  it("--tools patterns that match no MCP tool are warnings naming them, with servers and without", async (context) => {
    const { flags, env, config, server } = await setup(context, [{ text: "ok" }, { text: "ok" }])
    const withServer = await runCli(["run", ...flags, "--tools", "read_file,kv__lookup,kv__nope,other__*", "--mcp-config", config, "hi"], { env })
    expect(withServer.code).toBe(0)
    expect(withServer.stderr).toMatch(/^agent-loop: warn: --tools pattern "kv__nope" matches no MCP tool$/m)
    expect(withServer.stderr).toMatch(/^agent-loop: warn: --tools pattern "other__\*" matches no MCP tool$/m)
    expect(withServer.stderr).not.toContain("\"kv__lookup\"")
    expect(toolNames(server.requests[0]!)).toEqual(["read_file", "lookup"])
    const without = await runCli(["run", ...flags, "--tools", "files__read", "hi"], { env })
    expect(without.code).toBe(0)
    expect(without.stderr).toMatch(/^agent-loop: warn: --tools pattern "files__read" matches no MCP tool$/m)
  })

  it("a stdio server sees the proxy, CA and npm registry variables of the CLI, and not the provider's key", async (context) => {
    const script: Script = [{ toolCalls: [{ name: "get-env", arguments: {} }] }, { text: "done" }]
    const { flags, env, home, server } = await setup(context, script)
    const config = path.join(home, "everything.json")
    fs.writeFileSync(config, JSON.stringify({
      mcpServers: { everything: { command: process.execPath, args: [path.join(root, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio"] } }
    }))
    const network = {
      HTTPS_PROXY: "http://proxy.corp.example:3128",
      no_proxy: "localhost,127.0.0.1",
      NODE_EXTRA_CA_CERTS: "/etc/ssl/corp-ca.pem",
      SSL_CERT_FILE: "/etc/ssl/corp-bundle.pem",
      npm_config_registry: "https://npm.corp.example/",
      npm_config_cafile: "/etc/ssl/corp-ca.pem"
    }
    const result = await runCli(["run", ...flags, "--mcp-config", config, "what is your environment?"], {
      env: { ...env, ...network, OPENAI_API_KEY: "sk-provider-key-must-stay-here" }
    })
    expect(result.code).toBe(0)
    const seen = server.requests[1]!.body.messages.find((m: any) => m.role === "tool").content as string
    for (const [name, value] of Object.entries(network)) expect(seen).toContain(`"${name}": "${value}"`)
    expect(seen).not.toContain("sk-provider-key-must-stay-here")
    expect(seen).not.toContain("OPENAI_API_KEY")
  })
})
