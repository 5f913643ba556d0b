/**
 * One lane per session on a runner: the session's `Turn` requests and the turns `Send` requests
 * route run one request at a time, in the order the runner received them (the cluster's order: the
 * requests of an entity are delivered in the order they were stored).
 *
 * Why the entity keeps an order of its own rather than leaving it to the loop's per-session lock:
 * between receiving a request and asking the loop for its turn, a runner does database work
 * (admission, claim, the stored outcome, the checkpoint), which does not keep the order. So a
 * request taken over from a dead runner (more of that work) could run after one sent later, and a
 * `Send` arriving between a request's turn and its follow-up could run before the follow-up. And a
 * request waiting in its lane is not claimed yet: when its runner dies, it was never started, and
 * it runs on the session's next runner as a new request, in its place.
 *
 * A place is taken when the request arrives (synchronously, so no await reorders it) and given up
 * when its work ends, or passed on when the request will not run in the lane (its delivery joined
 * one under way, or it steered the running turn): a place given up early still holds its followers
 * until the place before it is free. A session whose last place was passed early keeps its entry
 * (one completed `Deferred`) until its next request.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

/** A request's place in its session's lane. */
export interface Place {
  /** Runs `work` once every earlier place of the lane is free, then frees this one. */
  readonly run: <A, E, R>(work: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** `run` for a stream: it holds the place until it ends. */
  readonly runStream: <A, E, R>(work: Stream.Stream<A, E, R>) => Stream.Stream<A, E, R>
  /**
   * Gives the place up unless its work started (a delivery that joined one under way, or that
   * steered the running turn): free once the places before it are; idempotent.
   */
  readonly pass: Effect.Effect<void>
}

/** The lanes of a runner's sessions. */
export interface Lanes {
  /** A new place at the end of the session's lane. */
  readonly take: (sessionKey: string) => Place
}

/** Builds the lanes; a session's entry lives while some place of it is not free. */
export const make = (): Lanes => {
  const tails = new Map<string, Deferred.Deferred<void>>()
  return {
    take: (sessionKey) => {
      const previous = tails.get(sessionKey)
      const mine = Deferred.makeUnsafe<void>()
      tails.set(sessionKey, mine)
      const before = previous === undefined ? Effect.void : Deferred.await(previous)
      let state: "waiting" | "started" | "reached" = "waiting"
      // the places before it are free, and its work ended: it is free, and the session's entry goes if no place follows
      const free = Effect.andThen(Deferred.succeed(mine, undefined), Effect.sync(() => {
        if (tails.get(sessionKey) === mine) tails.delete(sessionKey)
      }))
      // given up before its turn: free once the places before it are, so no follower overtakes them
      const chained = Effect.asVoid(Deferred.completeWith(mine, before))
      const end = Effect.suspend(() => state === "reached" ? free : chained)
      const enter = Effect.andThen(
        Effect.sync(() => (state = "started")),
        Effect.andThen(before, Effect.sync(() => (state = "reached")))
      )
      return {
        run: (work) => Effect.ensuring(Effect.andThen(enter, work), end),
        runStream: (work) => Stream.ensuring(Stream.unwrap(Effect.as(enter, work)), end),
        pass: Effect.suspend(() => state === "waiting" ? chained : Effect.void)
      }
    }
  }
}
