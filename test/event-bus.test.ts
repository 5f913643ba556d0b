import { describe, expect, it } from "@effect/vitest"
import { Effect, Scope } from "effect"
import * as AgentEvent from "../src/domain/Event.ts"
import * as EventBusLive from "../src/layers/EventBus.ts"

const place = { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }
const delta = (i: number) => AgentEvent.make("LLMDelta", place, i, { kind: "text", text: String(i) })
const turnEnd = (i: number) =>
  AgentEvent.make("TurnEnd", place, i, { status: "completed", iterations: 1, durationMs: 0, usage: { inputTokens: 0, outputTokens: 0 } })

describe("EventBus", () => {
  it.effect("a stalled subscriber of capacity 1 loses 999 of 1,000; a normal one gets all; publish never waits", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const stalled = yield* bus.subscribe({ capacity: 1 })
      const normal = yield* bus.subscribe({ capacity: 1000 })
      for (let i = 0; i < 1000; i++) yield* bus.publish(delta(i))
      expect(yield* stalled.dropped).toEqual({ LLMDelta: 999 })
      expect(yield* stalled.droppedTotal).toBe(999)
      expect((yield* stalled.takeAll).map((e) => e.at)).toEqual([0])
      const received = yield* normal.takeAll
      expect(received).toHaveLength(1000)
      expect(received.map((e) => e.at)).toEqual(Array.from({ length: 1000 }, (_, i) => i))
      expect(yield* normal.droppedTotal).toBe(0)
      expect(yield* bus.dropped).toEqual({ LLMDelta: 999 })
    }).pipe(Effect.scoped))

  it.effect("the default capacity is 16", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const sub = yield* bus.subscribe()
      for (let i = 0; i < 17; i++) yield* bus.publish(delta(i))
      expect(yield* sub.takeAll).toHaveLength(16)
      expect(yield* sub.droppedTotal).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("sliding keeps the newest events and counts the evicted ones by kind", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const sub = yield* bus.subscribe({ capacity: 3, strategy: "sliding" })
      yield* bus.publish(turnEnd(0))
      for (let i = 1; i < 10; i++) yield* bus.publish(delta(i))
      expect((yield* sub.takeAll).map((e) => e.at)).toEqual([7, 8, 9])
      expect(yield* sub.dropped).toEqual({ TurnEnd: 1, LLMDelta: 6 })
    }).pipe(Effect.scoped))

  it.effect("a kinds filter delivers only those kinds, and does not count the others as dropped", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const sub = yield* bus.subscribe({ capacity: 2, kinds: ["TurnEnd"] })
      for (let i = 0; i < 5; i++) {
        yield* bus.publish(delta(i))
        yield* bus.publish(turnEnd(i))
      }
      expect((yield* sub.takeAll).map((e) => [e._tag, e.at])).toEqual([["TurnEnd", 0], ["TurnEnd", 1]])
      expect(yield* sub.dropped).toEqual({ TurnEnd: 3 })
    }).pipe(Effect.scoped))

  it.effect("closing the subscription's scope stops delivery", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const scope = yield* Scope.make()
      const sub = yield* bus.subscribe({ capacity: 10 }).pipe(Scope.provide(scope))
      yield* bus.publish(delta(1))
      yield* Scope.close(scope, { _tag: "Success", value: undefined } as never)
      yield* bus.publish(delta(2))
      expect((yield* sub.takeAll).map((e) => e.at)).toEqual([1])
      expect(yield* sub.droppedTotal).toBe(0)
    }))

  it.effect("take waits for and returns events in order", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const sub = yield* bus.subscribe({ capacity: 10, kinds: ["LLMDelta"] })
      yield* bus.publish(delta(1))
      yield* bus.publish(delta(2))
      expect((yield* sub.take).at).toBe(1)
      expect((yield* sub.take).at).toBe(2)
    }).pipe(Effect.scoped))
})
