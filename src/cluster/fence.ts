/**
 * One writer per session, on the runner's side: the runner's ownership of its sessions, and the
 * turns it runs, owned by the runner rather than by the entity that asked for them.
 *
 * - Ownership: the runner has an id of its own (per process); when the session entity starts here
 *   it takes the session (`SessionFencing.acquire`), and the turns it runs commit under that epoch
 *   and their request (`CommitTicket`). A runner that was paused, or lost its shard locks, and wakes
 *   up after another took the session cannot write: the store rejects its commit.
 * - Turns outlive their entity: Effect Cluster interrupts a shard's entities when the runner loses
 *   the shard (its lock renewal was late, say). A turn still holding its fence has no reason to
 *   stop: it runs in the runner's scope, and when the request comes back (to this runner, which
 *   took the shard again) it joins the running turn, or reads the result it left.
 * - A request whose turn is neither running here nor remembered learns its outcome from the store
 *   (`outcome.ts`).
 */
import { randomUUID } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { ContentRejected } from "../domain/errors.ts"
import type { TurnResult } from "../domain/Turn.ts"
import type { SessionStoreShape } from "../services/SessionStore.ts"
import * as Outcome from "./outcome.ts"
import { retryTransientOrDie } from "../domain/connectionFailure.ts"

/** How many finished turns a runner remembers, for requests delivered again after their entity was interrupted. */
const REMEMBERED = 4096

/** The runner's side of fencing. */
export interface RunnerTurns {
  /** Takes the session for this runner: the epoch its turns commit under; none when the store does not fence. */
  readonly take: (sessionKey: string) => Effect.Effect<number | undefined>
  /**
   * Runs the request's turn in the runner's scope (once: a request delivered again joins it, or
   * gets the result it left); the caller puts the turn under the session's ticket.
   */
  readonly run: (requestId: string, turn: Effect.Effect<TurnResult, ContentRejected>) => Effect.Effect<TurnResult, ContentRejected>
  /** The turn of a request this runner runs or ran, if it remembers it. */
  readonly known: (requestId: string) => Option.Option<Effect.Effect<TurnResult, ContentRejected>>
  /**
   * How many log entries the request's commits appended so far (0: none); `undefined` when the
   * store does not fence, so keeps no record of them.
   */
  readonly entries: (requestId: string) => Effect.Effect<number | undefined>
  /**
   * The outcome of a request some runner started and none answered, from the store: its commit's
   * result, or `aborted` with nothing stored. `lost` says whether the store could not tell. `from`:
   * the entries the request had committed before the turn (a `Send` request's later turns extend
   * its record), which are not the turn's.
   */
  readonly outcome: (requestId: string, sessionKey: string, from?: number) => Effect.Effect<{ readonly result: TurnResult; readonly lost: boolean }>
}

/** Builds the runner's side of fencing on its store; turns run in the scope's lifetime. */
export const make = (store: SessionStoreShape): Effect.Effect<RunnerTurns, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const owner = randomUUID()
    const fencing = store.fencing
    const turns = new Map<string, Fiber.Fiber<TurnResult, ContentRejected>>()

    const remember = (requestId: string, fiber: Fiber.Fiber<TurnResult, ContentRejected>) => {
      turns.set(requestId, fiber)
      if (turns.size <= REMEMBERED) return
      for (const [id, old] of turns) {
        if (turns.size <= REMEMBERED) break
        if (old.pollUnsafe() !== undefined) turns.delete(id)
      }
    }

    const known: RunnerTurns["known"] = (requestId) => {
      const fiber = turns.get(requestId)
      return fiber === undefined ? Option.none() : Option.some(Fiber.join(fiber))
    }

    return {
      // a store that cannot say who owns the session cannot let a turn run: that is a defect, and
      // the cluster delivers the request again
      take: (sessionKey) => fencing === undefined ? Effect.succeed(undefined) : retryTransientOrDie(fencing.acquire(sessionKey, owner)),
      run: (requestId, turn) =>
        Effect.suspend(() => {
          const running = known(requestId)
          if (Option.isSome(running)) return running.value
          // started and remembered at once: a turn running unremembered could commit after a
          // redelivery of its request was told it never happened
          return Effect.uninterruptibleMask((restore) =>
            Effect.flatMap(Effect.forkIn(Effect.interruptible(turn), scope, { startImmediately: true }), (fiber) => {
              remember(requestId, fiber)
              return restore(Fiber.join(fiber))
            })
          )
        }),
      known,
      entries: (requestId) =>
        fencing === undefined
          ? Effect.succeed(undefined)
          : fencing.committed(requestId).pipe(
            Effect.map(Option.match({ onNone: () => 0, onSome: (turn) => turn.entries.length })),
            retryTransientOrDie
          ),
      outcome: (requestId, sessionKey, from = 0) =>
        fencing === undefined
          ? Effect.succeed({ result: Outcome.aborted(requestId, sessionKey), lost: true })
          : fencing.committed(requestId).pipe(
            Effect.map((found) => {
              const turn = Option.getOrUndefined(found)
              return turn === undefined || turn.entries.length <= from
                ? { result: Outcome.aborted(requestId, sessionKey), lost: true }
                : { result: Outcome.committed(requestId, from === 0 ? turn : { ...turn, entries: turn.entries.slice(from) }, from), lost: false }
            }),
            retryTransientOrDie
          )
    }
  })
