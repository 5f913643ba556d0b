/**
 * Model options through the loop: the config's under a turn's own, checked; inherited by
 * sub-turns; provider blocks kept on replies by the scripted provider and carried by cassettes.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, FileSystem, Layer, Schema } from "effect"
import {
  AgentLoop,
  AgentLoopConfig,
  AgentLoopLive,
  CurrentTurn,
  type InvalidConfig,
  type Provider,
  type ProviderTypes,
  Replay,
  Scripted,
  SessionStore,
  SessionStoreMemory,
  Tool,
  ToolRegistryLive
} from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

/** The model options of a request: everything but the conversation. */
const optionsOf = ({ messages: _m, model: _model, tools: _t, ...options }: ProviderTypes.ProviderRequest) => options

const thinking = { provider: "anthropic", data: { type: "thinking", thinking: "Check the file.", signature: "c2lnbmF0dXJl" } }

const echoTool = Tool.make({
  name: "echo",
  description: "echoes",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: ({ text }) => Effect.succeed(text)
})

describe("model options", () => {
  it.effect("a turn's options win over the config's field by field, reasoning too; the next turn is back to the config's", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      yield* loop.turn("s", "one", { temperature: 0.7, reasoning: { budgetTokens: 2048 }, maxTokens: 900 })
      yield* loop.turn("s", "two")
      const [first, second] = yield* Testing.requests
      expect(optionsOf(first!)).toEqual({ temperature: 0.7, stop: ["END"], seed: 3, maxTokens: 900, reasoning: { effort: "low", budgetTokens: 2048 } })
      expect(optionsOf(second!)).toEqual({ temperature: 0.2, stop: ["END"], seed: 3, maxTokens: 500, reasoning: { effort: "low" } })
    }).pipe(Effect.provide(Testing.layer({
      script: [{ content: "a" }, { content: "b" }],
      config: { modelOptions: { maxTokens: 500, temperature: 0.2, stop: ["END"], seed: 3, reasoning: { effort: "low" } } }
    }))))

  it.effect("a bad option fails the turn with an InvalidConfig naming it, before any call; nothing is stored", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "hi", { temperature: 3 })
      expect(result.status).toBe("failed")
      expect(result.error).toBe("ConfigError: Invalid model option temperature: Expected a value between 0 and 2")
      expect(yield* Testing.requests).toHaveLength(0)
      expect((yield* events).map((e) => e._tag)).toEqual(["TurnStart", "Error", "TurnEnd"])
      expect(yield* (yield* SessionStore).load("s")).toEqual([])
      const fine = yield* (yield* AgentLoop).turn("s", "hi", { topP: 1, stop: ["x"], reasoning: { effort: "minimal" } })
      expect(fine.status).toBe("completed")
    }).pipe(Effect.provide(Testing.layer({ script: [{ content: "ok" }] }))))

  it.effect("the config's options are checked when it is made, the field named", () =>
    Effect.gen(function*() {
      const bad = yield* Effect.flip(AgentLoopConfig.make({ model: "m", modelOptions: { reasoning: { effort: "extreme" } } }))
      expect(bad.field).toBe("modelOptions.reasoning.effort")
      const negative = yield* Effect.flip(AgentLoopConfig.make({ model: "m", modelOptions: { maxTokens: 0 } }))
      expect(negative.field).toBe("modelOptions.maxTokens")
      const empty = yield* Effect.flip(AgentLoopConfig.make({ model: "m", modelOptions: { stop: [""] } }))
      expect(empty.field).toBe("modelOptions.stop.0")
      // the output limit is one model option: a top-level maxTokens is refused, not ignored
      const moved = yield* Effect.flip(AgentLoopConfig.make({ model: "m", maxTokens: 500 }))
      expect([moved.field, moved.message]).toEqual(["maxTokens", "maxTokens: the output limit is modelOptions.maxTokens"])
    }))

  it.effect("sub-turns inherit the turn's options, under their own; the output limit too: the config's, the turn's, the sub-turn's", () =>
    Effect.gen(function*() {
      yield* (yield* AgentLoop).turn("s", "parent", { temperature: 0.1, reasoning: { effort: "high" }, maxTokens: 900 })
      const requests = yield* Testing.requests
      const child = requests.filter((request) => request.model === "child-model")
      expect(child.map(optionsOf)).toEqual([{ maxTokens: 300, temperature: 0.1, topP: 0.5, reasoning: { effort: "high" } }])
      expect(requests.filter((request) => request.model !== "child-model").map((request) => request.maxTokens)).toEqual([900, 900])
    }).pipe(Effect.provide(Testing.layer({
      config: { modelOptions: { maxTokens: 500 } },
      tools: [Tool.make({
        name: "delegate",
        description: "spawns a sub-turn",
        parameters: Schema.Struct({}),
        execute: () =>
          Effect.gen(function*() {
            const turn = yield* CurrentTurn
            return (yield* Effect.orDie(turn.spawnSubTurn({ model: "child-model", task: "sub", modelOptions: { topP: 0.5, maxTokens: 300 } }))).status
          })
      })],
      script: (request, index) =>
        request.model === "child-model"
          ? { content: "child done" }
          : index === 0
          ? { toolCalls: [{ name: "delegate", arguments: {} }] }
          : { content: "parent done" }
    }))))

  it.effect("the scripted provider's provider blocks land on the reply, are stored, and go back in the next request", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.status).toBe("completed")
      const stored = yield* (yield* SessionStore).load("s")
      expect(stored[1]).toMatchObject({ role: "assistant", reasoning: "Check the file.", providerBlocks: [thinking] })
      const [, second] = yield* Testing.requests
      expect(second!.messages[1]).toMatchObject({ providerBlocks: [thinking] })
    }).pipe(Effect.provide(Testing.layer({
      tools: [echoTool],
      script: [
        { reasoning: "Check the file.", providerBlocks: [thinking], toolCalls: [{ name: "echo", arguments: { text: "hi" } }] },
        { content: "done" }
      ]
    }))))
})

