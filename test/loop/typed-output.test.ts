/**
 * Typed final answers (`turn(..., { output })`) over the scripted provider: the answer as a
 * `respond` call or as JSON text, decode errors sent back to the model, the bounded retries, and
 * the loop's other rules (tools, hooks, max_iterations, cassettes) unchanged around it.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, AgentLoopLive, Hook, type Provider, Replay, Scripted, SessionStoreMemory, Tool, ToolRegistryLive } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { ACCEPTED, NOT_ALONE } from "../../src/programs/internal/typedOutput.ts"
import { echo, ofKind } from "../support/fixtures.ts"
import * as os from "node:os"
import * as path from "node:path"
import * as fs from "node:fs"

const Answer = Schema.Struct({ city: Schema.String, population: Schema.Int.check(Schema.isGreaterThan(0)) })
const respondLike = {
  name: "respond",
  description: "A user's own tool that happens to be named respond",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: ({ text }: { readonly text: string }) => Effect.succeed(text)
}
describe("typed output", () => {
  it.effect("a respond call after a tool: the decoded answer, typed, in the result and in TurnEnd", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "Largest city?", { output: Answer })
      expect(result.status).toBe("completed")
      const population: number = result.output!.population
      expect(population).toBe(3_600_000)
      expect(result.output).toEqual({ city: "Berlin", population: 3_600_000 })
      expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool"])
      expect(result.messages.at(-1)).toMatchObject({ role: "tool", toolName: "respond", content: ACCEPTED })
      const end = ofKind(yield* events, "TurnEnd")[0]!
      expect(end.output).toEqual(result.output)
      const sent = yield* Testing.requests
      expect(sent.map((r) => r.tools.map((t) => t.name))).toEqual([["echo", "respond"], ["echo", "respond"]])
      expect(sent[0]!.output).toEqual({ name: "respond", schema: sent[0]!.tools[1]!.parameters })
      expect(sent[0]!.output!.schema).toMatchObject({
        type: "object",
        properties: { city: { type: "string" }, population: { type: "integer" } },
        required: ["city", "population"]
      })
    }).pipe(Effect.provide(Testing.layer({
      tools: [echo],
      script: [
        { toolCalls: [{ name: "echo", arguments: { text: "look it up" } }] },
        { output: { city: "Berlin", population: 3_600_000 } }
      ]
    }))))

  it.effect("a registered tool named respond: the typed turn fails, naming the clash, before any model call", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "Largest city?", { output: Answer })
      expect(result.status).toBe("failed")
      expect(result.error).toContain(`a tool is named "respond"`)
      expect(yield* Testing.requests).toEqual([])
    }).pipe(Effect.provide(Testing.layer({
      tools: [Tool.make(respondLike)],
      script: [{ output: { city: "Berlin", population: 3_600_000 } }]
    }))))

  it.effect("JSON text (a provider's native structured output) is an answer too, fenced or not", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const plain = yield* loop.turn("a", "go", { output: Answer })
      const fenced = yield* loop.turn("b", "go", { output: Answer })
      expect([plain.status, plain.output]).toEqual(["completed", { city: "Rome", population: 2 }])
      expect([fenced.status, fenced.output]).toEqual(["completed", { city: "Oslo", population: 1 }])
      expect(plain.messages.map((m) => m.role)).toEqual(["user", "assistant"])
    }).pipe(Effect.provide(Testing.layer({
      script: [{ content: "{\"city\":\"Rome\",\"population\":2}" }, { content: "```json\n{\"city\":\"Oslo\",\"population\":1}\n```" }]
    }))))

  it.effect("an answer that does not decode goes back with the error; the corrected one is the output", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go", { output: Answer })
      expect([result.status, result.output, result.iterations]).toEqual(["completed", { city: "Paris", population: 2 }, 2])
      const sent = yield* Testing.requests
      const feedback = sent[1]!.messages.at(-1)!
      expect(feedback).toMatchObject({ role: "tool", toolName: "respond", isError: true })
      expect(feedback.content).toContain("does not match the output schema")
      expect(feedback.content).toContain("population")
    }).pipe(Effect.provide(Testing.layer({
      script: [{ output: { city: "Paris", population: -1 } }, { output: { city: "Paris", population: 2 } }]
    }))))

  it.effect("respond arguments that are not JSON are refused with that reason, and not forced", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go", { output: Answer })
      expect(result.output).toEqual({ city: "Quito", population: 3 })
      const sent = yield* Testing.requests
      expect(sent[1]!.messages.at(-1)).toMatchObject({ role: "tool", isError: true, content: expect.stringContaining("not JSON") })
      expect(sent[1]!.output!.force).toBeUndefined()
    }).pipe(Effect.provide(Testing.layer({
      script: [{ output: "{\"city\": \"Quito\"," }, { output: { city: "Quito", population: 3 } }]
    }))))

  it.effect("after maxOutputRetries rejected answers the turn fails with the decode error; the history stays valid", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "go", { output: Answer })
      expect(result.status).toBe("failed")
      expect(result.output).toBeUndefined()
      expect(result.error).toMatch(/^OutputInvalid: The answer does not match the output schema: .*city/s)
      expect(result.iterations).toBe(2)
      // Every respond call is answered, and the last feedback (never sent) is not stored.
      expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool"])
      expect(ofKind(yield* events, "TurnEnd")[0]!.error).toBe(result.error)
      expect(yield* Testing.requests).toHaveLength(2)
    }).pipe(Effect.provide(Testing.layer({
      config: { maxOutputRetries: 1 },
      script: () => ({ output: { population: 1 } })
    }))))

  it.effect("a text answer that is not JSON is sent back and the next call forces the answer", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go", { output: Answer })
      expect(result.output).toEqual({ city: "Lima", population: 9 })
      const sent = yield* Testing.requests
      expect(sent[0]!.output!.force).toBeUndefined()
      expect(sent[1]!.output!.force).toBe(true)
      expect(sent[1]!.messages.at(-1)).toMatchObject({ role: "user" })
      expect(sent[1]!.messages.at(-1)!.content).toContain("\"respond\" tool")
    }).pipe(Effect.provide(Testing.layer({
      script: [{ content: "It is Lima, with 9 people." }, { output: { city: "Lima", population: 9 } }]
    }))))

  it.effect("respond beside other tools is refused (the others run); respond alone is the answer", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go", { output: Answer })
      expect(result.output).toEqual({ city: "Kyiv", population: 3 })
      expect(result.messages.slice(1, 4)).toMatchObject([
        { role: "assistant" },
        { role: "tool", toolName: "echo", content: "echo: x" },
        { role: "tool", toolName: "respond", content: NOT_ALONE, isError: true }
      ])
    }).pipe(Effect.provide(Testing.layer({
      tools: [echo],
      script: [
        { toolCalls: [{ name: "echo", arguments: { text: "x" } }], output: { city: "Kyiv", population: 3 } },
        { output: { city: "Kyiv", population: 3 } }
      ]
    }))))

  it.effect("max_iterations and the beforeStop gate work as without an output", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      let blocks = 0
      yield* loop.registerHook({ beforeStop: () => blocks++ === 0 ? Hook.block("Check the number again.") : Hook.continue })
      const gated = yield* loop.turn("gate", "go", { output: Answer })
      expect([gated.status, gated.output]).toEqual(["completed", { city: "Bern", population: 2 }])
      const capped = yield* loop.turn("cap", "go", { output: Answer })
      expect([capped.status, capped.output, capped.iterations]).toEqual(["max_iterations", undefined, 2])
    }).pipe(Effect.provide(Testing.layer({
      tools: [echo],
      config: { maxIterations: 2 },
      script: [
        { output: { city: "Bern", population: 1 } },
        { output: { city: "Bern", population: 2 } },
        { toolCalls: [{ name: "echo", arguments: { text: "a" } }] },
        { toolCalls: [{ name: "echo", arguments: { text: "b" } }] }
      ]
    }))))

  it.effect("a graceful interrupt ends the turn as before: one tool-less call without the answer asked for, no output", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "go", { output: Answer }))
      yield* Testing.settled(Effect.map(events, (all) => all.some((e) => e._tag === "ToolExecStart")))
      yield* loop.interruptGraceful("s")
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(turn)
      expect([result.status, result.output, result.finalMessage?.content]).toEqual(["interrupted", undefined, "Stopped."])
      const last = (yield* Testing.requests).at(-1)!
      expect([last.tools, last.output]).toEqual([[], undefined])
    }).pipe(Effect.provide(Testing.layer({
      tools: [Tool.make({
        name: "slow",
        description: "waits a second",
        parameters: Schema.Struct({}),
        execute: () => Effect.as(Effect.sleep("1 second"), "done")
      })],
      script: [{ toolCalls: [{ name: "slow" }] }, { content: "Stopped." }]
    }))))

  it.effect("outputJsonSchema is what the model is offered; the Schema still decodes", () =>
    Effect.gen(function*() {
      const jsonSchema = { type: "object", properties: { city: { type: "string", description: "Its name" } }, required: ["city"] }
      const result = yield* (yield* AgentLoop).turn("s", "go", { output: Schema.Struct({ city: Schema.String }), outputJsonSchema: jsonSchema })
      expect(result.output).toEqual({ city: "Ulm" })
      const sent = (yield* Testing.requests)[0]!
      expect(sent.output!.schema).toEqual(jsonSchema)
      expect(sent.tools.find((t) => t.name === "respond")!.parameters).toEqual(jsonSchema)
    }).pipe(Effect.provide(Testing.layer({ script: [{ output: { city: "Ulm" } }] }))))

  it.effect("a recorded typed-output turn with thinking on replays from its cassette to the same output and blocks", () =>
    Effect.gen(function*() {
      const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "typed-output-")), "turn.jsonl")
      const thinking = { provider: "anthropic", data: { type: "thinking", thinking: "Look it up.", signature: "sig" } }
      const loopOver = (provider: Layer.Layer<Provider, unknown>) =>
        AgentLoopLive.layer({ model: "m", modelOptions: { reasoning: { budgetTokens: 2048 } } }).pipe(
          Layer.provideMerge(Layer.mergeAll(provider, ToolRegistryLive.layer([echo]), SessionStoreMemory.layer())),
          Layer.orDie
        )
      const run = (provider: Layer.Layer<Provider, unknown>) =>
        Effect.gen(function*() {
          return yield* (yield* AgentLoop).turn("s", "go", { output: Answer })
        }).pipe(Effect.provide(loopOver(provider)))
      const script = Scripted.layer([
        { providerBlocks: [thinking], toolCalls: [{ name: "echo", arguments: { text: "x" } }] },
        { output: { city: "Riga", population: 6 } }
      ])
      const recorded = yield* run(Replay.record(file, { fresh: true }).pipe(Layer.provide(script), Layer.provide(NodeFileSystem.layer)))
      const replayed = yield* run(Replay.replay(file).pipe(Layer.provide(NodeFileSystem.layer)))
      expect(recorded.output).toEqual({ city: "Riga", population: 6 })
      expect(replayed.output).toEqual(recorded.output)
      expect(replayed.messages).toEqual(recorded.messages)
      const entries = yield* Replay.readCassette(file).pipe(Effect.provide(NodeFileSystem.layer))
      expect([entries[0]!.request.output?.name, entries[0]!.request.reasoning]).toEqual(["respond", { budgetTokens: 2048 }])
      expect(entries[1]!.request.messages[1]).toMatchObject({ providerBlocks: [{ ...thinking, model: "m" }] })
      expect(replayed.messages[1]).toMatchObject({ providerBlocks: [{ ...thinking, model: "m" }] })
      // A replay asked for another answer does not match the cassette.
      const other = yield* Effect.gen(function*() {
        return yield* (yield* AgentLoop).turn("s", "go", { output: Schema.String })
      }).pipe(
        Effect.provide(loopOver(Replay.replay(file).pipe(Layer.provide(NodeFileSystem.layer))))
      )
      expect(other.status).toBe("failed")
      expect(other.error).toContain("differs in output")
    }))
})
