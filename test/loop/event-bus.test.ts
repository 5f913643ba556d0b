import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope, Stream } from "effect"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { AgentEvent, AgentLoop, EventBusLive, type EventBusShape, lifecycleKinds } from "effect-agent-loop"
import { delta as deltaEvent } from "../../src/domain/Event.ts"
import * as Testing from "effect-agent-loop/testing"

const place = { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }
const delta = (i: number) => AgentEvent.make("LLMDelta", place, i, { kind: "text", text: String(i) })
const turnStart = (i: number) => AgentEvent.make("TurnStart", place, i, { input: "go" })
const turnEnd = (i: number) =>
  AgentEvent.make("TurnEnd", place, i, { status: "completed", iterations: 1, durationMs: 0, usage: { inputTokens: 0, outputTokens: 0 } })
const error = (i: number) => AgentEvent.make("Error", place, i, { stage: "test", message: "boom" })
const subTurnEnd = (i: number) => AgentEvent.make("SubTurnEnd", place, i, { childTurnId: "c", status: "completed" })

/** A full garbage collection, now. */
const collectGarbage = (): void => {
  setFlagsFromString("--expose-gc")
  ;(runInNewContext("gc") as () => void)()
}
/** Finalization callbacks run as tasks of their own after a collection. */
const nextTask = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

const shown = (events: ReadonlyArray<AgentEvent.AgentEvent>) => events.map((e) => `${e._tag}@${e.at}`)

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

  it.effect("a capacity below 1 means 1; NaN means the default", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make(4)
      const zero = yield* bus.subscribe({ capacity: 0 })
      const nan = yield* bus.subscribe({ capacity: Number.NaN })
      for (let i = 0; i < 10; i++) yield* bus.publish(delta(i))
      expect(yield* zero.takeAll).toHaveLength(1)
      expect(yield* nan.takeAll).toHaveLength(4)
    }).pipe(Effect.scoped))

  it.effect("sliding keeps the newest events, but not by losing a lifecycle event to a delta", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const sub = yield* bus.subscribe({ capacity: 3, strategy: "sliding" })
      yield* bus.publish(turnEnd(0))
      for (let i = 1; i < 10; i++) yield* bus.publish(delta(i))
      expect(shown(yield* sub.takeAll)).toEqual(["TurnEnd@0", "LLMDelta@8", "LLMDelta@9"])
      expect(yield* sub.dropped).toEqual({ LLMDelta: 7 })
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

  it.effect("order survives a buffer that wraps around and grows while partly read", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const sub = yield* bus.subscribe({ capacity: 100 })
      for (let i = 0; i < 10; i++) yield* bus.publish(delta(i))
      for (let i = 0; i < 5; i++) expect((yield* sub.take).at).toBe(i)
      for (let i = 10; i < 60; i++) yield* bus.publish(delta(i))
      expect((yield* sub.takeAll).map((e) => e.at)).toEqual(Array.from({ length: 55 }, (_, i) => i + 5))
    }).pipe(Effect.scoped))

  it.effect("take waits for and returns events in order", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const sub = yield* bus.subscribe({ capacity: 10, kinds: ["LLMDelta"] })
      const first = yield* Effect.forkChild(sub.take)
      yield* Effect.yieldNow
      yield* bus.publish(delta(1))
      yield* bus.publish(delta(2))
      expect((yield* Fiber.join(first)).at).toBe(1)
      expect((yield* sub.take).at).toBe(2)
    }).pipe(Effect.scoped))
})

/**
 * Subscribes a consumer (pushing each event's `at` into `seen`) and runs it on a fiber of its own,
 * publishes one delta with `publishUnsafe`, and checks the consumer ran after the publish, not
 * inside it.
 */
const wokenNotRun = (
  consumer: (bus: EventBusShape, seen: Array<number>) => Effect.Effect<Effect.Effect<unknown>, never, Scope.Scope>
) =>
  Effect.gen(function*() {
    const bus = yield* EventBusLive.make()
    const seen: Array<number> = []
    yield* Effect.forkChild(yield* consumer(bus, seen))
    yield* Effect.yieldNow
    const duringPublish = yield* Effect.sync(() => {
      bus.publishUnsafe(delta(1))
      return seen.length
    })
    expect(duringPublish).toBe(0)
    yield* Effect.yieldNow
    expect(seen).toEqual([1])
  }).pipe(Effect.scoped)

describe("EventBus: consumers run on their own fibers", () => {
  it.effect("publishing wakes a waiting consumer but does not run it on the publisher's fiber", () =>
    wokenNotRun((bus, seen) =>
      Effect.map(bus.subscribe(), (sub) => Effect.forever(Effect.map(sub.take, (event) => seen.push(event.at))))))

  it.effect("a consumer that publishes on an event cannot put its event ahead of that one for another subscriber", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const reacting = yield* bus.subscribe()
      const other = yield* bus.subscribe()
      yield* Effect.forkChild(Effect.forever(Effect.flatMap(reacting.take, (event) =>
        event._tag === "TurnStart" ? bus.publish(error(event.at + 1)) : Effect.void)))
      yield* Effect.yieldNow
      yield* bus.publish(turnStart(1))
      yield* Effect.yieldNow
      expect(shown(yield* other.takeAll)).toEqual(["TurnStart@1", "Error@2"])
    }).pipe(Effect.scoped))

  it.effect("a waiting stream is woken the same way", () =>
    wokenNotRun((bus, seen) => Effect.sync(() => Stream.runForEach(bus.stream(), (event) => Effect.sync(() => seen.push(event.at))))))
})

