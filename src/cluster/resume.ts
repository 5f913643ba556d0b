/**
 * Turns that survive their runner: a `Turn` request runs with checkpoints saved under its request
 * id (`checkpoints.ts`) as the turn completes its steps. When the request is delivered again
 * because its runner died, the session's new runner resumes the turn from the last one (same turn
 * id, iteration count and usage), and the turn's reply carries the `Resumed` event.
 *
 * A `Send` request runs several turns (its own, then the follow-ups queued during them), one at a
 * time: each turn's checkpoint is keyed by the request and how many log entries the request had
 * committed when the turn started (`sendKey`; its turn index when the store keeps no commit
 * record). Delivered again, the request resumes its latest turn if that turn's commit is not in the
 * log yet (the request's committed entries did not grow past its key), then runs the follow-ups
 * that turn queues (those queued before the crash are in its checkpoint), then those that waited
 * behind it (`backlogs.ts`).
 *
 * A request delivered again whose commit the store has is not resumed: the store's result is its
 * reply (`outcome.ts`). A `Turn` request without a checkpoint (its first model call was in flight,
 * or it waited for the session, or it asked for no tools) runs again from the start when the store
 * fences (no call of it ran; a frozen first attempt can neither save nor commit). Not resumed: one
 * whose progress outgrew the checkpoint bound, or that ended with nothing stored after its calls
 * ran: the store tells its outcome (`aborted`, nothing of it saved).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { Checkpointing, TurnCheckpoint } from "../domain/Checkpoint.ts"
import type { AgentEvent, EventOf } from "../domain/Event.ts"
import type { TurnResult } from "../domain/Turn.ts"
import type * as SqlClient from "effect/sql/SqlClient"
import { EventBus } from "../services/EventBus.ts"
import * as Checkpoints from "./checkpoints.ts"
import type { Claimed } from "./claims.ts"

/** How one request's turn runs durably. */
export interface Durable {
  /** The turn's `TurnOptions.checkpoint`. */
  readonly checkpoint: Checkpointing
  /** The turn, then its checkpoint deleted (part of the turn, so it happens wherever the turn goes on). */
  readonly turn: <E, R>(turn: Effect.Effect<TurnResult, E, R>) => Effect.Effect<TurnResult, E, R>
  /** The turn's `Resumed` event, once the turn ended, when it resumed. */
  readonly resumed: () => EventOf<"Resumed"> | undefined
}

export interface Resume {
  /**
   * The `Resumed` events of this runner's resumed turns of the session that are still running: an
   * `Events` stream opened in the middle of such a turn (a client whose stream moved here from the
   * runner that died) sends them first, so the client sees `Resumed` before the turn's end.
   */
  readonly running: (sessionKey: string) => Effect.Effect<ReadonlyArray<EventOf<"Resumed">>>
  /**
   * The request's turn made durable for the attempt that claimed it: from the start when the claim
   * is fresh (first delivery), else from its checkpoint; `undefined` when it was delivered again
   * and cannot resume. `runner` names this runner; `key`, the checkpoint's (a `Send` request's turn: `sendKey`).
   * With `replay`, a turn delivered again that saved no checkpoint runs again from the start: it
   * died before its first reply that asked for tools (its first checkpoint is saved before its
   * calls run), so no call ran, and model calls may be made again.
   */
  readonly prepare: (requestId: string, sessionKey: string, claimed: Claimed, runner: string, key?: string, replay?: boolean) => Effect.Effect<Durable | undefined>
  /**
   * A turn of the request made durable from the start, its checkpoint saved under `key` (a `Send`
   * request's turn: `sendKey`) by the attempt that claimed the request.
   */
  readonly start: (key: string, requestId: string, sessionKey: string, attempt: string, runner: string) => Effect.Effect<Durable>
  /**
   * The latest turn of a `Send` request that saved a checkpoint: its key, and how many entries the
   * request had committed when it started (its index without commit records). Older rows (a turn
   * that ended just before its runner died, and did not delete its own) are deleted.
   */
  readonly latestSend: (requestId: string) => Effect.Effect<Option.Option<{ readonly key: string; readonly before: number }>>
  /** Deletes the request's checkpoint (its turn's commit is in the log): `undefined`, it does not resume. */
  readonly forget: (requestId: string) => Effect.Effect<undefined>
}

/** How many resumed turns' `Resumed` events are remembered for the clients that subscribe while they run. */
const TRACKED = 1024

/** The checkpoint key of a `Send` request's turn that started after the request committed `before` entries (or as its turn `before`). */
export const sendKey = (requestId: string, before: number): string => `${requestId}+${before}`

