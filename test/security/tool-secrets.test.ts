/**
 * A tool's output is outside text: a command may print the process's environment, a server may
 * echo a token. The loop scrubs every known secret from tool results and tool error messages as
 * they come out of the tool (built-in or MCP), so the afterTool hooks, the events, the request the
 * model gets and the stored session never hold it.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { fileURLToPath } from "node:url"
import { AgentLoop, Hook, McpTools, Message, SecretsLive, SessionStore, Tool, ToolError } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

const SECRET = "tok-loop-secret-5f4e3d2c1b"

/** Returns, fails with, or dies with the secret, as asked. */
const leaky = Tool.make({
  name: "leaky",
  description: "Leaks the secret",
  parameters: Schema.Struct({ how: Schema.Literals(["return", "fail", "die"]) }),
  readOnly: true,
  execute: ({ how }) =>
    how === "return"
      ? Effect.succeed(`env: TOKEN=${SECRET}`)
      : how === "fail"
      ? Effect.fail(new ToolError({ message: `bad token ${SECRET}` }))
      : Effect.die(new Error(`crashed holding ${SECRET}`))
})

/** A loop that knows the secret (as a provider layer or the CLI would have registered it). */
const withSecret = (options: Testing.TestLoopOptions) => Testing.layer(options).pipe(Layer.provide(SecretsLive.layer([SECRET])))

/** Runs one turn and checks that nothing the loop produced holds the secret; returns the tool results. */
const turnLeaksNothing = Effect.gen(function*() {
  const loop = yield* AgentLoop
  const events = (yield* Testing.recordEvents).all
  const seenByHooks: Array<string> = []
  const see = ({ result }: { readonly result: { readonly content: Message.Content } }) => void seenByHooks.push(Message.textOf(result.content))
  yield* loop.registerHook(Hook.make({ afterTool: see, onToolFailure: see }))
  const result = yield* loop.turn("s", "go")
  expect(result.status).toBe("completed")
  const requests = yield* Testing.requests
  const stored = yield* (yield* SessionStore).log("s")
  const everything = JSON.stringify({ result, events: yield* events, requests, stored, seenByHooks })
  expect(everything).not.toContain(SECRET)
  return { results: result.messages.filter((m) => m.role === "tool").map((m) => m.content), seenByHooks }
})

describe("tool results are scrubbed by the loop", () => {
  it.effect("a built-in tool's result, typed failure and defect lose the secret before hooks, events, model and session", () =>
    Effect.gen(function*() {
      const { results, seenByHooks } = yield* turnLeaksNothing
      expect(results).toEqual([
        "env: TOKEN=<redacted>",
        "bad token <redacted>",
        'Tool "leaky" failed: crashed holding <redacted>'
      ])
      expect(seenByHooks).toEqual(results)
    }).pipe(Effect.provide(withSecret({
      tools: [leaky],
      script: [
        { toolCalls: [{ name: "leaky", arguments: { how: "return" } }, { name: "leaky", arguments: { how: "fail" } }, { name: "leaky", arguments: { how: "die" } }] },
        { content: "done" }
      ]
    }))))

  it.effect("an MCP tool's result is scrubbed too", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => nodeFs.mkdtempSync(nodePath.join(os.tmpdir(), "mcp-secrets-"))),
        (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
      )
      const server = fileURLToPath(new URL("../support/mcpServer.mjs", import.meta.url))
      const env = { MCP_TEST_LOG: nodePath.join(dir, "log"), TOKEN: SECRET }
      const tools = yield* McpTools.tools({ kv: { command: process.execPath, args: [server], env } })
      const { results } = yield* turnLeaksNothing.pipe(Effect.provide(withSecret({
        tools,
        script: [{ toolCalls: [{ name: "lookup", arguments: { key: "env:TOKEN" } }] }, { content: "done" }]
      })))
      expect(results).toEqual(["<redacted>"])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)), 30_000)
})
