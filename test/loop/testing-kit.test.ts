/**
 * The test kit users get from `effect-agent-loop/testing`: the loop over a scripted model and an
 * in-memory store, the event recorder, the scripted model's requests, and `advance`.
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
})