/** Builds it on the cluster's database (the checkpoints table is created on first use). */
export const make: Effect.Effect<Resume, never, SqlClient.SqlClient | EventBus | Scope.Scope> = Effect.gen(function*() {
  const checkpoints = yield* Checkpoints.make
  const bus = yield* EventBus
  const resumedNow = new Map<string, EventOf<"Resumed">>()
  const apply = (events: ReadonlyArray<AgentEvent>) => {
    for (const event of events) {
      if (event._tag === "Resumed") resumedNow.set(event.turnId, event)
      else resumedNow.delete(event.turnId)
    }
    // a turn whose end was never seen (its runner stopped) leaves its entry: keep only the newest
    while (resumedNow.size > TRACKED) resumedNow.delete(resumedNow.keys().next().value!)
  }
  // kept current by a fiber, and brought up to date on the spot by `running`: a `Resumed` published
  // just before a client subscribes must be in the answer, not still waiting for the fiber to run
  const tracked = yield* bus.subscribe({ kinds: ["Resumed", "TurnEnd"], capacity: 1024, strategy: "lossless" })
  yield* Effect.forever(Effect.flatMap(tracked.take, (first) => Effect.map(tracked.takeAll, (rest) => apply([first, ...rest])))).pipe(
    Effect.forkScoped
  )
  /** This runner's `Resumed` events while the scope is open (a resumed turn publishes one). */
  const resumedEvents = bus.subscribe({ kinds: ["Resumed"], capacity: 64 })

  const prepare = Effect.fnUntraced(function*(requestId: string, sessionKey: string, claimed: Claimed, runner: string, key = requestId, replay = false) {
    // this attempt at the turn: the checkpoint's owner once it saves or takes it
    const slot = { key, requestId, sessionKey, owner: claimed.attempt }
    if (claimed.fresh) return durable(slot, undefined, runner)
    const saved = yield* checkpoints.take(key, slot.owner)
    if (Option.isNone(saved)) return replay ? durable(slot, undefined, runner) : undefined
    if (saved.value._tag !== "TurnCheckpoint") {
      yield* checkpoints.remove(key)
      return undefined
    }
    return durable(slot, saved.value, runner)
  })

  const durable = (slot: Checkpoints.Slot, resume: TurnCheckpoint | undefined, runner: string): Durable => {
    // a row to delete at the end: only once something was saved (most turns ask for no tools)
    let saved = resume !== undefined
    const checkpoint: Checkpointing = {
      save: (progress) =>
        Effect.flatMap(Clock.currentTimeMillis, (at) => {
          const create = !saved
          saved = true
          return Effect.flatMap(checkpoints.save(slot, progress, at, create), (owned) =>
            // another runner resumed the turn (this one was frozen or cut off meanwhile): stop, as a hard abort
            owned ? Effect.void : Effect.interrupt)
        }),
      ...(resume === undefined ? {} : { resume, runner })
    }
    let resumed: EventOf<"Resumed"> | undefined
    const turn = <E, R>(run: Effect.Effect<TurnResult, E, R>) =>
      Effect.scoped(Effect.gen(function*() {
        const watching = resume === undefined ? undefined : yield* resumedEvents
        const result = yield* run
        // nothing stored although calls may have run (a hard abort, a commit refused): never run again from the start
        if (saved) yield* (result.messages.length > 0 ? checkpoints.remove(slot.key, slot.owner) : checkpoints.ended(slot.key, slot.owner))
        const seen = watching === undefined ? [] : yield* watching.takeAll
        resumed = seen.find((event): event is EventOf<"Resumed"> => event._tag === "Resumed" && event.turnId === result.turnId)
        return result
      }))
    return { checkpoint, turn, resumed: () => resumed }
  }

  const latestSend = Effect.fnUntraced(function*(requestId: string) {
    const prefix = sendKey(requestId, 0).slice(0, -1)
    const found = (yield* checkpoints.keys(prefix))
      .map((key) => ({ key, before: Number(key.slice(prefix.length)) }))
      .filter((row) => Number.isInteger(row.before))
      .sort((a, b) => b.before - a.before)
    for (const old of found.slice(1)) yield* checkpoints.remove(old.key)
    return Option.fromNullishOr(found[0])
  })

  return {
    prepare,
    start: (key, requestId, sessionKey, attempt, runner) => Effect.sync(() => durable({ key, requestId, sessionKey, owner: attempt }, undefined, runner)),
    latestSend,
    forget: (requestId) => Effect.as(checkpoints.remove(requestId), undefined),
    running: (sessionKey) =>
      Effect.map(tracked.takeAll, (events) => {
        apply(events)
        return [...resumedNow.values()].filter((event) => event.sessionKey === sessionKey)
      })
  }
})
