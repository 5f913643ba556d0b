/**
 * `TurnResult.failure`: why a turn did not complete as asked, as a tagged value to match on, next
 * to the same words in `error`; and it travels (the result's Schema encodes and decodes it).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { AgentLoop, Hook, ProviderRejected, Turn, TurnAborted, TurnFailure } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { echo } from "../support/fixtures.ts"

describe("TurnResult.failure", () => {
  it.effect("a provider's refusal", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "hi")
      expect(result.status).toBe("failed")
      expect(result.failure).toBeInstanceOf(ProviderRejected)
      expect(result.failure).toMatchObject({ _tag: "ProviderRejected", message: "bad key" })
      expect(result.error).toBe("ProviderRejected: bad key")
    }).pipe(Effect.provide(Testing.layer({ script: [{ error: new ProviderRejected({ message: "bad key" }) }] }))))

  it.effect("a hook that blocks the turn, and one that aborts it", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      yield* loop.registerHook({ beforeTurn: ({ input }) => input === "block me" ? Hook.block("not today") : Hook.continue }, { name: "gate" })
      yield* loop.registerHook({ beforeTool: () => Hook.abortTurn("no tools") }, { name: "guard" })
      const blocked = yield* loop.turn("s", "block me")
      expect([blocked.status, blocked.failure]).toEqual(["blocked", expect.objectContaining({ _tag: "TurnBlocked", stage: "beforeTurn", hook: "gate", reason: "not today" })])
      expect(blocked.error).toBe(`Blocked by hook "gate": not today`)
      const aborted = yield* loop.turn("s", "go")
      expect(aborted.status).toBe("failed")
      expect(aborted.failure).toBeInstanceOf(TurnAborted)
      expect(aborted.failure).toMatchObject({ stage: "beforeTool", hook: "guard", reason: "no tools" })
      expect(aborted.error).toBe(`Hook "guard" aborted the turn at beforeTool: no tools`)
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ script: [{ toolCalls: [{ name: "echo", arguments: { text: "x" } }] }], tools: [echo] }))))

  it.effect("bad turn options, a defect, and answers that never match the output Schema", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const options = yield* loop.turn("s", "hi", { temperature: 9 })
      expect(options.failure).toMatchObject({ _tag: "ConfigError" })
      const died = yield* loop.turn("s", "hi")
      expect(died.failure).toMatchObject({ _tag: "TurnDefect", message: "boom" })
      expect(died.error).toBe("boom")
      const typed = yield* loop.turn("s", "hi", { output: Schema.Struct({ n: Schema.Number }) })
      expect(typed.failure).toMatchObject({ _tag: "OutputInvalid" })
      expect(typed.error).toBe(`OutputInvalid: ${typed.failure?._tag === "OutputInvalid" ? typed.failure.message : ""}`)
    }).pipe(Effect.provide(Testing.layer({
      script: [{ die: new Error("boom") }, { content: "not json" }, { content: "still not json" }],
      config: { maxOutputRetries: 1 }
    }))))

  it.effect("travels: the result's Schema encodes and decodes it as the same tagged value", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "hi")
      const decoded = yield* Schema.decodeUnknownEffect(Turn.TurnResult)(yield* Schema.encodeEffect(Turn.TurnResult)(result))
      expect(decoded.failure).toBeInstanceOf(ProviderRejected)
      expect(decoded.failure).toEqual(result.failure)
      expect(Schema.is(TurnFailure)(decoded.failure)).toBe(true)
    }).pipe(Effect.provide(Testing.layer({ script: [{ error: new ProviderRejected({ message: "bad key", status: 401 }) }] }))))
})