describe("cassettes with reasoning and options", () => {
  const loopOver = (provider: Layer.Layer<Provider, InvalidConfig, FileSystem.FileSystem>, options = {}) =>
    AgentLoopLive.layer({ model: "claude-sonnet-4-5", modelOptions: { reasoning: { budgetTokens: 2048 }, ...options } }).pipe(
      Layer.provideMerge(Layer.mergeAll(provider, ToolRegistryLive.layer([echoTool]), SessionStoreMemory.layer())),
      Layer.orDie
    )
  const script: Scripted.Script = [
    { reasoning: "Check the file.", providerBlocks: [thinking], toolCalls: [{ name: "echo", arguments: { text: "hi" } }] },
    { content: "done" }
  ]

  it.live("a recorded thinking turn replays: the blocks come back, are sent again as recorded, and other options are a mismatch", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const cassette = yield* fs.makeTempFileScoped({ suffix: ".jsonl" })
      const turn = Effect.gen(function*() {
        return yield* (yield* AgentLoop).turn("s", "go")
      })
      const recorded = yield* turn.pipe(Effect.provide(loopOver(Replay.record(cassette, { fresh: true }).pipe(Layer.provide(Scripted.layer(script))))))
      const lines = (yield* fs.readFileString(cassette)).trim().split("\n").map((line) => JSON.parse(line))
      expect(lines[0].request.reasoning).toEqual({ budgetTokens: 2048 })
      expect(lines[0].chunks).toContainEqual({ _tag: "ProviderBlock", block: thinking })
      // the loop stamps the blocks with the model that made them
      expect(lines[1].request.messages[1].providerBlocks).toEqual([{ ...thinking, model: "claude-sonnet-4-5" }])
      const replayed = yield* turn.pipe(Effect.provide(loopOver(Replay.replay(cassette))))
      expect(replayed.status).toBe("completed")
      expect(replayed.messages).toEqual(recorded.messages)
      const other = yield* turn.pipe(Effect.provide(loopOver(Replay.replay(cassette), { temperature: 0.5 })))
      expect(other.status).toBe("failed")
      expect(other.error).toContain("model options: expected")
    }).pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer)))
})
