/**
 * MCP protocol revisions: the client offers the newest it knows and goes on in whichever one the
 * server answers with, over stdio and Streamable HTTP; a revision neither side shares is a clear
 * error naming both.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as nodePath from "node:path"
import { McpTools } from "effect-agent-loop"
import { call, logLines, testServer, tempDir } from "../support/mcpServerKit.ts"
import * as HttpMcp from "../support/mcpHttpServer.ts"

const initializes = (log: string) => logLines(log).filter((line) => line.startsWith("initialize "))

describe("McpTools: protocol negotiation over stdio", () => {
  it.live("a server of any supported revision is used in its own revision, after one handshake", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      for (const version of ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]) {
        const log = nodePath.join(dir, version)
        const tools = yield* McpTools.tools({ s: testServer(log, { MCP_TEST_VERSIONS: version }) }, { onServerFailure: "fail" })
        expect(tools.map((t) => t.name), version).toEqual(["lookup", "put"])
        expect(yield* call(tools, "lookup", { key: "b" }), version).toEqual({ content: "b=beta" })
        expect(initializes(log), version).toEqual(["initialize 2025-11-25"])
      }
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("a server that refuses the offered revision but names one it speaks is asked again in that one", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      const tools = yield* McpTools.tools(
        { s: testServer(log, { MCP_TEST_VERSIONS: "2024-11-05", MCP_TEST_REFUSE: "1" }) },
        { onServerFailure: "fail" }
      )
      expect(yield* call(tools, "lookup", { key: "a" })).toEqual({ content: "a=alpha" })
      expect(initializes(log)).toEqual(["initialize 2025-11-25", "initialize 2024-11-05"])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("no shared revision: the error names the server's and the client's versions", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const answered = yield* Effect.flip(McpTools.tools(
        { future: testServer(nodePath.join(dir, "a"), { MCP_TEST_VERSIONS: "2099-01-01" }) },
        { onServerFailure: "fail" }
      ))
      expect(answered.message).toBe(
        "MCP server \"future\" failed to start: the server speaks MCP version 2099-01-01; this client supports " +
          "2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 (offered 2025-11-25)"
      )
      const refused = yield* Effect.flip(McpTools.tools(
        { future: testServer(nodePath.join(dir, "b"), { MCP_TEST_VERSIONS: "2099-01-01", MCP_TEST_REFUSE: "1" }) },
        { onServerFailure: "fail" }
      ))
      expect(refused.message).toBe(
        "MCP server \"future\" failed to start: the server refused MCP version 2025-11-25 (Unsupported protocol version); " +
          "this client supports 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05"
      )
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})

describe("McpTools: Streamable HTTP", () => {
  it.live("a server of an older revision gets a fresh session in its revision; every later request names it", () =>
    Effect.gen(function*() {
      const server = yield* HttpMcp.start(["2025-03-26"])
      const tools = yield* McpTools.tools({ remote: { type: "http", url: server.url } }, { onServerFailure: "fail" })
      expect(yield* call(tools, "lookup", { key: "k" })).toEqual({ content: "k=value" })
      const requests = server.requests
      expect(requests.map((r) => `${r.httpMethod} ${r.method ?? ""}`.trim())).toEqual([
        "POST initialize",
        "DELETE",
        "POST initialize",
        "POST notifications/initialized",
        "POST tools/list",
        "POST tools/call"
      ])
      expect(requests.slice(3).map((r) => r.headers["mcp-protocol-version"])).toEqual(["2025-03-26", "2025-03-26", "2025-03-26"])
      // No trace context goes to a third-party server.
      expect(requests.some((r) => r.headers["traceparent"] !== undefined)).toBe(false)
    }).pipe(Effect.withSpan("caller"), Effect.scoped, Effect.provide(Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici))))

  it.live("a server of the newest revision keeps the first session; without an HttpClient in context, fetch is used", () =>
    Effect.gen(function*() {
      const server = yield* HttpMcp.start(["2025-11-25", "2025-06-18"])
      const tools = yield* McpTools.tools({ remote: { type: "http", url: server.url } }, { onServerFailure: "fail" })
      expect(yield* call(tools, "lookup", { key: "z" })).toEqual({ content: "z=value" })
      expect(server.requests.map((r) => r.method)).toEqual(["initialize", "notifications/initialized", "tools/list", "tools/call"])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("\"type\": \"sse\" (the older transport) is tried, and an unreachable one is an error naming its stream", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(McpTools.tools({ old: { type: "sse", url: "http://127.0.0.1:9/sse" } }, { onServerFailure: "fail" }))
      expect(error.message).toMatch(/^MCP server "old" failed to start: MCP SSE stream failed to open: .*GET http:\/\/127\.0\.0\.1:9\/sse/)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})
