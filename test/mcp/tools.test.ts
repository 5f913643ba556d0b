import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Schema, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { AgentLoop, AgentLoopLive, McpTools, Message, Scripted, SessionStoreMemory, Tool, ToolRegistry, ToolRegistryLive } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { byName, call, isAlive, logLines, pidOf, serverConfig, tempDir } from "../support/mcpServerKit.ts"

describe("McpTools: discovery and calls", () => {
  it.live("lists the server's tools with their descriptions, JSON Schemas and read-only flags", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      const tools = yield* McpTools.tools({ store: serverConfig(log) })
      expect(tools.map((t) => [t.name, t.readOnly, t.description])).toEqual([
        ["lookup", true, "Reads a value by key"],
        ["put", false, "Stores a value under a key"]
      ])
      expect(byName(tools, "lookup").definition.parameters).toEqual({
        type: "object",
        properties: { key: { type: "string" }, barrier: { type: "integer" } },
        required: ["key"]
      })
      expect(byName(tools, "put").definition).toMatchObject({
        name: "put",
        parameters: { required: ["key", "value"] }
      })
      // Arguments must be an object; their shape is the server's to check.
      expect(Exit.isFailure(yield* Effect.exit(byName(tools, "put").decode("not an object")))).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("calls tools with arguments and maps text and non-text content", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      process.env.MCP_TEST_PARENT_ONLY = "parent secret"
      const tools = yield* McpTools.tools({ store: serverConfig(log, { GIVEN_TOKEN: "given" }) }).pipe(
        Effect.ensuring(Effect.sync(() => delete process.env.MCP_TEST_PARENT_ONLY))
      )
      expect(yield* call(tools, "lookup", { key: "a" })).toEqual({ content: "a=alpha" })
      expect(yield* call(tools, "put", { key: "c", value: "gamma" })).toEqual({ content: "stored c" })
      expect(yield* call(tools, "lookup", { key: "c" })).toEqual({ content: "c=gamma" })
      // An image reaches the model as an image part; its text view (for text-only models) is the
      // summary, whose size is of the decoded data, not of its base64 text.
      const picture = yield* call(tools, "lookup", { key: "picture" })
      expect(picture).toEqual({
        content: [
          { type: "text", text: "a picture:" },
          { type: "image", mediaType: "image/png", data: Buffer.from("not really a png").toString("base64") }
        ]
      })
      expect(Message.textOf(picture.content)).toBe("a picture:\n[image image/png, 16 bytes]")
      expect(yield* call(tools, "lookup", { key: "blob" })).toEqual({
        content: "[resource file:///data.bin application/octet-stream, 5 bytes]"
      })
      // The configured env reaches the server; the parent's own variables (API keys) do not.
      expect(yield* call(tools, "lookup", { key: "env:GIVEN_TOKEN" })).toEqual({ content: "given" })
      expect(yield* call(tools, "lookup", { key: "env:MCP_TEST_PARENT_ONLY" })).toEqual({ content: "(unset)" })
      expect(logLines(log).filter((l) => !l.startsWith("ready"))).toContain("start put c")
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("isError results are error outputs; JSON-RPC errors and a dead server are ToolErrors", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      const tools = yield* McpTools.tools({ store: serverConfig(log) })
      expect(yield* call(tools, "put", { key: "!x", value: "v" })).toEqual({ content: "key !x is reserved", isError: true })

      const rpcError = yield* Effect.flip(call(tools, "put", { key: 5, value: "v" }))
      expect(rpcError._tag).toBe("ToolError")
      expect(rpcError.message).toBe(`MCP server "store" tool "put" failed: key must be a string (code -32602)`)

      const died = yield* Effect.flip(call(tools, "put", { key: "__exit__", value: "v" }))
      expect(died.message).toMatch(/^MCP server "store" tool "put" failed: MCP (process exited \(3\)|server closed stdout)/)
      const after = yield* Effect.flip(call(tools, "lookup", { key: "a" }))
      expect(after.message).toMatch(/^MCP server "store" tool "lookup" failed: MCP/)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})

describe("McpTools: naming", () => {
  const builtin = Tool.make({
    name: "lookup",
    description: "A built-in of the same name",
    parameters: Schema.Struct({}),
    execute: () => Effect.succeed("built-in")
  })

  it.live("a name offered by two servers, or already registered, is qualified as server__tool", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const two = yield* McpTools.tools({
        one: serverConfig(nodePath.join(dir, "one")),
        two: serverConfig(nodePath.join(dir, "two"))
      })
      expect(two.map((t) => t.name)).toEqual(["one__lookup", "one__put", "two__lookup", "two__put"])
      expect(yield* call(two, "two__lookup", { key: "b" })).toEqual({ content: "b=beta" })

      const always = yield* McpTools.tools({ kv: serverConfig(nodePath.join(dir, "kv")) }, { prefix: "always" })
      expect(always.map((t) => t.name)).toEqual(["kv__lookup", "kv__put"])

      const names = yield* Effect.gen(function*() {
        return (yield* (yield* ToolRegistry).list).map((t) => t.name)
      }).pipe(Effect.provide(
        McpTools.layer({ kv: serverConfig(nodePath.join(dir, "reg")) }).pipe(
          Layer.provideMerge(ToolRegistryLive.layer([builtin])),
          Layer.provide(NodeServices.layer)
        )
      ))
      expect(names).toEqual(["lookup", "kv__lookup", "put"])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})

describe("McpTools: configuration", () => {
  it.live("a bad entry fails with ConfigError naming the field, without echoing env values", () =>
    Effect.gen(function*() {
      const noCommand = yield* Effect.flip(McpTools.tools({ x: { args: ["a"] } as never }))
      expect(noCommand).toMatchObject({ _tag: "ConfigError", field: "mcpServers.x.command" })

      const badArgs = yield* Effect.flip(McpTools.tools({ x: { command: "node", args: "a b" } as never }))
      expect(badArgs).toMatchObject({ _tag: "ConfigError", field: "mcpServers.x.args" })

      const badEnv = yield* Effect.flip(McpTools.tools({ x: { command: "node", env: { TOKEN: 12345678 } } as never }))
      expect(badEnv).toMatchObject({ _tag: "ConfigError", field: "mcpServers.x.env.TOKEN" })
      expect(badEnv.message).not.toContain("12345678")
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("layerFromConfigFile reads the common mcpServers format and reports bad files", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const log = nodePath.join(dir, "log")
      const file = (name: string, text: string) => {
        const path = nodePath.join(dir, name)
        nodeFs.writeFileSync(path, text)
        return path
      }
      const namesFrom = (path: string) =>
        Effect.gen(function*() {
          return (yield* (yield* ToolRegistry).list).map((t) => t.name)
        }).pipe(Effect.provide(
          McpTools.layerFromConfigFile(path).pipe(Layer.provideMerge(ToolRegistryLive.layer([])), Layer.provide(NodeServices.layer))
        ))

      const good = file("good.json", JSON.stringify({ mcpServers: { store: serverConfig(log) } }))
      expect(yield* namesFrom(good)).toEqual(["lookup", "put"])

      const badField = yield* Effect.flip(namesFrom(file("bad.json", JSON.stringify({ mcpServers: { s: { command: 3 } } }))))
      expect(badField).toMatchObject({ _tag: "ConfigError", field: "mcpServers.s.command" })
      expect(badField.message).toContain("bad.json")

      const noServers = yield* Effect.flip(namesFrom(file("empty.json", "{}")))
      expect(noServers).toMatchObject({ _tag: "ConfigError", field: "mcpServers" })

      const notJson = yield* Effect.flip(namesFrom(file("broken.json", "{\"mcpServers\": {\"s\": {\"env\": {\"K\": \"secret-value\"")))
      expect(notJson).toMatchObject({ _tag: "ConfigError", field: "mcpServers" })
      expect(notJson.message).not.toContain("secret-value")

      const missing = yield* Effect.flip(namesFrom(nodePath.join(dir, "missing.json")))
      expect(missing).toMatchObject({ _tag: "ConfigError", field: "mcpServers" })
      expect(missing.message).toContain("missing.json")
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("with onServerFailure: \"fail\", a server that cannot start fails the call with McpError naming it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(McpTools.tools({ ghost: { command: "/nonexistent/mcp-server-binary" } }, { onServerFailure: "fail" }))
      expect(error).toMatchObject({ _tag: "McpError", server: "ghost" })
      expect(error.message).toMatch(/^MCP server "ghost" failed to start: /)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})

describe("McpTools: lifetime", () => {
  it.live("closing the layer's scope unregisters the tools and stops the server", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      const registry = yield* ToolRegistry
      const scope = yield* Scope.make()
      yield* Layer.buildWithScope(
        McpTools.layer({ store: serverConfig(log) }).pipe(
          Layer.provide(Layer.succeed(ToolRegistry, registry)),
          Layer.provide(NodeServices.layer)
        ),
        scope
      )
      const pid = pidOf(log)
      expect(isAlive(pid)).toBe(true)
      expect((yield* registry.list).map((t) => t.name)).toEqual(["lookup", "put"])
      yield* Scope.close(scope, Exit.void)
      expect(yield* registry.list).toEqual([])
      expect(isAlive(pid)).toBe(false)
    }).pipe(Effect.scoped, Effect.provide(ToolRegistryLive.layer([]))))

  it.effect("a server that ignores the closed stdin is killed after the grace period on the Clock", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      const scope = yield* Scope.make()
      const tools = yield* McpTools.tools({ stubborn: serverConfig(log, { MCP_TEST_IGNORE_EOF: "1" }) }).pipe(
        Effect.provide(NodeServices.layer),
        Scope.provide(scope)
      )
      expect(tools).toHaveLength(2)
      const pid = pidOf(log)
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      // Let the finalizer close stdin and start waiting; the process must outlive the closed stdin.
      for (let i = 0; i < 50; i++) yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      expect(isAlive(pid)).toBe(true)
      expect(closing.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("5 seconds")
      yield* Fiber.join(closing)
      expect(isAlive(pid)).toBe(false)
    }).pipe(Effect.scoped))
})

describe("McpTools: in a turn", () => {
  const script: Scripted.Script = [
    {
      toolCalls: [
        { name: "lookup", arguments: { key: "a", barrier: 2 } },
        { name: "lookup", arguments: { key: "b", barrier: 2 } },
        { name: "put", arguments: { key: "c", value: "gamma" } }
      ]
    },
    { content: "done" }
  ]

  const loop = (log: string) =>
    AgentLoopLive.layer({ model: "test-model" }).pipe(
      Layer.provideMerge(Layer.mergeAll(
        Scripted.layer(script),
        // `put` is mutating, so it needs approval unless the config allows it (this test is about grouping).
        McpTools.layer({ store: serverConfig(log, {}, { allow: ["put"] }) }).pipe(Layer.provideMerge(ToolRegistryLive.layer([]))),
        SessionStoreMemory.layer()
      )),
      Layer.provide(NodeServices.layer)
    )

  it.live("read-only MCP calls overlap in one group; the mutating call runs after them, alone", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      yield* Effect.gen(function*() {
        const events = (yield* Testing.recordEvents).all
        const result = yield* (yield* AgentLoop).turn("s1", "look things up, then store one")
        expect(result.status).toBe("completed")
        expect(result.finalMessage?.content).toBe("done")
        expect(result.messages.filter((m) => m.role === "tool").map((m) => [m.toolName, m.content, m.isError ?? false]))
          .toEqual([["lookup", "a=alpha", false], ["lookup", "b=beta", false], ["put", "stored c", false]])
        const requests = yield* Testing.requests
        expect(requests[0]!.tools.map((t) => t.name)).toEqual(["lookup", "put"])
        expect(requests[0]!.tools[0]!.parameters).toMatchObject({ required: ["key"] })
        const execs = (yield* events).flatMap((e) =>
          e._tag === "ToolExecStart" ? [`start ${e.toolName}`] : e._tag === "ToolExecEnd" ? [`end ${e.toolName}`] : []
        )
        expect(execs).toEqual(["start lookup", "start lookup", "end lookup", "end lookup", "start put", "end put"])
      }).pipe(Effect.provide(loop(log)))
      // The server saw both lookups start before either ended (the barrier was met, not timed
      // out, so the calls overlapped), and the put only after both had ended.
      const calls = logLines(log).filter((line) => line.startsWith("start ") || line.startsWith("end "))
      expect(new Set(calls.slice(0, 2))).toEqual(new Set(["start lookup a", "start lookup b"]))
      expect(new Set(calls.slice(2, 4))).toEqual(new Set(["end lookup a", "end lookup b"]))
      expect(calls.slice(4)).toEqual(["start put c", "end put c"])
    }).pipe(Effect.scoped))

  it.live("an MCP image reaches a model that accepts images as an image, a text-only model as the summary of before", () =>
    Effect.gen(function*() {
      const log = nodePath.join(yield* tempDir, "log")
      const layer = AgentLoopLive.layer({ model: "gpt-4o" }).pipe(
        Layer.provideMerge(Layer.mergeAll(
          Scripted.layer([{ toolCalls: [{ name: "lookup", arguments: { key: "picture" } }] }, { content: "a picture" }, { content: "still" }]),
          McpTools.layer({ store: serverConfig(log, {}) }).pipe(Layer.provideMerge(ToolRegistryLive.layer([]))),
          SessionStoreMemory.layer()
        )),
        Layer.provide(NodeServices.layer)
      )
      yield* Effect.gen(function*() {
        const loop = yield* AgentLoop
        yield* loop.turn("s", "show me the picture")
        yield* loop.turn("s", "and now?", { model: "o3-mini" })
        const requests = yield* Testing.requests
        const resultIn = (index: number) => requests[index]!.messages.find((m) => m.role === "tool")!.content
        const png = Buffer.from("not really a png").toString("base64")
        expect(resultIn(1)).toEqual([Message.text("a picture:"), Message.image("image/png", png)])
        expect(resultIn(2)).toBe("a picture:\n[image image/png, 16 bytes]")
      }).pipe(Effect.provide(layer))
    }).pipe(Effect.scoped))
})