describe("EventBus: lifecycle events at the bound", () => {
  it("the lifecycle kinds are TurnStart, TurnEnd, SubTurnEnd and Error", () => {
    expect([...lifecycleKinds].sort()).toEqual(["Error", "SubTurnEnd", "TurnEnd", "TurnStart"])
  })

  it.effect("capacity 1: a lifecycle event takes the place of a buffered delta; a delta never takes a lifecycle event's", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const dropping = yield* bus.subscribe({ capacity: 1 })
      const sliding = yield* bus.subscribe({ capacity: 1, strategy: "sliding" })
      yield* bus.publish(delta(0))
      yield* bus.publish(turnEnd(1))
      yield* bus.publish(delta(2))
      for (const sub of [dropping, sliding]) {
        expect(shown(yield* sub.takeAll)).toEqual(["TurnEnd@1"])
        expect(yield* sub.dropped).toEqual({ LLMDelta: 2 })
      }
      expect(yield* bus.dropped).toEqual({ LLMDelta: 4 })
    }).pipe(Effect.scoped))

  it.effect("the displaced event is the oldest non-lifecycle one; order is kept", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const sub = yield* bus.subscribe({ capacity: 4 })
      for (const event of [turnStart(0), error(1), delta(2), delta(3), subTurnEnd(4), turnEnd(5)]) yield* bus.publish(event)
      expect(shown(yield* sub.takeAll)).toEqual(["TurnStart@0", "Error@1", "SubTurnEnd@4", "TurnEnd@5"])
      expect(yield* sub.dropped).toEqual({ LLMDelta: 2 })
    }).pipe(Effect.scoped))

  it.effect("a buffer full of lifecycle events loses the new one (dropping) or the oldest (sliding), and deltas", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const dropping = yield* bus.subscribe({ capacity: 2 })
      const sliding = yield* bus.subscribe({ capacity: 2, strategy: "sliding" })
      for (const event of [turnStart(0), error(1), delta(2), turnEnd(3)]) yield* bus.publish(event)
      expect(shown(yield* dropping.takeAll)).toEqual(["TurnStart@0", "Error@1"])
      expect(yield* dropping.dropped).toEqual({ LLMDelta: 1, TurnEnd: 1 })
      expect(shown(yield* sliding.takeAll)).toEqual(["Error@1", "TurnEnd@3"])
      expect(yield* sliding.dropped).toEqual({ LLMDelta: 1, TurnStart: 1 })
      expect(yield* bus.dropped).toEqual({ LLMDelta: 2, TurnEnd: 1, TurnStart: 1 })
    }).pipe(Effect.scoped))

  it.effect("a turn's TurnEnd reaches a default subscriber that lost most of 100 deltas", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const sub = yield* bus.subscribe()
      yield* bus.publish(turnStart(0))
      for (let i = 1; i <= 100; i++) yield* bus.publish(delta(i))
      yield* bus.publish(turnEnd(101))
      const seen = yield* sub.takeAll
      expect(seen).toHaveLength(16)
      expect(shown([seen[0]!, seen.at(-1)!])).toEqual(["TurnStart@0", "TurnEnd@101"])
      expect(yield* sub.dropped).toEqual({ LLMDelta: 86 })
    }).pipe(Effect.scoped))
})

describe("EventBus: lossless", () => {
  it.effect("keeps all of 100,000 events in order with nobody reading, whatever the capacity says", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const sub = yield* bus.subscribe({ strategy: "lossless", capacity: 1 })
      for (let i = 0; i < 100_000; i++) yield* bus.publish(i % 1000 === 0 ? turnEnd(i) : delta(i))
      const all = yield* sub.takeAll
      expect(all).toHaveLength(100_000)
      expect(all.every((e, i) => e.at === i)).toBe(true)
      expect(yield* sub.droppedTotal).toBe(0)
      expect(yield* bus.dropped).toEqual({})
    }).pipe(Effect.scoped))

  it.effect("a lossless stream delivers everything to a consumer that starts late", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const stream = bus.stream({ strategy: "lossless" })
      for (let i = 0; i < 5000; i++) yield* bus.publish(delta(i))
      const seen = yield* Stream.runCollect(Stream.take(stream, 5000))
      expect(seen.map((e) => e.at)).toEqual(Array.from({ length: 5000 }, (_, i) => i))
    }))
})

