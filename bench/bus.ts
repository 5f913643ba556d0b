/**
 * Event bus throughput: events per second published to 16 subscribers, 15 drained as they go
 * (every 1,000 events) and one stalled (never read, so it loses almost every event).
 *
 * Three ways, from most to least overhead around the bus:
 * - `make+publish`: each event built (`AgentEvent.make`) and published with `yield* bus.publish`
 *   from a generator (the first way this was measured; building the event and running one effect
 *   per event cost more than the bus itself);
 * - `publish`: events built beforehand, `yield* bus.publish` per event;
 * - `publishUnsafe`: events built beforehand, published by a plain call, as an engine does from
 *   inside an effect that is already running: the bus alone.
 */
import { Effect } from "effect"
import { AgentEvent, EventBus, EventBusLive } from "../src/index.ts"

/** How events reach the bus. */
export type PublishWay = "make+publish" | "publish" | "publishUnsafe"

const place = { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }
const delta = (i: number) => AgentEvent.make("LLMDelta", place, i, { kind: "text", text: "x" })
/** Distinct events, reused in turn, so that the prebuilt ways do not publish one object over and over. */
const prebuilt = Array.from({ length: 1024 }, (_, i) => delta(i))

/** What one run measured. */
export interface BusRun {
  readonly eventsPerSecond: number
  readonly stalledDropped: number
}

/** Publishes `total` events the given way and times it. */
export const throughput = (way: PublishWay, total = 1_000_000): Effect.Effect<BusRun> =>
  Effect.gen(function*() {
    const bus = yield* EventBus
    const readers = yield* Effect.forEach(Array.from({ length: 15 }), () => bus.subscribe({ capacity: 1024 }))
    const stalled = yield* bus.subscribe({ capacity: 16 })
    const start = performance.now()
    for (let i = 0; i < total; i++) {
      if (way === "make+publish") yield* bus.publish(delta(i))
      else if (way === "publish") yield* bus.publish(prebuilt[i & 1023]!)
      else bus.publishUnsafe(prebuilt[i & 1023]!)
      if (i % 1000 === 999) yield* Effect.forEach(readers, (r) => r.takeAll)
    }
    const seconds = (performance.now() - start) / 1000
    return { eventsPerSecond: total / seconds, stalledDropped: yield* stalled.droppedTotal }
  }).pipe(Effect.scoped, Effect.provide(EventBusLive.layerCapacity(16)))
