/**
 * `agent-loop mcp list|add|remove` through the binary: servers added to the user's settings and to
 * the workspace's `.mcp.json` (the rest of each file kept), listed with their status, protocol
 * version and tools' approval (no model, no key), and removed again.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, root, runCli, tempDir } from "../support/cliProcess.ts"

const serverScript = path.join(root, "test", "support", "mcpServer.mjs")
const everything = path.join(root, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")

const setup = () => {
  const home = tempDir()
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace)
  const env = isolatedEnv(home)
  delete env.OPENAI_API_KEY
  const userSettings = path.join(env.XDG_CONFIG_HOME!, "agent-loop", "settings.json")
  return { home, workspace, env, userSettings, mcpJson: path.join(workspace, ".mcp.json") }
}

const readJson = (file: string) => JSON.parse(fs.readFileSync(file, "utf8"))

describe("agent-loop mcp", () => {
  it("add writes the user's settings and the workspace's .mcp.json, list starts every server and shows its tools, remove takes one out", async () => {
    const { env, home, mcpJson, userSettings, workspace } = setup()
    const cwd = workspace
    fs.mkdirSync(path.dirname(userSettings), { recursive: true })
    fs.writeFileSync(userSettings, JSON.stringify({ model: "kept-model", permissions: { allow: ["exec(npm test:*)"] } }))
    const log = path.join(home, "kv.log")

    const addUser = await runCli(["mcp", "add", "kv", "-e", `MCP_TEST_LOG=${log}`, "-e", "API_TOKEN=tok-secret-123456", "--", process.execPath, serverScript], { env, cwd })
    expect(addUser).toMatchObject({ code: 0 })
    expect(addUser.stdout).toBe(`added kv (${process.execPath} ${serverScript}; MCP_TEST_LOG, API_TOKEN set) to ${userSettings}\n`)
    expect(addUser.stdout).not.toContain("tok-secret-123456")
    expect(readJson(userSettings)).toEqual({
      model: "kept-model",
      permissions: { allow: ["exec(npm test:*)"] },
      mcpServers: { kv: { command: process.execPath, args: [serverScript], env: { MCP_TEST_LOG: log, API_TOKEN: "tok-secret-123456" } } }
    })
    // the -y after -- belongs to the server's command line, not to agent-loop
    const addWorkspace = await runCli(["mcp", "add", "everything", "--scope", "workspace", "--", process.execPath, everything, "stdio", "-y"], { env, cwd })
    expect(addWorkspace.code).toBe(0)
    expect(addWorkspace.stderr).toContain(`${workspace} is not trusted: its servers start once you run agent-loop trust`)
    expect(readJson(mcpJson)).toEqual({ mcpServers: { everything: { command: process.execPath, args: [everything, "stdio", "-y"] } } })
    const addRemote = await runCli(["mcp", "add", "remote", "--url", "http://127.0.0.1:9/mcp", "-H", "Authorization: Bearer ${REMOTE_TOKEN}"], { env, cwd })
    expect(addRemote.code).toBe(0)
    expect(readJson(userSettings).mcpServers.remote).toEqual({ type: "http", url: "http://127.0.0.1:9/mcp", headers: { Authorization: "Bearer ${REMOTE_TOKEN}" } })
    const duplicate = await runCli(["mcp", "add", "kv", "--", "true"], { env, cwd })
    expect(duplicate.code).toBe(1)
    expect(duplicate.stderr).toContain(`${userSettings} already has a server named kv`)

    const untrusted = await runCli(["mcp", "list"], { env: { ...env, REMOTE_TOKEN: "remote-secret-1234" }, cwd })
    expect(untrusted.code).toBe(0)
    expect(untrusted.stdout).toContain(`kv: connected (stdio, MCP 2025-11-25), 2 tools, from ${userSettings}\n  lookup  read-only: runs without approval\n  put     asks for approval\n`)
    expect(untrusted.stdout).toMatch(/^remote: failed to start: .*; from /m)
    expect(untrusted.stdout).not.toContain("everything")
    expect(untrusted.stdout + untrusted.stderr).not.toContain("tok-secret-123456")
    expect(untrusted.stdout + untrusted.stderr).not.toContain("remote-secret-1234")
    expect(untrusted.stderr).toContain("so its .mcp.json was skipped")

    expect((await runCli(["trust", workspace], { env, cwd })).code).toBe(0)
    const trusted = await runCli(["mcp", "list"], { env, cwd })
    expect(trusted.code).toBe(0)
    expect(trusted.stdout).toMatch(new RegExp(`^everything: connected \\(stdio, MCP 2025-11-25\\), \\d+ tools, from ${mcpJson.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"))
    expect(trusted.stdout).toMatch(/^ {2}echo +read-only: runs without approval$/m)
    expect(trusted.stdout).toMatch(/^ {2}toggle-simulated-logging +asks for approval$/m)
    expect(trusted.stdout).toMatch(/^remote: cannot start: environment variable REMOTE_TOKEN is not set \(used in headers.Authorization\); from /m)
    const without = await runCli(["mcp", "list", "--no-mcp-workspace"], { env, cwd })
    expect(without.stdout).not.toContain("everything")

    const removed = await runCli(["mcp", "remove", "kv"], { env, cwd })
    expect(removed).toMatchObject({ code: 0, stdout: `removed kv from ${userSettings}\n` })
    expect(readJson(userSettings)).toEqual({
      model: "kept-model",
      permissions: { allow: ["exec(npm test:*)"] },
      mcpServers: { remote: { type: "http", url: "http://127.0.0.1:9/mcp", headers: { Authorization: "Bearer ${REMOTE_TOKEN}" } } }
    })
    expect((await runCli(["mcp", "remove", "everything", "--scope", "user"], { env, cwd })).code).toBe(1)
    expect((await runCli(["mcp", "remove", "everything"], { env, cwd })).stdout).toBe(`removed everything from ${mcpJson}\n`)
    expect(readJson(mcpJson)).toEqual({ mcpServers: {} })
  }, 240_000)

  it("an untrusted workspace whose MCP files name no server has nothing to trust: no warning, until one names a server", async () => {
    const { env, mcpJson, workspace } = setup()
    const cwd = workspace
    fs.writeFileSync(mcpJson, JSON.stringify({ mcpServers: {} }))
    fs.mkdirSync(path.join(workspace, ".vscode"))
    fs.writeFileSync(path.join(workspace, ".vscode", "mcp.json"), "// emptied\n{ \"servers\": {}, }\n")
    fs.mkdirSync(path.join(workspace, ".cursor"))
    fs.writeFileSync(path.join(workspace, ".cursor", "mcp.json"), "\n")
    const quiet = await runCli(["mcp", "list"], { env, cwd })
    expect(quiet.code).toBe(0)
    expect(quiet.stderr).not.toContain("is not trusted")
    fs.writeFileSync(mcpJson, JSON.stringify({ mcpServers: { x: { command: "true" } } }))
    const warned = await runCli(["mcp", "list"], { env, cwd })
    expect(warned.stderr).toContain(`workspace ${workspace} is not trusted, so its .mcp.json was skipped`)
    // a file that does not decode may be meant to: it still needs trust
    fs.writeFileSync(mcpJson, "{ not json")
    expect((await runCli(["mcp", "list"], { env, cwd })).stderr).toContain("so its .mcp.json was skipped")
  }, 120_000)

  it("add refuses what it cannot write well: a bad name, both a command and --url, a malformed -e, a file that is not JSON", async () => {
    const { env, userSettings, workspace } = setup()
    const cwd = workspace
    const run = (args: ReadonlyArray<string>) => runCli(["mcp", "add", ...args], { env, cwd })
    expect((await run(["a__b", "--", "x"])).stderr).toContain("server name \"a__b\": use letters, digits, - and _")
    expect((await run(["both", "--url", "http://h/mcp", "--", "x"])).stderr).toContain("give either a command")
    expect((await run(["neither"])).stderr).toContain("give either a command")
    expect((await run(["bad-env", "-e", "NOEQUALS", "--", "x"])).stderr).toContain("-e/--env expects KEY=VALUE")
    fs.mkdirSync(path.dirname(userSettings), { recursive: true })
    fs.writeFileSync(userSettings, "{ not json")
    const broken = await run(["ok", "--", "x"])
    expect(broken).toMatchObject({ code: 1 })
    expect(broken.stderr).toContain(`${userSettings}: not valid JSON; nothing was changed`)
    expect(fs.readFileSync(userSettings, "utf8")).toBe("{ not json")
  }, 120_000)
})
