/**
 * `EventBus`: fan-out of `AgentEvent`s to any number of subscribers.
 *
 * `publish` never blocks and never fails. Each subscriber has its own bounded buffer: a slow
 * subscriber loses its own events (counted per kind in `dropped`), never anyone else's, and
 * never slows the loop.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { EventBus } from "effect-agent-loop"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const bus = yield* EventBus
 *   const sub = yield* bus.subscribe({ capacity: 64, kinds: ["TurnEnd"] })
 *   const event = yield* sub.take
 * }))
 * ```
 */
import { Context, Effect, Scope, Stream } from "effect"
import type { AgentEvent, EventKind } from "../domain/Event.ts"

/** What a subscriber does when its buffer is full. */
export type OverflowStrategy = "dropping" | "sliding"

/** Options of a subscription. */
export interface SubscribeOptions {
  /** Size of this subscriber's buffer; default `eventBufferCapacity` (16). */
  readonly capacity?: number
  /** `dropping` (default) loses the new event, `sliding` loses the oldest buffered one. */
  readonly strategy?: OverflowStrategy
  /** Only these kinds are delivered (and counted). */
  readonly kinds?: ReadonlyArray<EventKind>
}

/** Events lost by a subscriber, per kind. */
export type DropCounts = Readonly<Partial<Record<EventKind, number>>>

/** A live subscription; closing its scope unsubscribes. */
export interface Subscription {
  /** The next event, waiting for one. */
  readonly take: Effect.Effect<AgentEvent>
  /** Every buffered event, without waiting. */
  readonly takeAll: Effect.Effect<ReadonlyArray<AgentEvent>>
  /** The events as a stream (ends when the scope closes). */
  readonly stream: Stream.Stream<AgentEvent>
  /** Events this subscriber lost, per kind. */
  readonly dropped: Effect.Effect<DropCounts>
  /** The sum of `dropped`. */
  readonly droppedTotal: Effect.Effect<number>
}

/** The bus. */
export interface EventBusShape {
  readonly publish: (event: AgentEvent) => Effect.Effect<void>
  readonly subscribe: (options?: SubscribeOptions) => Effect.Effect<Subscription, never, Scope.Scope>
  readonly stream: (options?: SubscribeOptions) => Stream.Stream<AgentEvent>
  /** Events lost by all subscribers together, per kind. */
  readonly dropped: Effect.Effect<DropCounts>
}

/** The event bus service. */
export class EventBus extends Context.Service<EventBus, EventBusShape>()("effect-agent-loop/EventBus") {}
