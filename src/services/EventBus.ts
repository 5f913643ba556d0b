/**
 * `EventBus`: fan-out of `AgentEvent`s to any number of subscribers (DESIGN §4).
 *
 * - `publish` never blocks and never fails; it runs on the publisher's fiber (no fiber per event).
 * - Each subscriber has its own buffer. A bounded one (`dropping`, the default, or `sliding`)
 *   loses its own events when its consumer lags, never anyone else's, and never slows the loop.
 * - Lifecycle events (`TurnStart`, `TurnEnd`, `SubTurnEnd`, `Error`) are not the ones a bounded
 *   subscriber loses: on a full buffer a lifecycle event takes the place of the oldest event of
 *   another kind. One is lost only when the buffer holds nothing but lifecycle events.
 * - `lossless` never loses an event: its buffer grows while its consumer lags, so memory grows
 *   with the lag. For renderers and recorders that must see everything.
 * - Every lost event is counted per kind (`dropped`), for the subscriber and for the bus.
 * - `stream(...)` subscribes when it is called, not when the stream is first run: a stream
 *   created (or forked) before a turn sees the whole turn. Its subscription ends when its run ends.
 *   A stream that is never run keeps a buffer (bounded unless `lossless`) until the stream value
 *   is garbage-collected; a second run of the same stream subscribes anew when it starts.
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { EventBus } from "effect-agent-loop"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const bus = yield* EventBus
 *   const ends = yield* bus.subscribe({ capacity: 64, kinds: ["TurnEnd"] })
 *   const everything = bus.stream({ strategy: "lossless" }) // subscribed already
 *   const event = yield* ends.take
 * }))
 * ```
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AgentEvent, EventKind } from "../domain/Event.ts"

/**
 * What a subscriber does when its buffer is full (lifecycle events aside, see above):
 * `dropping` loses the new event, `sliding` the oldest buffered one, `lossless` never loses one
 * (its buffer is unbounded and `capacity` is ignored).
 */
export type OverflowStrategy = "dropping" | "sliding" | "lossless"

/** The kinds a bounded subscriber keeps over any other kind when its buffer is full. */
export const lifecycleKinds: ReadonlyArray<EventKind> = ["TurnStart", "TurnEnd", "SubTurnEnd", "Error"]

const lifecycle: Readonly<Partial<Record<EventKind, true>>> = Object.fromEntries(lifecycleKinds.map((k) => [k, true]))

/** Whether `event` is one of the `lifecycleKinds`. */
export const isLifecycle = (event: AgentEvent): boolean => lifecycle[event._tag] === true

/** Options of a subscription. */
export interface SubscribeOptions {
  /**
   * Size of this subscriber's buffer (at least 1); default `eventBufferCapacity` (16), also for
   * `NaN`. Ignored by `lossless`.
   */
  readonly capacity?: number
  /** What a full buffer does; default `dropping`. */
  readonly strategy?: OverflowStrategy
  /** Only these kinds are delivered (and counted). */
  readonly kinds?: ReadonlyArray<EventKind>
}

/** Events lost by a subscriber, per kind. */
export type DropCounts = Readonly<Partial<Record<EventKind, number>>>

/** A live subscription; closing its scope unsubscribes. */
export interface Subscription {
  /** The next event, waiting for one (forever once the subscription has ended and is empty). */
  readonly take: Effect.Effect<AgentEvent>
  /** Every buffered event, without waiting. */
  readonly takeAll: Effect.Effect<ReadonlyArray<AgentEvent>>
  /** The events as a stream, in batches of whatever is buffered; ends when the scope closes. */
  readonly stream: Stream.Stream<AgentEvent>
  /** Events this subscriber lost, per kind. */
  readonly dropped: Effect.Effect<DropCounts>
  /** The sum of `dropped`. */
  readonly droppedTotal: Effect.Effect<number>
}

/** The bus. */
export interface EventBusShape {
  /** Delivers `event` to every subscriber now. */
  readonly publish: (event: AgentEvent) => Effect.Effect<void>
  /**
   * `publish` as a plain function, for a caller that is already inside an effect (an engine
   * emitting from `Effect.sync`): it saves an effect per event, which the loop's steps, publishing
   * one event per streamed delta, need (DESIGN §11 measures it). Delivers at once; never throws.
   */
  readonly publishUnsafe: (event: AgentEvent) => void
  /** A subscription for the life of the scope. */
  readonly subscribe: (options?: SubscribeOptions) => Effect.Effect<Subscription, never, Scope.Scope>
  /** A stream of events, subscribed at this call (see above). */
  readonly stream: (options?: SubscribeOptions) => Stream.Stream<AgentEvent>
  /** Events lost by all subscribers together, per kind. */
  readonly dropped: Effect.Effect<DropCounts>
  /** How many subscriptions are live. */
  readonly subscribers: Effect.Effect<number>
}

/** The event bus service. */
export class EventBus extends Context.Service<EventBus, EventBusShape>()("effect-agent-loop/EventBus") {}
