/**
 * The in-memory `EventBus`: one bounded queue per subscriber, filled on the publisher's fiber.
 *
 * Publishing is a synchronous loop over the subscribers: no fiber, no lock, no wait. A full
 * buffer loses an event (the new one for `dropping`, the oldest for `sliding`) and counts it
 * under that event's kind, for the subscriber and for the bus.
 */
import { Cause, Effect, Layer, Queue, Stream } from "effect"
import type { AgentEvent, EventKind } from "../domain/Event.ts"
import { EventBus, type DropCounts, type EventBusShape, type SubscribeOptions } from "../services/EventBus.ts"
import { LoopConfig } from "../services/LoopConfig.ts"

interface Subscriber {
  readonly deliver: (event: AgentEvent) => void
}

const countDrop = (counts: Partial<Record<EventKind, number>>, kind: EventKind) => {
  counts[kind] = (counts[kind] ?? 0) + 1
}

/** Builds a bus whose subscribers default to `defaultCapacity`. */
export const make = (defaultCapacity = 16): Effect.Effect<EventBusShape> =>
  Effect.sync(() => {
    const subscribers = new Set<Subscriber>()
    const busDropped: Partial<Record<EventKind, number>> = {}

    const subscribe = (options: SubscribeOptions = {}) =>
      Effect.gen(function*() {
        const capacity = Math.max(1, options.capacity ?? defaultCapacity)
        const kinds = options.kinds ? new Set(options.kinds) : undefined
        const sliding = options.strategy === "sliding"
        const queue = yield* Queue.dropping<AgentEvent, Cause.Done>(capacity)
        const dropped: Partial<Record<EventKind, number>> = {}
        const lose = (event: AgentEvent) => {
          countDrop(dropped, event._tag)
          countDrop(busDropped, event._tag)
        }
        const subscriber: Subscriber = {
          deliver: (event) => {
            if (kinds && !kinds.has(event._tag)) return
            if (sliding && Queue.isFullUnsafe(queue)) {
              const oldest = Queue.takeUnsafe(queue)
              if (oldest && oldest._tag === "Success") lose(oldest.value)
            }
            if (!Queue.offerUnsafe(queue, event)) lose(event)
          }
        }
        yield* Effect.acquireRelease(
          Effect.sync(() => subscribers.add(subscriber)),
          () => Effect.andThen(Effect.sync(() => subscribers.delete(subscriber)), Queue.end(queue))
        )
        const snapshot = Effect.sync((): DropCounts => ({ ...dropped }))
        return {
          take: Queue.take(queue).pipe(Effect.catchCause(() => Effect.never)),
          takeAll: Queue.clear(queue).pipe(Effect.orElseSucceed((): ReadonlyArray<AgentEvent> => [])),
          stream: Stream.fromQueue(queue),
          dropped: snapshot,
          droppedTotal: Effect.map(snapshot, (counts) => Object.values(counts).reduce((a, b) => a + (b ?? 0), 0))
        }
      })

    return {
      publish: (event) =>
        Effect.sync(() => {
          for (const subscriber of subscribers) subscriber.deliver(event)
        }),
      subscribe,
      stream: (options) => Stream.unwrap(Effect.map(subscribe(options), (sub) => sub.stream)),
      dropped: Effect.sync((): DropCounts => ({ ...busDropped }))
    }
  })

/** The bus, with the default capacity taken from `eventBufferCapacity`. */
export const layer: Layer.Layer<EventBus, never, LoopConfig> = Layer.effect(
  EventBus,
  Effect.flatMap(LoopConfig, (config) => make(config.eventBufferCapacity))
)

/** The bus with a fixed default capacity, for use without a `LoopConfig`. */
export const layerCapacity = (capacity = 16): Layer.Layer<EventBus> => Layer.effect(EventBus, make(capacity))
