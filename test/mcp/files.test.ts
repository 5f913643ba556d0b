/**
 * The MCP files users already have: VS Code's, Cursor's and Claude Code's in a workspace, with
 * their references (`${input:…}`, `${env:…}`, `${workspaceFolder}`); servers that speak only the
 * older HTTP+SSE transport; what a stdio server inherits; and what a server that does not start says.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { McpTools, SecretsLive } from "effect-agent-loop"
import { connectAll } from "../../src/layers/McpTools.ts"
import { connect, isInherited } from "../../src/layers/mcp/connect.ts"
import { start as startSse } from "../support/mcpSseServer.ts"
import { call, captureLogs, logLines, npmServer, serverScript, tempDir, testServer, untilLogged } from "../support/mcpServerKit.ts"

const node = process.execPath

const decoded = Schema.decodeUnknownSync(McpTools.McpServerConfig)

const writeJson = (path: string, value: unknown) => {
  nodeFs.mkdirSync(nodePath.dirname(path), { recursive: true })
  nodeFs.writeFileSync(path, JSON.stringify(value, null, 2))
}

describe("MCP files of other clients", () => {
  it.live("VS Code, Cursor and Claude Code files in a workspace start real servers; .mcp.json wins over Cursor's over VS Code's", () =>
    Effect.gen(function*() {
      const workspace = nodeFs.realpathSync(yield* tempDir)
      nodeFs.writeFileSync(nodePath.join(workspace, "hello.txt"), "hello from the workspace")
      const vscode = nodePath.join(workspace, ".vscode", "mcp.json")
      const cursor = nodePath.join(workspace, ".cursor", "mcp.json")
      const claude = nodePath.join(workspace, ".mcp.json")
      writeJson(vscode, {
        inputs: [
          { type: "promptString", id: "files-token", description: "A token", password: true },
          { type: "promptString", id: "never-answered", description: "Not set anywhere" }
        ],
        servers: {
          files: {
            type: "stdio",
            command: node,
            args: [npmServer("server-filesystem"), "${workspaceFolder}"],
            env: { FILES_TOKEN: "${input:files-token}" }
          },
          asks: { type: "stdio", command: node, args: [serverScript], env: { T: "${input:never-answered}" } },
          shared: { command: "/nonexistent/vscode-server" }
        }
      })
      writeJson(cursor, {
        mcpServers: {
          everything: { command: node, args: ["${env:EVERYTHING}", "stdio"] },
          shared: { command: "/nonexistent/cursor-server" }
        }
      })
      const log = nodePath.join(workspace, "kv.log")
      writeJson(claude, { mcpServers: { shared: testServer(log) } })

      const origins = yield* McpTools.loadConfigWithOrigins({ workspace })
      expect(Object.fromEntries(Object.entries(origins).map(([name, { source }]) => [name, source]))).toEqual({
        files: vscode,
        asks: vscode,
        everything: cursor,
        shared: claude
      })
      const logs = captureLogs()
      const env = { EVERYTHING: npmServer("server-everything"), AGENT_LOOP_INPUT_FILES_TOKEN: "tok-123456789" }
      const tools = yield* connectAll(yield* McpTools.loadConfig({ workspace }), { env, workspace, prefix: "always" }).pipe(
        Effect.provide(logs.layer)
      )
      const names = tools.map((tool) => tool.name)
      expect(names).toEqual(expect.arrayContaining(["files__read_text_file", "everything__echo", "shared__lookup", "shared__put"]))
      expect(names.some((name) => name.startsWith("asks__"))).toBe(false)
      expect(logs.warnings()).toEqual([
        "MCP server \"asks\" cannot start: it asks for input \"never-answered\" (used in env.T), and there is no editor to prompt in: set AGENT_LOOP_INPUT_NEVER_ANSWERED to answer it; skipped"
      ])
      // ${workspaceFolder} became the workspace: the filesystem server may read there
      expect(yield* call(tools, "files__read_text_file", { path: nodePath.join(workspace, "hello.txt") })).toEqual({
        content: "hello from the workspace"
      })
      expect(yield* call(tools, "everything__echo", { message: "hi" })).toEqual({ content: "Echo: hi" })
      expect(logLines(log)[0]).toMatch(/^ready /)
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(NodeServices.layer, SecretsLive.layer()))))

  it.effect("VS Code's comments and trailing commas are read (strings keep their slashes); broken JSON is still an error naming the file", () =>
    Effect.gen(function*() {
      const workspace = yield* tempDir
      const vscode = nodePath.join(workspace, ".vscode", "mcp.json")
      nodeFs.mkdirSync(nodePath.dirname(vscode))
      nodeFs.writeFileSync(vscode, `{
  // the servers of this repository
  "servers": {
    "docs": { "type": "http", "url": "https://example.invalid//mcp/*x*/", }, /* a remote one */
  },
  "inputs": [],
}`)
      expect(yield* McpTools.loadConfig({ workspace })).toMatchObject({ docs: { type: "http", url: "https://example.invalid//mcp/*x*/" } })
      // a broken one is an error naming it, as for .mcp.json (the CLI's --no-mcp-workspace leaves the workspace's files out)
      nodeFs.writeFileSync(vscode, `{ "servers": { "docs": { "url": "https://x" } }`)
      expect(yield* Effect.flip(McpTools.loadConfig({ workspace }))).toMatchObject({ message: `MCP config ${vscode} is not valid JSON` })
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.effect("a file of neither shape, and a bad VS Code entry, are errors naming the file's own fields", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const neither = nodePath.join(dir, "neither.json")
      writeJson(neither, { tools: {} })
      const bad = nodePath.join(dir, "bad.json")
      writeJson(bad, { servers: { x: { type: "http" } } })
      expect(yield* Effect.flip(McpTools.loadConfig({ files: [neither] }))).toMatchObject({
        message: `Invalid MCP config ${neither}: expected "mcpServers" (Claude Code, Cursor, Windsurf) or "servers" (VS Code)`
      })
      expect(yield* Effect.flip(McpTools.loadConfig({ files: [bad] }))).toMatchObject({ field: "servers.x.url" })
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.effect("entries with only url (or Windsurf's serverUrl) are http servers; disabled ones are not started", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = nodePath.join(dir, "mcp.json")
      writeJson(file, {
        mcpServers: {
          cursor: { url: "https://example.invalid/mcp", headers: { Authorization: "Bearer ${TOKEN}" } },
          windsurf: { serverUrl: "https://example.invalid/windsurf" },
          off: { command: "/nonexistent/server", disabled: true }
        }
      })
      const servers = yield* McpTools.loadConfig({ files: [file] })
      expect(servers["cursor"]).toMatchObject({ type: "http", url: "https://example.invalid/mcp" })
      expect(servers["windsurf"]).toMatchObject({ type: "http", url: "https://example.invalid/windsurf" })
      const logs = captureLogs()
      const tools = yield* connectAll({ off: servers["off"]! }).pipe(Effect.provide(logs.layer))
      expect([tools, logs.warnings()]).toEqual([[], []])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})

describe("HTTP+SSE servers", () => {
  it.live("an entry with only url reaches a server that speaks only HTTP+SSE after its 4xx; \"type\": \"sse\" goes there directly; headers carry ${VAR}", () =>
    Effect.gen(function*() {
      const server = yield* startSse({ authorization: "Bearer sse-secret-1234" })
      const headers = { Authorization: "Bearer ${SSE_TOKEN}" }
      const env = { SSE_TOKEN: "sse-secret-1234" }
      const fallback = yield* connect("everything", decoded({ type: "http", url: server.url, headers }), { env })
      expect([fallback.transport, fallback.version]).toEqual(["sse", "2025-11-25"])
      expect(server.requests.slice(0, 2)).toEqual(["POST /sse", "GET /sse"])
      const tools = yield* McpTools.tools({ everything: { url: server.url, headers } }, { env, onServerFailure: "fail" })
      expect(yield* call(tools, "echo", { message: "over SSE" })).toEqual({ content: "Echo: over SSE" })
      const before = server.requests.length
      const direct = yield* connect("everything", decoded({ type: "sse", url: server.url, headers }), { env })
      expect(direct.transport).toBe("sse")
      expect(server.requests.slice(before)[0]).toBe("GET /sse")
      // the wrong credentials are a 401, which is not taken for an older server
      const refused = yield* Effect.flip(connect("everything", decoded({ type: "http", url: server.url }), {}))
      expect(refused.message).toMatch(/^MCP server "everything" failed to start: MCP HTTP status 401/)
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(NodeServices.layer, SecretsLive.layer()))))
})

describe("what a stdio server inherits", () => {
  it.live("the proxy, CA and npm registry variables of this process (any case), and none of its keys or npm tokens", () =>
    Effect.gen(function*() {
      const given: Record<string, string> = {
        HTTPS_PROXY: "http://proxy.example:3128",
        http_proxy: "http://proxy.example:3128",
        no_proxy: "localhost,127.0.0.1",
        NODE_EXTRA_CA_CERTS: "/etc/ssl/corp-ca.pem",
        SSL_CERT_FILE: "/etc/ssl/corp-bundle.pem",
        SSL_CERT_DIR: "/etc/ssl/certs",
        REQUESTS_CA_BUNDLE: "/etc/ssl/corp-bundle.pem",
        npm_config_registry: "https://npm.corp.example/",
        NPM_CONFIG_CAFILE: "/etc/ssl/corp-ca.pem",
        "npm_config_@corp:registry": "https://npm.corp.example/corp/",
        npm_config_https_proxy: "http://proxy.example:3128"
      }
      const hidden: Record<string, string> = {
        OPENAI_API_KEY: "sk-must-not-reach-servers",
        ANTHROPIC_API_KEY: "sk-ant-must-not-reach-servers",
        "npm_config_//npm.corp.example/:_authToken": "npm-token-must-not-reach-servers",
        AWS_SECRET_ACCESS_KEY: "aws-must-not-reach-servers"
      }
      const all = { ...given, ...hidden }
      const saved = Object.fromEntries(Object.keys(all).map((name) => [name, process.env[name]]))
      yield* Effect.acquireRelease(
        Effect.sync(() => Object.assign(process.env, all)),
        () =>
          Effect.sync(() => {
            for (const [name, value] of Object.entries(saved)) {
              if (value === undefined) delete process.env[name]
              else process.env[name] = value
            }
          })
      )
      const tools = yield* McpTools.tools({ everything: { command: node, args: [npmServer("server-everything"), "stdio"] } }, { onServerFailure: "fail" })
      const seen = (yield* call(tools, "get-env", {})).content
      for (const [name, value] of Object.entries(given)) expect(seen).toContain(`"${name}": "${value}"`)
      for (const value of Object.values(hidden)) expect(seen).not.toContain(value)
      expect(Object.keys(hidden).filter(isInherited)).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})

describe("a server that does not start", () => {
  it.effect("on a timeout, the warning says it was still running and what it printed", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      const logs = captureLogs()
      const connecting = yield* McpTools.tools(
        { stuck: testServer(log, { MCP_TEST_MODE: "waiting" }, { startupTimeout: "10 seconds" }) }
      ).pipe(Effect.provide(logs.layer), Effect.forkChild)
      // the server has written its lines when it logs the initialize it will not answer
      yield* untilLogged(log, (line) => line.startsWith("initialize"))
      yield* TestClock.adjust("10 seconds")
      expect(yield* Fiber.join(connecting)).toEqual([])
      const [warning] = logs.warnings()
      expect(warning).toMatch(
        /^MCP server "stuck" did not start within 10s: it was still running \(now stopped\); raise startupTimeout or MCP_TIMEOUT if it needs longer; it printed the lines below; skipped\n/
      )
      expect(warning).toContain("\n  stderr: npm warn fetch GET https://registry.example/ failed: UNABLE_TO_GET_ISSUER_CERT_LOCALLY\n  stderr: npm warn retrying in 10 seconds")
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})
