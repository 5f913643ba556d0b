/**
 * Overflow recovery when the context is too long because of the newest tool result (say, a 3 MB
 * file an MCP server returned): compression never drops it, so it is cut instead of failing the
 * turn.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { AgentLoop, ContextLengthExceeded, Message, type ProviderTypes, Scripted, SessionStore, Tool } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { halveNewestToolResult, shrinkNewestToolResult, shrinkOversizedToolResult } from "../../src/programs/internal/compaction.ts"

const dump = (size: number) =>
  Tool.make({
    name: "dump",
    description: "returns a lot",
    parameters: Schema.Struct({}),
    readOnly: true,
    execute: () => Effect.succeed("x".repeat(size))
  })

const longest = (request: ProviderTypes.ProviderRequest) => Math.max(...request.messages.map((m) => m.content.length))

/** A model whose window takes messages of at most `limit` characters. */
const model = (limit: number) => (request: ProviderTypes.ProviderRequest, index: number) =>
  index === 0
    ? { toolCalls: [{ name: "dump", arguments: {} }] }
    : longest(request) > limit
    ? { error: new ContextLengthExceeded({ message: "prompt is too long" }) }
    : { content: `saw ${longest(request)}` }

describe("overflow recovery: the newest tool result", () => {
  it.effect("a result over a quarter of the window is cut to it, with a note; the turn completes", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "dump it")
      expect(result.status).toBe("completed")
      const sent = yield* (yield* Scripted.ScriptedLog).requests
      expect(sent).toHaveLength(3)
      const tool = sent[2]!.messages.find((m) => m.role === "tool")!
      expect(tool.content).toBe(`${"x".repeat(10_000)}\n[tool result cut by 990000 of 1000000 characters to fit the context window]`)
      const compress = (yield* events).filter((e) => e._tag === "ContextCompress")
      expect(compress.map((e) => e._tag === "ContextCompress" && [e.reason, e.dropped])).toEqual([["overflow", 0]])
      // Only the context was cut: the session stores the result in full, and nothing was compacted away.
      const log = yield* (yield* SessionStore).log("s")
      expect(log.map((entry) => entry.role)).toEqual(["user", "assistant", "tool", "assistant", "outcome"])
      expect(log[2]!.role === "tool" && log[2]!.content.length).toBe(1_000_000)
    }).pipe(Effect.provide(Testing.layer({ tools: [dump(1_000_000)], config: { contextWindow: 10_000 }, script: model(20_000) }))))

  it.effect("when nothing else can go, it is halved on each further overflow", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "dump it")
      expect(result.status).toBe("completed")
      expect(result.finalMessage?.content).toMatch(/^saw 50\d\d\d$/)
    }).pipe(Effect.provide(Testing.layer({ tools: [dump(100_000)], config: { contextWindow: 128_000 }, script: model(60_000) }))))
})

describe("shrinkNewestToolResult", () => {
  const call = { id: "c", name: "t" }
  const history = [Message.user("go"), Message.assistant("", [{ ...call, arguments: "{}" }]), Message.toolResult(call, "ab😀cd"), Message.user("steer")]

  it("cuts only the newest tool result, never in the middle of a character", () => {
    const shrunk = shrinkNewestToolResult(history, 3)!
    expect(shrunk.kept.map((m) => m.content)).toEqual(["go", "", "ab\n[tool result cut by 4 of 6 characters to fit the context window]", "steer"])
    expect(shrunk.cut).toBe(4)
    expect(shrinkNewestToolResult(history, 6)).toBeUndefined()
    expect(shrinkNewestToolResult([Message.user("no tools")], 1)).toBeUndefined()
  })

  it("recovery cuts to the window's share first, and halves only results worth halving", () => {
    const big = [Message.user("go"), Message.toolResult(call, "y".repeat(5000))]
    expect(shrinkOversizedToolResult(big, 4000)?.cut).toBe(1000)
    expect(shrinkOversizedToolResult(big, 5000)).toBeUndefined()
    expect(halveNewestToolResult(big)?.cut).toBe(2500)
    expect(halveNewestToolResult(history)).toBeUndefined()
  })
})
