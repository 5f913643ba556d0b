/**
 * The client's view of remote events: while someone on the client listens (a subscription, an
 * `onEvent` hook) and a call of the client runs for a session, that session's events are streamed
 * from its runner and published on the client's own event bus, so renderers and observers written
 * against `AgentLoop` work unchanged. With no one listening nothing is streamed.
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as RcMap from "effect/RcMap"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../domain/Event.ts"
import type { EventBusShape, SubscribeOptions } from "../services/EventBus.ts"
import type { SessionEvent } from "./protocol.ts"

/** How long a call waits for its session's subscription to be in place, and for its `TurnEnd`. */
const SETTLE_DEADLINE = Duration.seconds(5)

/** How many `TurnEnd`s and `Resumed`s are remembered to drop duplicates (a lost or resumed turn's may come twice). */
const REMEMBERED_ENDS = 1024

export interface Mirror {
  /** Subscribes on the client's bus, counting the listener for as long as the scope is open. */
  readonly subscribe: EventBusShape["subscribe"]
  readonly stream: (options?: SubscribeOptions) => Stream.Stream<AgentEvent>
  /** Counts a listener for the life of the scope (an `onEvent` hook). */
  readonly listen: Effect.Effect<void, never, Scope.Scope>
  /** For the life of the scope: the session's events reach the bus, when anyone listens. */
  readonly watch: (sessionKey: string) => Effect.Effect<void, never, Scope.Scope>
  /**
   * Waits (bounded) until the turn's `TurnEnd` was published, or publishes `end` when none comes;
   * first `resumed`, the turn's `Resumed` event, unless it was published already. When the wait
   * passes with no `TurnEnd` (its runner's stream broke: the runner died and the turn ended on
   * another), `fallback` is published, so that a listener never waits for an end that came.
   */
  readonly settle: (turnId: string, end: AgentEvent | undefined, resumed?: AgentEvent, fallback?: AgentEvent) => Effect.Effect<void>
}

/** Builds the mirror over the client's bus; `sessionEvents` opens a session's remote event stream. */
export const make = (
  bus: EventBusShape,
  sessionEvents: (sessionKey: string) => Stream.Stream<SessionEvent, unknown>
): Effect.Effect<Mirror, never, Scope.Scope> =>
  Effect.gen(function*() {
    let listeners = 0
    const ended = new Set<string>()
    const remember = (key: string) => {
      ended.add(key)
      if (ended.size > REMEMBERED_ENDS) ended.delete(ended.values().next().value!)
    }
    const waiting = new Map<string, Deferred.Deferred<void>>()

    const publish = (event: AgentEvent) =>
      Effect.suspend(() => {
        if (event._tag === "Resumed") {
          const key = `resumed:${event.turnId}`
          if (ended.has(key)) return Effect.void
          remember(key)
          return bus.publish(event)
        }
        if (event._tag !== "TurnEnd") return bus.publish(event)
        if (ended.has(event.turnId)) return Effect.void
        remember(event.turnId)
        return Effect.andThen(bus.publish(event), Effect.suspend(() => {
          const waiter = waiting.get(event.turnId)
          return waiter ? Deferred.succeed(waiter, undefined) : Effect.void
        }))
      })

    const streams = yield* RcMap.make({
      lookup: (sessionKey: string) =>
        Effect.gen(function*() {
          const subscribed = yield* Deferred.make<void>()
          yield* sessionEvents(sessionKey).pipe(
            Stream.runForEach((event) => (event._tag === "Subscribed" ? Deferred.succeed(subscribed, undefined) : publish(event))),
            // a mirror that breaks only costs its observers events; the calls go on
            Effect.ignore,
            Effect.forkScoped
          )
          yield* Effect.timeoutOption(Deferred.await(subscribed), SETTLE_DEADLINE)
        })
    })

    const listen = Effect.acquireRelease(Effect.sync(() => listeners++), () => Effect.sync(() => listeners--)).pipe(Effect.asVoid)

    return {
      subscribe: (options) => Effect.andThen(listen, bus.subscribe(options)),
      stream: (options) => Stream.unwrap(Effect.map(listen, () => bus.stream(options))),
      listen,
      watch: (sessionKey) => (listeners === 0 ? Effect.void : Effect.asVoid(RcMap.get(streams, sessionKey))),
      settle: (turnId, end, resumed, fallback) =>
        Effect.suspend(() => {
          if (listeners === 0) return Effect.void
          if (resumed !== undefined) return Effect.andThen(publish(resumed), end === undefined ? Effect.void : publish(end))
          if (ended.has(turnId)) return Effect.void
          if (end !== undefined) return publish(end)
          const waiter = Deferred.makeUnsafe<void>()
          waiting.set(turnId, waiter)
          return Effect.timeoutOption(Deferred.await(waiter), SETTLE_DEADLINE).pipe(
            Effect.ensuring(Effect.sync(() => waiting.delete(turnId))),
            Effect.andThen(Effect.suspend(() => fallback === undefined || ended.has(turnId) ? Effect.void : publish(fallback)))
          )
        })
    }
  })
