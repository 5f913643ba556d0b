/**
 * Event bus throughput: events per second published to 16 subscribers, 15 drained as they go
 * (every 1,000 events) and one stalled (never read).
 */
import { Effect } from "effect"
import { AgentEvent, EventBus, EventBusLive } from "../src/index.ts"

const place = { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }
const delta = (i: number) => AgentEvent.make("LLMDelta", place, i, { kind: "text", text: "x" })

/** What one run measured. */
export interface BusRun {
  readonly eventsPerSecond: number
  readonly stalledDropped: number
}

/** Publishes `total` events through `publish` and times it. */
export const throughput = (total = 1_000_000): Effect.Effect<BusRun> =>
  Effect.gen(function*() {
    const bus = yield* EventBus
    const readers = yield* Effect.forEach(Array.from({ length: 15 }), () => bus.subscribe({ capacity: 1024 }))
    const stalled = yield* bus.subscribe({ capacity: 16 })
    const start = performance.now()
    for (let i = 0; i < total; i++) {
      yield* bus.publish(delta(i))
      if (i % 1000 === 999) yield* Effect.forEach(readers, (r) => r.takeAll)
    }
    const seconds = (performance.now() - start) / 1000
    return { eventsPerSecond: total / seconds, stalledDropped: yield* stalled.droppedTotal }
  }).pipe(Effect.scoped, Effect.provide(EventBusLive.layerCapacity(16)))
