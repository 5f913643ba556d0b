/**
 * MCP tools and the user's approval: a tool runs without asking only when its server marks it
 * read-only or the user's config says so; filters decide which tools the model sees at all.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as nodePath from "node:path"
import { AgentLoop, AgentLoopLive, Hook, McpTools, Scripted, SessionStoreMemory, ToolRegistryLive } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { logLines, serverConfig, testServer, tempDir } from "../support/mcpServerKit.ts"

const approvals = (tools: ReadonlyArray<{ readonly name: string; readonly requiresApproval: boolean }>) =>
  Object.fromEntries(tools.map((tool) => [tool.name, tool.requiresApproval]))

describe("McpTools: approval", () => {
  it.live("by default a tool needs approval unless the server marks it readOnlyHint: true", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      expect(approvals(yield* McpTools.tools({ store: serverConfig(log) }))).toEqual({ lookup: false, put: true })
      // A server of the 2024-11-05 revision cannot mark anything read-only: everything is asked about.
      const old = yield* McpTools.tools({ old: testServer(`${log}-old`, { MCP_TEST_VERSIONS: "2024-11-05" }) })
      expect(approvals(old)).toEqual({ lookup: true, put: true })
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("a tool is idempotent (run again after a crash cut its call short) only when its server marks it idempotentHint or readOnlyHint", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      const tools = yield* McpTools.tools({ store: serverConfig(log) })
      expect(Object.fromEntries(tools.map((tool) => [tool.name, tool.idempotent]))).toEqual({ lookup: true, put: false })
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("approve always/never, allow and deny per server; deny wins over allow", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const with_ = (name: string, extra: Partial<McpTools.McpServerConfigInput>) =>
        McpTools.tools({ [name]: serverConfig(nodePath.join(dir, name), {}, extra) })
      expect(approvals(yield* with_("always", { approve: "always" }))).toEqual({ lookup: true, put: true })
      expect(approvals(yield* with_("never", { approve: "never" }))).toEqual({ lookup: false, put: false })
      expect(approvals(yield* with_("allow", { allow: ["p*"] }))).toEqual({ lookup: false, put: false })
      expect(approvals(yield* with_("allowAlways", { approve: "always", allow: ["lookup"] }))).toEqual({ lookup: false, put: true })
      expect(approvals(yield* with_("deny", { deny: ["put"], allow: ["put"] }))).toEqual({ lookup: false })
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("the enable filter names tools as server__tool or server__*; an empty filter enables none", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const servers = { one: serverConfig(nodePath.join(dir, "one")), two: serverConfig(nodePath.join(dir, "two")) }
      const names = (enable: ReadonlyArray<string>) =>
        McpTools.tools(servers, { enable }).pipe(Effect.map((tools) => tools.map((tool) => tool.name)))
      expect(yield* names(["two__lookup"])).toEqual(["lookup"])
      // Names the model sees are qualified only where they collide among the enabled tools.
      expect(yield* names(["one__*", "two__put"])).toEqual(["lookup", "one__put", "two__put"])
      expect(yield* names([])).toEqual([])
      expect(yield* names(["*"])).toHaveLength(4)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})

describe("McpTools: approval in a turn", () => {
  const script: Scripted.Script = [
    { toolCalls: [{ name: "put", arguments: { key: "c", value: "gamma" } }, { name: "lookup", arguments: { key: "a" } }] },
    { content: "done" }
  ]
  const loop = (log: string) =>
    AgentLoopLive.layer({ model: "test-model" }).pipe(
      Layer.provideMerge(Layer.mergeAll(
        Scripted.layer(script),
        McpTools.layer({ store: serverConfig(log) }).pipe(Layer.provideMerge(ToolRegistryLive.layer([]))),
        SessionStoreMemory.layer()
      )),
      Layer.provide(NodeServices.layer)
    )

  it.live("with nobody to approve, a mutating MCP call is denied and never reaches the server; a read-only one runs", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      yield* Effect.gen(function*() {
        const events = (yield* Testing.recordEvents).all
        const result = yield* (yield* AgentLoop).turn("s", "store c")
        expect(result.messages.filter((m) => m.role === "tool").map((m) => [m.toolName, m.content, m.isError ?? false])).toEqual([
          ["put", expect.stringMatching(/^Tool execution denied by approval/), true],
          ["lookup", "a=alpha", false]
        ])
        expect((yield* events).filter((e) => e._tag === "ToolExecSkipped").map((e) => e._tag === "ToolExecSkipped" && e.toolName)).toEqual(["put"])
      }).pipe(Effect.provide(loop(log)))
      expect(logLines(log).filter((line) => line.startsWith("start "))).toEqual(["start lookup a"])
    }).pipe(Effect.scoped))

  it.live("an approver that says yes lets the mutating call run", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      yield* Effect.gen(function*() {
        const agent = yield* AgentLoop
        const asked: Array<string> = []
        yield* agent.registerHook(Hook.make({ approveTool: ({ call }) => (asked.push(call.name), Hook.approve) }), { name: "yes" })
        const result = yield* agent.turn("s", "store c")
        expect(result.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual(["stored c", "a=alpha"])
        expect(asked).toEqual(["put"])
      }).pipe(Effect.provide(loop(log)))
      expect(logLines(log)).toContain("start put c")
    }).pipe(Effect.scoped))
})
