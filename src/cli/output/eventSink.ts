/**
 * One subscriber for the CLI: every event goes, in order, to each handler (renderer, events file).
 * Once a turn has returned, `flushed(turnId)` waits until its `TurnEnd` has been handled, so that
 * nothing of it is printed after the next prompt.
 *
 * The subscription is bounded and may drop events, `TurnEnd` included, so `flushed` never waits on
 * a `TurnEnd` that may have been dropped: the bus delivers synchronously, so by the time a turn
 * has returned its `TurnEnd` is either in the buffer (and will be handled) or already counted as
 * dropped.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../domain/Event.ts"
import { EventBus } from "../../services/EventBus.ts"

/** Large enough that a terminal never loses a delta; drops are reported, not silent. */
const CAPACITY = 100_000

/** A running sink. */
export interface EventSink {
  /**
   * Completes once the root `TurnEnd` of `turnId` has gone through every handler, or at once if a
   * `TurnEnd` was dropped since the last call. Call it only after the turn has returned.
   */
  readonly flushed: (turnId: string) => Effect.Effect<void>
  /**
   * Watches, for the scope, for an event `which` picks, one the caller is about to cause (the
   * `SessionSummarize` of `AgentLoop.compact`); the effect returned completes once such an event
   * has gone through every handler, or at once if events were dropped since the watch began.
   */
  readonly watch: (which: (event: AgentEvent) => boolean) => Effect.Effect<Effect.Effect<void>, never, Scope.Scope>
  /** Events this subscriber lost (its buffer was full). */
  readonly dropped: Effect.Effect<number>
}

/** Subscribes now and handles events in a fiber owned by the scope; `capacity` is the subscription's buffer. */
export const start = (handlers: ReadonlyArray<(event: AgentEvent) => Effect.Effect<void>>, capacity = CAPACITY) =>
  Effect.gen(function*() {
    const bus = yield* EventBus
    const subscription = yield* bus.subscribe({ capacity })
    const ended = new Map<string, Deferred.Deferred<void>>()
    let turnEndsLost = 0
    const endOf = (turnId: string) => {
      let deferred = ended.get(turnId)
      if (deferred === undefined) {
        deferred = Deferred.makeUnsafe<void>()
        ended.set(turnId, deferred)
      }
      return deferred
    }
    const watchers = new Set<{ readonly which: (event: AgentEvent) => boolean; readonly seen: Deferred.Deferred<void> }>()
    const handle = (event: AgentEvent) =>
      Effect.gen(function*() {
        for (const handler of handlers) yield* handler(event)
        if (event._tag === "TurnEnd" && event.depth === 0) yield* Deferred.succeed(endOf(event.turnId), undefined)
        for (const watcher of watchers) {
          if (!watcher.which(event)) continue
          watchers.delete(watcher)
          yield* Deferred.succeed(watcher.seen, undefined)
        }
      })
    // The stream hands over whatever is buffered as one batch: no scheduler hop per event.
    yield* Effect.forkScoped(Stream.runForEach(subscription.stream, handle))
    const sink: EventSink = {
      flushed: (turnId) =>
        Effect.gen(function*() {
          const lost = (yield* subscription.dropped).TurnEnd ?? 0
          const mayBeLost = lost > turnEndsLost
          turnEndsLost = lost
          if (!mayBeLost) yield* Deferred.await(endOf(turnId))
        }).pipe(Effect.ensuring(Effect.sync(() => ended.delete(turnId)))),
      watch: (which) =>
        Effect.gen(function*() {
          const before = yield* subscription.droppedTotal
          const watcher = yield* Effect.acquireRelease(
            Effect.sync(() => {
              const added = { which, seen: Deferred.makeUnsafe<void>() }
              watchers.add(added)
              return added
            }),
            (added) => Effect.sync(() => watchers.delete(added))
          )
          return Effect.gen(function*() {
            if ((yield* subscription.droppedTotal) === before) yield* Deferred.await(watcher.seen)
          })
        }),
      dropped: subscription.droppedTotal
    }
    return sink
  }) satisfies Effect.Effect<EventSink, never, EventBus | Scope.Scope>
