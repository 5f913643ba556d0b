/**
 * A whole loop run recorded from a loopback OpenAI-compatible server into a cassette, then
 * replayed with the server gone: the loop publishes the same events and returns the same result.
 */
import { NodeFileSystem, NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, FileSystem, Layer, Redacted, Schema } from "effect"
import {
  AgentLoop,
  AgentLoopLive,
  type AgentEvent,
  type InvalidConfig,
  Message,
  OpenAiCompatible,
  type Provider,
  Replay,
  SessionStoreMemory,
  Tool,
  ToolRegistryLive,
  type Turn
} from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { openAiText, openAiTools } from "../support/wireFixtures.ts"
import { bytesEvery, start } from "../support/wireServer.ts"

/** The two tools the `openAiTools` fixture calls, answering deterministically. */
const tools = [
  Tool.make({
    name: "read_file",
    description: "Reads a file",
    parameters: Schema.Struct({ path: Schema.String }),
    readOnly: true,
    execute: ({ path }) => Effect.succeed(`contents of ${path}`)
  }),
  Tool.make({
    name: "list_dir",
    description: "Lists a directory",
    parameters: Schema.Struct({ path: Schema.String }),
    readOnly: true,
    execute: ({ path }) => Effect.succeed(`${path}: ä.md`)
  })
]

const loopOver = (provider: Layer.Layer<Provider, InvalidConfig>) =>
  AgentLoopLive.layer({ model: "gpt-4o", systemPrompt: "Be brief." }).pipe(
    Layer.provideMerge(Layer.mergeAll(provider, ToolRegistryLive.layer(tools), SessionStoreMemory.layer())),
    Layer.orDie
  )

/** One turn and every event it published. */
const runOnce = Effect.gen(function*() {
  const events = (yield* Testing.recordEvents).all
  const result = yield* (yield* AgentLoop).turn("demo", "What is in ä.md?")
  return { result, events: yield* events }
})

/** Events without what differs between two runs: the time, the turn's id and measured durations. */
const comparable = (events: ReadonlyArray<AgentEvent.AgentEvent>) =>
  events.map((event) => {
    const { at: _at, turnId: _turnId, ...rest } = event
    return "durationMs" in rest ? { ...rest, durationMs: "(time)" } : rest
  })

const comparableResult = ({ turnId: _turnId, ...rest }: Turn.TurnResult) => rest

describe("Replay through the loop", () => {
  it.live("a recorded turn (a tool call, then the answer) replays with the same events and result", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped()
      const cassette = `${dir}/turn.jsonl`
      const server = yield* start([{ body: bytesEvery(openAiTools, 11) }, { body: bytesEvery(openAiText, 5) }])
      const recording = Replay.record(cassette, { fresh: true }).pipe(
        Layer.provide(OpenAiCompatible.layer({ baseUrl: server.url, apiKey: Redacted.make("sk-loop-secret") })),
        Layer.provide(NodeHttpClient.layerUndici),
        Layer.provide(NodeFileSystem.layer)
      )
      const live = yield* runOnce.pipe(Effect.provide(loopOver(recording)))
      yield* server.close

      expect(server.requests).toHaveLength(2)
      expect(live.result.status).toBe("completed")
      expect(live.result.finalMessage).toEqual(Message.assistant("Grüße, 世界 🌍", [], { reasoning: "Think: grüße" }))
      expect(live.result.messages.map((m) => m.role === "tool" ? `tool:${m.content}` : m.role)).toEqual([
        "user",
        "assistant",
        "tool:contents of ä.md",
        "tool:.: ä.md",
        "assistant"
      ])
      // the two read-only calls run as one parallel group: their events may interleave
      const milestones = Testing.kinds(live.events, ["LLMRequest", "ToolExecStart", "ToolExecEnd", "LLMResponse", "TurnEnd"])
      expect([...milestones.slice(0, 2), ...milestones.slice(2, 6).sort(), ...milestones.slice(6)]).toEqual([
        "LLMRequest",
        "LLMResponse",
        "ToolExecEnd",
        "ToolExecEnd",
        "ToolExecStart",
        "ToolExecStart",
        "LLMRequest",
        "LLMResponse",
        "TurnEnd"
      ])
      const text = yield* fs.readFileString(cassette)
      expect(text.trim().split("\n")).toHaveLength(2)
      expect(text).not.toContain("sk-loop-secret")

      const replayed = yield* runOnce.pipe(Effect.provide(loopOver(Replay.replay(cassette).pipe(Layer.provide(NodeFileSystem.layer)))))
      expect(comparable(replayed.events)).toEqual(comparable(live.events))
      expect(comparableResult(replayed.result)).toEqual(comparableResult(live.result))
      expect(server.requests).toHaveLength(2)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.live("a replay whose loop asks something else fails the turn naming the difference", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped()
      const cassette = `${dir}/turn.jsonl`
      const entry: Replay.CassetteEntry = {
        request: { model: "gpt-4o", messages: [Message.system("Be brief."), Message.user("something else")], tools: ["read_file", "list_dir"] },
        chunks: [{ _tag: "TextDelta", text: "hi" }, { _tag: "Finish", reason: "stop" }]
      }
      yield* fs.writeFileString(cassette, `${JSON.stringify(entry)}\n`)
      const { result } = yield* runOnce.pipe(Effect.provide(loopOver(Replay.replay(cassette).pipe(Layer.provide(NodeFileSystem.layer)))))
      expect(result.status).toBe("failed")
      expect(result.error).toContain("ReplayMismatch")
      expect(result.error).toContain("messages[1]")
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
