/**
 * Servers nobody in this project wrote, installed from npm: `server-filesystem` and
 * `server-everything` (current SDK) and `server-brave-search` (SDK 1.0, protocol 2024-11-05).
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { pathToFileURL } from "node:url"
import { AgentLoop, AgentLoopLive, McpTools, Message, Scripted, SessionStoreMemory, ToolRegistryLive } from "effect-agent-loop"
import { byName, call, captureLogs, npmServer, tempDir } from "../support/mcpServerKit.ts"

const filesystem = (root: string): McpTools.McpServerConfigInput => ({ command: process.execPath, args: [npmServer("server-filesystem"), root] })

describe("@modelcontextprotocol/server-filesystem", () => {
  it.live("reading tools run without approval and again on a resume, writing ones need it; a 3 MB file is cut to the output cap", () =>
    Effect.gen(function*() {
      const root = nodeFs.realpathSync(yield* tempDir)
      const big = nodePath.join(root, "big.txt")
      nodeFs.writeFileSync(big, "0123456789abcdef\n".repeat(185_000))
      const tools = yield* McpTools.tools({ fs: filesystem(root) }, { onServerFailure: "fail" })
      const needs = (name: string) => byName(tools, name).requiresApproval
      expect([needs("read_text_file"), needs("list_directory"), needs("search_files")]).toEqual([false, false, false])
      expect([needs("write_file"), needs("edit_file"), needs("move_file"), needs("create_directory")]).toEqual([true, true, true, true])
      // its reading tools say only readOnlyHint (idempotentHint counts only on tools that write): they run again on a resume
      const idempotent = (name: string) => byName(tools, name).idempotent
      expect([idempotent("read_text_file"), idempotent("list_directory"), idempotent("write_file")]).toEqual([true, true, true])
      expect([idempotent("edit_file"), idempotent("move_file")]).toEqual([false, false])
      const read = yield* call(tools, "read_text_file", { path: big })
      expect(read.content.length).toBeLessThan(70_000)
      expect(read.content).toMatch(/\n\[output truncated: showing the first 65536 of 3145000 bytes; 3079464 bytes were cut\. /)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("in a turn with nobody to approve, write_file is denied and writes nothing", () =>
    Effect.gen(function*() {
      const root = nodeFs.realpathSync(yield* tempDir)
      const target = nodePath.join(root, "pwned.txt")
      const loop = AgentLoopLive.layer({ model: "test-model" }).pipe(
        Layer.provideMerge(Layer.mergeAll(
          Scripted.layer([
            { toolCalls: [{ name: "write_file", arguments: { path: target, content: "gotcha" } }] },
            { content: "done" }
          ]),
          McpTools.layer({ fs: filesystem(root) }).pipe(Layer.provideMerge(ToolRegistryLive.layer([]))),
          SessionStoreMemory.layer()
        )),
        Layer.provide(NodeServices.layer)
      )
      const result = yield* Effect.gen(function*() {
        return yield* (yield* AgentLoop).turn("s", "write a file")
      }).pipe(Effect.provide(loop))
      expect(result.messages.find((m) => m.role === "tool")).toMatchObject({ isError: true, content: expect.stringMatching(/denied by approval/) })
      expect(nodeFs.existsSync(target)).toBe(false)
    }).pipe(Effect.scoped))
})

describe("@modelcontextprotocol/server-everything", () => {
  it.live("images reach the model as images, reported with their decoded size in the text view; the server's environment holds none of the agent's keys", () =>
    Effect.gen(function*() {
      const tools = yield* McpTools.tools(
        { everything: { command: process.execPath, args: [npmServer("server-everything"), "stdio"] } },
        { onServerFailure: "fail" }
      )
      const { MCP_TINY_IMAGE } = yield* Effect.promise(() =>
        import(pathToFileURL(npmServer("server-everything").replace(/index\.js$/, "tools/get-tiny-image.js")).href) as Promise<{ MCP_TINY_IMAGE: string }>
      )
      const bytes = Buffer.from(MCP_TINY_IMAGE, "base64").length
      expect(bytes).toBeLessThan(MCP_TINY_IMAGE.length)
      // the image reaches the model as itself; its text view (for text-only models) gives the decoded size
      const image = yield* call(tools, "get-tiny-image", {})
      expect(image.content).toContainEqual(Message.image("image/png", MCP_TINY_IMAGE))
      expect(Message.textOf(image.content)).toContain(`[image image/png, ${bytes} bytes]`)
      process.env.OPENAI_API_KEY_FOR_MCP_TEST = "sk-must-not-reach-servers"
      const env = yield* call(tools, "get-env", {}).pipe(Effect.ensuring(Effect.sync(() => delete process.env.OPENAI_API_KEY_FOR_MCP_TEST)))
      expect(env.content).toContain("PATH")
      expect(env.content).not.toContain("sk-must-not-reach-servers")
      expect(yield* call(tools, "echo", { message: "hi" })).toEqual({ content: "Echo: hi" })
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})

describe("@modelcontextprotocol/server-brave-search (SDK 1.0, protocol 2024-11-05)", () => {
  const brave = (env: Record<string, string>): McpTools.McpServerConfigInput => ({
    command: process.execPath,
    args: [npmServer("server-brave-search")],
    env
  })

  it.live("is spoken to in 2024-11-05; its tools, unmarked, need approval", () =>
    Effect.gen(function*() {
      const tools = yield* McpTools.tools({ brave: brave({ BRAVE_API_KEY: "not-a-real-key" }) }, { onServerFailure: "fail" })
      expect(tools.map((t) => [t.name, t.requiresApproval])).toEqual([["brave_web_search", true], ["brave_local_search", true]])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("without its key it exits at start: one warning with its stderr, and the other servers go on", () =>
    Effect.gen(function*() {
      const root = nodeFs.realpathSync(yield* tempDir)
      const logs = captureLogs()
      const tools = yield* McpTools.tools({ brave: brave({}), fs: filesystem(root) }).pipe(Effect.provide(logs.layer))
      expect(tools.some((t) => t.name === "read_text_file")).toBe(true)
      expect(logs.warnings()).toHaveLength(1)
      expect(logs.warnings()[0]).toMatch(/^MCP server "brave" failed to start: .*; skipped\n  stderr: Error: BRAVE_API_KEY environment variable is required$/)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})
