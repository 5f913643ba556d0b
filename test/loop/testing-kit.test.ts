/**
 * The test kit users get from `effect-agent-loop/testing`: the loop over a scripted model and an
 * in-memory store, the event recorder, the scripted model's requests, `advance`, `settled` and
 * `kinds`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { AgentLoop, Message, SessionStore, Tool } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

const slowEcho = Tool.make({
  name: "slow_echo",
  description: "Echoes after a second",
  parameters: Schema.Struct({ text: Schema.String }),
  readOnly: true,
  execute: ({ text }) => Effect.as(Effect.sleep("1 second"), `echo: ${text}`)
})

describe("the test kit", () => {
  it.effect("a forked turn, one advance: the model's and the tool's waits happen at their times", () =>
    Effect.gen(function*() {
      const events = yield* Testing.recordEvents
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "hi"))
      yield* Testing.advance("1999 millis")
      expect(yield* events.ofKind("TurnEnd")).toEqual([])
      yield* Testing.advance("1 millis")
      const result = yield* Fiber.join(turn)
      expect(result.finalMessage?.content).toBe("done")
      expect((yield* events.ofKind("ToolExecEnd")).map((e) => [e.result, e.at])).toEqual([["echo: x", 1500]])
      expect((yield* events.ofKind("TurnEnd")).map((e) => e.at)).toEqual([2000])
      expect((yield* Testing.requests).map((r) => r.messages.length)).toEqual([2, 4])
      expect(yield* (yield* SessionStore).load("s")).toEqual([Message.user("before"), ...result.messages])
    }).pipe(Effect.provide(Testing.layer({
      tools: [slowEcho],
      sessions: { s: [Message.user("before")] },
      script: [{ toolCalls: [{ name: "slow_echo", arguments: { text: "x" } }], delay: "500 millis" }, { content: "done", delay: "500 millis" }]
    }))))

  it.effect("a bad config fails the layer with ConfigError naming the field", () =>
    Effect.gen(function*() {
      const loop = Effect.gen(function*() {
        return yield* AgentLoop
      })
      const error = yield* Effect.flip(Effect.provide(loop, Testing.layer({ script: [], config: { toolConcurrency: 0 } })))
      expect(error).toMatchObject({ _tag: "ConfigError", field: "toolConcurrency" })
    }))

  it.effect("settled: the value once every fiber waits, without time passing; a condition that does not hold is a defect", () =>
    Effect.gen(function*() {
      const events = yield* Testing.recordEvents
      const loop = yield* AgentLoop
      yield* Effect.forkChild(loop.turn("s", "hi"))
      const started = yield* Testing.settled(Effect.map(events.ofKind("ToolExecStart"), (found) => found[0]))
      expect(started).toMatchObject({ toolName: "slow_echo", at: 0 })
      expect(yield* Testing.settled(loop.activeTurn("s"))).toBeTruthy()
      const defect = yield* Effect.exit(Testing.settled(Effect.map(events.ofKind("TurnEnd"), (found) => found.length > 0)))
      expect(defect._tag).toBe("Failure")
      expect(String(defect)).toContain("the condition does not hold once the loop has settled")
    }).pipe(Effect.provide(Testing.layer({ tools: [slowEcho], script: [{ toolCalls: [{ name: "slow_echo", arguments: { text: "x" } }] }, { content: "done" }] }))))

  it.effect("kinds: the events' kinds in order, or only those asked for", () =>
    Effect.gen(function*() {
      const events = yield* Testing.recordEvents
      yield* (yield* AgentLoop).turn("s", "hi")
      const all = yield* events.all
      expect(Testing.kinds(all)).toEqual(all.map((e) => e._tag))
      expect(Testing.kinds(all, ["TurnStart", "LLMResponse", "TurnEnd"])).toEqual(["TurnStart", "LLMResponse", "TurnEnd"])
      expect(Testing.kinds(all, [])).toEqual([])
    }).pipe(Effect.provide(Testing.layer({ script: [{ content: "hello" }] }))))
})
