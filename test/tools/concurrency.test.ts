/**
 * A model may answer with thousands of tool calls at once; run together they exhaust memory and
 * file handles. The read-only calls of one response run at most `toolConcurrency` at a time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { AgentLoop, Tool } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

const CALLS = 100

/** A read-only tool that counts how many of its calls are running, and the most at once. */
const counting = () => {
  const seen = { inFlight: 0, max: 0, done: 0 }
  const tool = Tool.make({
    name: "probe",
    description: "Counts concurrent calls",
    parameters: Schema.Struct({}),
    readOnly: true,
    execute: () =>
      Effect.gen(function*() {
        seen.inFlight++
        seen.max = Math.max(seen.max, seen.inFlight)
        // Give every other started call the chance to start before this one ends.
        for (let i = 0; i < 5; i++) yield* Effect.yieldNow
        seen.inFlight--
        seen.done++
        return "ok"
      })
  })
  return { seen, tool }
}

const script = [{ toolCalls: Array.from({ length: CALLS }, () => ({ name: "probe", arguments: {} })) }, { content: "done" }]

describe("tool call concurrency", () => {
  const byDefault = counting()
  it.effect(`${CALLS} calls in one response: at most 16 run at once by default`, () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.status).toBe("completed")
      expect(byDefault.seen.done).toBe(CALLS)
      expect(byDefault.seen.max).toBe(16)
    }).pipe(Effect.provide(Testing.layer({ tools: [byDefault.tool], script }))))

  const configured = counting()
  it.effect("toolConcurrency sets the bound", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.status).toBe("completed")
      expect(configured.seen.done).toBe(CALLS)
      expect(configured.seen.max).toBe(3)
    }).pipe(Effect.provide(Testing.layer({ tools: [configured.tool], script, config: { toolConcurrency: 3 } }))))
})