describe("EventBus: subscriptions begin and end", () => {
  it.effect("stream() subscribes when called: events published before the stream runs are in it", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const stream = bus.stream({ capacity: 8 })
      expect(yield* bus.subscribers).toBe(1)
      yield* bus.publish(turnStart(0))
      yield* bus.publish(delta(1))
      const fiber = yield* Effect.forkChild(Stream.runCollect(Stream.take(stream, 3)))
      yield* bus.publish(turnEnd(2))
      expect(shown(yield* Fiber.join(fiber))).toEqual(["TurnStart@0", "LLMDelta@1", "TurnEnd@2"])
      expect(yield* bus.subscribers).toBe(0)
    }))

  it.effect("a stream's run ends its subscription, interrupted or not; a second run subscribes anew", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const stream = bus.stream()
      const running = yield* Effect.forkChild(Stream.runDrain(stream))
      yield* Effect.yieldNow
      expect(yield* bus.subscribers).toBe(1)
      yield* Fiber.interrupt(running)
      expect(yield* bus.subscribers).toBe(0)
      yield* bus.publish(delta(0))
      const again = yield* Effect.forkChild(Stream.runCollect(Stream.take(stream, 1)))
      yield* Effect.yieldNow
      expect(yield* bus.subscribers).toBe(1)
      yield* bus.publish(delta(1))
      expect(shown(yield* Fiber.join(again))).toEqual(["LLMDelta@1"])
      expect(yield* bus.subscribers).toBe(0)
    }))

  it.effect("closing the subscription's scope unsubscribes, ends its stream after what was buffered", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const scope = yield* Scope.make()
      const sub = yield* bus.subscribe({ capacity: 10 }).pipe(Scope.provide(scope))
      expect(yield* bus.subscribers).toBe(1)
      yield* bus.publish(delta(1))
      const reading = yield* Effect.forkChild(Stream.runCollect(sub.stream))
      yield* Effect.yieldNow
      yield* bus.publish(delta(2))
      yield* Scope.close(scope, Exit.void)
      expect(yield* bus.subscribers).toBe(0)
      yield* bus.publish(delta(3))
      expect((yield* Fiber.join(reading)).map((e) => e.at)).toEqual([1, 2])
      expect(yield* sub.takeAll).toEqual([])
      expect(yield* sub.droppedTotal).toBe(0)
    }))

  it.effect("a departed subscriber's losses still count in the bus's total", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      yield* Effect.scoped(Effect.gen(function*() {
        yield* bus.subscribe({ capacity: 1 })
        yield* bus.publish(delta(0))
        yield* bus.publish(delta(1))
      }))
      expect(yield* bus.subscribers).toBe(0)
      expect(yield* bus.dropped).toEqual({ LLMDelta: 1 })
    }))

  it.live("a stream derived from an eager one keeps its subscription alive through collections", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const derived = bus.stream().pipe(Stream.map((e) => e.at), Stream.take(1))
      yield* bus.publish(delta(7))
      for (let i = 0; i < 5; i++) {
        collectGarbage()
        yield* nextTask
      }
      expect(yield* bus.subscribers).toBe(1)
      expect(yield* Stream.runCollect(derived)).toEqual([7])
    }))

  it.live("a stream that is never run is unsubscribed once it is garbage-collected", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const kept = bus.stream()
      ;(() => void bus.stream())()
      expect(yield* bus.subscribers).toBe(2)
      for (let i = 0; i < 50 && (yield* bus.subscribers) > 1; i++) {
        collectGarbage()
        yield* nextTask
      }
      expect(yield* bus.subscribers).toBe(1)
      expect(kept).toBeDefined()
    }))
})

describe("AgentLoop.events", () => {
  it.effect("a lossless stream forked before the turn sees the whole turn, deltas and TurnEnd included", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const events = loop.events({ strategy: "lossless" })
      const collecting = yield* Effect.forkChild(
        Stream.runCollect(Stream.takeUntil(events, (e) => e._tag === "TurnEnd" && e.depth === 0))
      )
      yield* loop.turn("s", "go")
      const seen = yield* Fiber.join(collecting)
      expect(seen[0]?._tag).toBe("TurnStart")
      expect(seen.filter((e) => e._tag === "LLMDelta")).toHaveLength(100)
      expect(seen.at(-1)?._tag).toBe("TurnEnd")
    }).pipe(Effect.provide(Testing.layer({
      script: [{ content: Array.from({ length: 100 }, (_, i) => `d${i} `) }],
      config: { eventBufferCapacity: 4 }
    }))))
})

describe("the loop's delta events (domain/Event.ts `delta`)", () => {
  it("builds what make builds, field for field and in the same order, with and without a parent and an index", () => {
    for (const at of [place, { ...place, parentTurnId: "p" }, { ...place, parentTurnId: undefined }]) {
      for (const kind of ["text", "reasoning", "tool_call"] as const) {
        for (const toolCallIndex of [undefined, 0, 2]) {
          const fast = deltaEvent(at, 7, kind, "piece", toolCallIndex)
          const made = AgentEvent.make("LLMDelta", at, 7, { kind, text: "piece", ...(toolCallIndex === undefined ? {} : { toolCallIndex }) })
          expect(fast).toEqual(made)
          expect(Object.keys(fast)).toEqual(Object.keys(made))
        }
      }
    }
  })
})
