/**
 * One step per request id on a runner. Effect Cluster may deliver a persisted request again while
 * its first delivery is still being handled here (the entity was interrupted and started again, a
 * shard came back): a second delivery arriving between the first's claim and its turn's start would
 * find the request claimed and no turn running, and report it lost while it runs (or run it twice).
 * The step (known-check, claim, outcome or checkpoint, start) runs once in the runner's scope; a
 * delivery arriving meanwhile joins it and gets the same answer. A streamed request (`Send`) runs
 * its stream once the same way, and every delivery meanwhile gets all its chunks from the first.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import type * as Take from "effect/Take"

/** Runs a request's step once while it is under way. */
export interface Once<A, E> {
  /** Runs `step` for the request, or joins the step already running for it; interrupting the caller leaves the step running. */
  readonly once: <R>(requestId: string, step: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** How many steps are under way (each leaves when it ends). */
  readonly size: () => number
}

/** Steps run in the scope's lifetime; the map holds only the ones under way. */
export const make = <A, E>(): Effect.Effect<Once<A, E>, never, Scope.Scope> =>
  Effect.map(Effect.scope, (scope) => {
    const running = new Map<string, Deferred.Deferred<A, E>>()
    // a delivery's look-up and registration are one step, however the fiber is scheduled
    const registering = Semaphore.makeUnsafe(1)
    return {
      once: <R>(requestId: string, step: Effect.Effect<A, E, R>) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(
            registering.withPermits(1)(Effect.gen(function*() {
              const joined = running.get(requestId)
              if (joined !== undefined) return joined
              const done = yield* Deferred.make<A, E>()
              running.set(requestId, done)
              yield* Effect.forkIn(
                Effect.interruptible(step).pipe(
                  Effect.onExit((exit) => Deferred.done(done, exit)),
                  Effect.ensuring(Effect.sync(() => running.delete(requestId)))
                ),
                scope
              )
              return done
            })),
            (done) => restore(Deferred.await(done))
          )
        ),
      size: () => running.size
    }
  })

/** Runs a request's stream once while it is under way. */
export interface OnceStream<A, E> {
  /** The request's stream, run once in the runner's scope; each delivery meanwhile gets every chunk from the first on. */
  readonly once: (requestId: string, stream: Stream.Stream<A, E>) => Stream.Stream<A, E>
  /** How many streams are under way (each leaves when it ends). */
  readonly size: () => number
}

/** Streams run in the scope's lifetime, their chunks kept for the deliveries until they end. */
export const makeStream = <A, E>(): Effect.Effect<OnceStream<A, E>, never, Scope.Scope> =>
  Effect.map(Effect.scope, (scope) => {
    const running = new Map<string, PubSub.PubSub<Take.Take<A, E>>>()
    // a delivery's look-up and registration are one step, however the fiber is scheduled
    const registering = Semaphore.makeUnsafe(1)
    return {
      once: (requestId, stream) =>
        Stream.unwrap(Effect.uninterruptible(registering.withPermits(1)(Effect.gen(function*() {
          const joined = running.get(requestId)
          if (joined !== undefined) return Stream.fromPubSubTake(joined)
          // every chunk kept while the stream runs: a delivery may join at any point and reads them all
          const chunks = yield* PubSub.unbounded<Take.Take<A, E>>({ replay: Number.MAX_SAFE_INTEGER })
          running.set(requestId, chunks)
          const publish = (take: Take.Take<A, E>) => Effect.asVoid(PubSub.publish(chunks, take))
          const run = stream.pipe(
            Stream.runForEachArray((array) => publish(array)),
            Effect.exit,
            Effect.flatMap((exit) => publish(Exit.isSuccess(exit) ? Exit.void : exit)),
            Effect.ensuring(Effect.sync(() => running.delete(requestId))),
            Effect.interruptible
          )
          yield* Effect.forkIn(run, scope)
          return Stream.fromPubSubTake(chunks)
        })))),
      size: () => running.size
    }
  })
