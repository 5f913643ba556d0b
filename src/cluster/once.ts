/**
 * One step per request id on a runner. Effect Cluster may deliver a persisted request again while
 * its first delivery is still being handled here (the entity was interrupted and started again, a
 * shard came back): a second delivery arriving between the first's claim and its turn's start would
 * find the request claimed and no turn running, and report it lost while it runs (or run it twice).
 * The step (known-check, claim, outcome or checkpoint, start) runs once in the runner's scope; a
 * delivery arriving meanwhile joins it and gets the same answer.
 */
import { Effect, Fiber, type Scope } from "effect"

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
    const running = new Map<string, Fiber.Fiber<A, E>>()
    return {
      once: <R>(requestId: string, step: Effect.Effect<A, E, R>) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.suspend(() => {
            const joined = running.get(requestId)
            if (joined !== undefined) return restore(Fiber.join(joined))
            const owned = Effect.ensuring(Effect.interruptible(step), Effect.sync(() => running.delete(requestId)))
            // registered before the forked step first runs: no delivery can see the request unregistered meanwhile
            return Effect.flatMap(Effect.forkIn(owned, scope), (fiber) => {
              running.set(requestId, fiber)
              return restore(Fiber.join(fiber))
            })
          })
        ),
      size: () => running.size
    }
  })
