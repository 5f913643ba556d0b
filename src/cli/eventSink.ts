/**
 * One subscriber for the CLI: every event goes, in order, to each handler (renderer, events file).
 * Callers wait with `flushed(turnId)` until a turn's `TurnEnd` has been handled, so nothing is
 * lost or printed after the prompt when a turn returns.
 */
import { Deferred, Effect, Scope } from "effect"
import type { AgentEvent } from "../domain/Event.ts"
import { EventBus } from "../services/EventBus.ts"

/** Large enough that a terminal never loses a delta; drops are reported, not silent. */
const CAPACITY = 100_000

/** A running sink. */
export interface EventSink {
  /** Completes once the root `TurnEnd` of `turnId` has gone through every handler. */
  readonly flushed: (turnId: string) => Effect.Effect<void>
  /** Events this subscriber lost (its buffer was full). */
  readonly dropped: Effect.Effect<number>
}

/** Subscribes now and handles events in a fiber owned by the scope. */
export const start = (handlers: ReadonlyArray<(event: AgentEvent) => Effect.Effect<void>>) =>
  Effect.gen(function*() {
    const bus = yield* EventBus
    const subscription = yield* bus.subscribe({ capacity: CAPACITY })
    const ended = new Map<string, Deferred.Deferred<void>>()
    const endOf = (turnId: string) => {
      let deferred = ended.get(turnId)
      if (deferred === undefined) {
        deferred = Deferred.makeUnsafe<void>()
        ended.set(turnId, deferred)
      }
      return deferred
    }
    const handle = (event: AgentEvent) =>
      Effect.gen(function*() {
        for (const handler of handlers) yield* handler(event)
        if (event._tag === "TurnEnd" && event.depth === 0) yield* Deferred.succeed(endOf(event.turnId), undefined)
      })
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(subscription.take, handle)))
    const sink: EventSink = {
      flushed: (turnId) => Deferred.await(endOf(turnId)),
      dropped: subscription.droppedTotal
    }
    return sink
  }) satisfies Effect.Effect<EventSink, never, EventBus | Scope.Scope>
