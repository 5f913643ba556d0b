import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AgentLoop, Hook, Scripted } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

describe("session hooks through the loop", () => {
  it.effect("sessionStart runs before the first turn of each session only; sessionEnd when the loop closes", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      yield* Effect.gen(function*() {
        const loop = yield* AgentLoop
        yield* loop.registerHook(Hook.make({
          sessionStart: ({ sessionKey }) => void log.push(`start ${sessionKey}`),
          sessionEnd: ({ sessionKey }) => void log.push(`end ${sessionKey}`)
        }))
        yield* loop.turn("a", "one")
        yield* loop.turn("a", "two")
        yield* loop.turn("b", "three")
        expect(log).toEqual(["start a", "start b"])
      }).pipe(Effect.provide(Layer.fresh(Testing.layer({ script: () => ({ content: "ok" }) }))))
      expect(log).toEqual(["start a", "start b", "end a", "end b"])
    }))

  it.effect("a sessionStart block makes that turn blocked, without calling the model", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      yield* loop.registerHook(Hook.make({ sessionStart: () => Hook.block("closed for maintenance") }), { name: "door" })
      const result = yield* loop.turn("s", "hello")
      expect(result.status).toBe("blocked")
      expect(result.error).toBe('Session blocked by hook "door": closed for maintenance')
      expect(result.messages).toEqual([])
      expect(yield* (yield* Scripted.ScriptedLog).requests).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ script: [{ content: "never" }] }))))
})
