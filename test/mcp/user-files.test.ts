/**
 * MCP as Claude Code users have it: the servers of `~/.cursor/mcp.json` and `~/.claude.json` (its
 * user scope and the servers it keeps for the workspace), below the other sources; VS Code's
 * `envFile`; and `mcp__server__tool` accepted for a model's call and in tool filters.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, Option } from "effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { McpTools } from "effect-agent-loop"
import { loadConfigWithOrigins } from "../../src/layers/mcp/config.ts"
import { isEnabled } from "../../src/layers/mcp/policy.ts"
import * as ToolRegistry from "../../src/layers/ToolRegistry.ts"
import { call, serverConfig, tempDir } from "../support/mcpServerKit.ts"

const writeJson = (file: string, value: unknown) => {
  nodeFs.mkdirSync(nodePath.dirname(file), { recursive: true })
  nodeFs.writeFileSync(file, JSON.stringify(value))
}

describe("MCP servers of the user's other tools", () => {
  it.effect("~/.cursor/mcp.json, then ~/.claude.json's user servers, then its servers for this project, then the settings' own", () =>
    Effect.gen(function*() {
      const home = yield* tempDir
      const project = nodePath.join(home, "repo")
      const cursor = nodePath.join(home, ".cursor", "mcp.json")
      const claude = nodePath.join(home, ".claude.json")
      writeJson(cursor, { mcpServers: { a: { command: "cursor-a" }, b: { url: "https://b.example/mcp" } } })
      writeJson(claude, {
        numStartups: 40,
        mcpServers: { a: { command: "claude-a" }, c: { type: "stdio", command: "claude-c" } },
        projects: { [project]: { allowedTools: [], mcpServers: { c: { command: "local-c" } } }, "/elsewhere": { mcpServers: { d: { command: "d" } } } }
      })
      const origins = yield* loadConfigWithOrigins({ userFiles: [cursor, claude], project, servers: { b: { command: "settings-b" } } })
      expect(Object.fromEntries(Object.entries(origins).map(([name, { config, source }]) => [name, [config.type === "stdio" ? config.command : config.url, source]])))
        .toEqual({ a: ["claude-a", claude], b: ["settings-b", "inline"], c: ["local-c", claude] })
      // a broken file of another tool leaves its servers out, and the rest stands
      nodeFs.writeFileSync(claude, "{ not json")
      expect(Object.keys(yield* loadConfigWithOrigins({ userFiles: [cursor, claude], project }))).toEqual(["a", "b"])
      writeJson(claude, { mcpServers: { bad: { type: "stdio" } } })
      expect(Object.keys(yield* loadConfigWithOrigins({ userFiles: [cursor, claude, nodePath.join(home, "missing.json")], project }))).toEqual(["a", "b"])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("envFile: the server gets its variables beneath env's, ${workspaceFolder} expanded; a missing one stops the server saying so", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const log = nodePath.join(dir, "log")
      nodeFs.writeFileSync(
        nodePath.join(dir, ".env"),
        "# tokens\nexport FROM_FILE=\"a long file value\"\nGIVEN_TOKEN=file\nPLAIN=a b # comment\n\nnot a line\n"
      )
      const tools = yield* McpTools.tools(
        { store: serverConfig(log, { GIVEN_TOKEN: "env" }, { envFile: "${workspaceFolder}/.env" } as never) },
        { workspace: dir }
      )
      // its values are secrets as env's are: what the server echoes of one is scrubbed
      expect(yield* call(tools, "lookup", { key: "env:FROM_FILE" })).toEqual({ content: "<redacted>" })
      expect(yield* call(tools, "lookup", { key: "env:PLAIN" })).toEqual({ content: "a b" })
      expect(yield* call(tools, "lookup", { key: "env:GIVEN_TOKEN" })).toEqual({ content: "env" })
      // a server that cannot start is left out with a warning ("cannot start: envFile … cannot be read (ENOENT)")
      const warnings: Array<string> = []
      const missing = yield* McpTools.tools({ store: serverConfig(log, {}, { envFile: ".env.missing" } as never) }, { workspace: dir }).pipe(
        Effect.provide(Logger.layer([Logger.make(({ message }) => warnings.push(String(message)))]))
      )
      expect(missing).toEqual([])
      expect(warnings.join("\n")).toContain(`MCP server "store" cannot start: envFile ${nodePath.join(dir, ".env.missing")} cannot be read (ENOENT)`)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("mcp__server__tool: a model's call by that name reaches the tool, and --tools-style filters take Claude Code's names", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      const tools = yield* McpTools.tools({ store: serverConfig(log) })
      const registry = ToolRegistry.make(tools.map((tool) => tool))
      const found = yield* registry.get("mcp__store__lookup")
      expect(Option.map(found, (tool) => tool.mcp)).toEqual(Option.some({ server: "store", tool: "lookup" }))
      expect(Option.isNone(yield* registry.get("mcp__store__nothing"))).toBe(true)
      expect(isEnabled(["mcp__store__lookup"], "store", "lookup")).toBe(true)
      expect(isEnabled(["mcp__store__lookup"], "store", "put")).toBe(false)
      expect(isEnabled(["mcp__store"], "store", "put")).toBe(true)
      expect(isEnabled(["mcp__other"], "store", "put")).toBe(false)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})
