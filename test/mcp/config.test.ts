/**
 * MCP configuration: the schema's errors, `${VAR}` expansion, and where servers come from (config
 * files and a workspace's `.mcp.json`).
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { McpTools, SecretsLive, ToolRegistry, ToolRegistryLive } from "effect-agent-loop"
import { call, captureLogs, serverConfig, tempDir, testServer } from "../support/mcpServerKit.ts"

const write = (dir: string, name: string, value: unknown) => {
  const path = nodePath.join(dir, name)
  nodeFs.writeFileSync(path, typeof value === "string" ? value : JSON.stringify(value))
  return path
}

describe("MCP config: schema", () => {
  it.effect("http and sse entries are checked by their own fields; an unknown type names the known ones", () =>
    Effect.gen(function*() {
      const error = (servers: unknown) => Effect.flip(McpTools.tools(servers as never))
      expect(yield* error({ x: { type: "http" } })).toMatchObject({ field: "mcpServers.x.url", message: expect.stringContaining("Missing key") })
      expect(yield* error({ x: { type: "ws", url: "ws://x" } })).toMatchObject({
        field: "mcpServers.x.type",
        message: "Invalid MCP config at mcpServers.x.type: Expected \"stdio\", \"http\" or \"sse\""
      })
      expect(yield* error({ x: { command: "n", approve: "sometimes" } })).toMatchObject({ field: "mcpServers.x.approve" })
      expect(yield* error({ x: { command: "n", deny: "put" } })).toMatchObject({ field: "mcpServers.x.deny" })
      expect(yield* error({ x: { command: "n", maxOutputBytes: 0 } })).toMatchObject({ field: "mcpServers.x.maxOutputBytes" })
      expect(yield* error({ x: { command: "n", startupTimeout: "soonish" } })).toMatchObject({ field: "mcpServers.x.startupTimeout" })
      const header = yield* error({ x: { type: "http", url: "http://h", headers: { Authorization: 12345678901 } } })
      expect(header).toMatchObject({ field: "mcpServers.x.headers.Authorization" })
      expect(header.message).not.toContain("12345678901")
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})

describe("MCP config: ${VAR} expansion", () => {
  it.live("${VAR} and ${VAR:-default} are expanded in args and env (and env values are secrets)", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      const config = testServer(log, { MCP_TEST_VERSIONS: "${VERSION:-2024-11-05}" }, {
        env: { MCP_TEST_LOG: log, GIVEN_TOKEN: "${TOKEN}", SHORT: "${UNSET:-dflt}" }
      })
      const tools = yield* McpTools.tools({ store: config }, { env: { TOKEN: "tok_abcdefgh12345" } })
      // The default reached the server as an argument: it speaks 2024-11-05, so nothing is marked read-only.
      expect(tools.map((t) => t.requiresApproval)).toEqual([true, true])
      expect(yield* call(tools, "lookup", { key: "env:SHORT" })).toEqual({ content: "dflt" })
      // The expanded token reached the server, and is scrubbed when the server echoes it.
      expect(yield* call(tools, "lookup", { key: "env:GIVEN_TOKEN" })).toEqual({ content: "<redacted>" })
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(NodeServices.layer, SecretsLive.layer()))))

  it.live("a variable with no value and no default skips that server with a warning naming it and the field", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const logs = captureLogs()
      const tools = yield* McpTools.tools({
        needsToken: serverConfig(nodePath.join(dir, "a"), { GIVEN_TOKEN: "Bearer ${GITHUB_TOKEN}" }),
        fine: serverConfig(nodePath.join(dir, "b"))
      }, { env: {} }).pipe(Effect.provide(logs.layer))
      expect(tools.map((t) => t.name)).toEqual(["lookup", "put"])
      expect(logs.warnings()).toEqual([
        "MCP server \"needsToken\" cannot start: environment variable GITHUB_TOKEN is not set (used in env.GIVEN_TOKEN); skipped"
      ])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})

describe("MCP config: sources", () => {
  const registered = (sources: McpTools.McpSources) =>
    Effect.gen(function*() {
      return (yield* (yield* ToolRegistry).list).map((tool) => tool.name)
    }).pipe(Effect.provide(McpTools.layerFromSources(sources, { prefix: "always" }).pipe(
      Layer.provideMerge(ToolRegistryLive.layer([])),
      Layer.provide(NodeServices.layer)
    )))

  it.live("a workspace's .mcp.json is read only when the workspace is passed; a file given explicitly overrides a server of the same name", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const workspace = nodePath.join(dir, "ws")
      nodeFs.mkdirSync(workspace)
      write(workspace, ".mcp.json", { mcpServers: { project: serverConfig(nodePath.join(dir, "p")), shared: serverConfig(nodePath.join(dir, "s1")) } })
      const extra = write(dir, "extra.json", { mcpServers: { shared: serverConfig(nodePath.join(dir, "s2"), {}, { deny: ["put"] }) } })
      expect(yield* McpTools.findWorkspaceConfig(workspace)).toEqual(Option.some(nodePath.join(workspace, ".mcp.json")))
      expect(yield* McpTools.findWorkspaceConfig(dir)).toEqual(Option.none())
      expect(yield* registered({ files: [extra] })).toEqual(["shared__lookup"])
      const logs = captureLogs()
      expect(yield* registered({ files: [extra], workspace }).pipe(Effect.provide(logs.layer)))
        .toEqual(["project__lookup", "project__put", "shared__lookup"])
      expect(logs.lines.filter((l) => l.level === "Info").map((l) => l.text))
        .toEqual([`MCP servers from ${nodePath.join(workspace, ".mcp.json")}: project, shared`])
      // No .mcp.json: nothing to read, nothing fails.
      expect(yield* registered({ workspace: dir })).toEqual([])
      const badWorkspace = nodePath.join(dir, "bad")
      nodeFs.mkdirSync(badWorkspace)
      write(badWorkspace, ".mcp.json", { mcpServers: { x: { command: 1 } } })
      const bad = yield* Effect.flip(registered({ workspace: badWorkspace }))
      expect(bad).toMatchObject({ _tag: "ConfigError", field: "mcpServers.x.command", message: expect.stringContaining(".mcp.json") })
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})
