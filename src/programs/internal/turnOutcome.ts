/**
 * A turn's outcome record (`SessionLog.TurnOutcome`): how it ended, stored in its session's log
 * whatever its status, so the log stays the truth about every turn (listings, the inspector) even
 * when no event of it was kept.
 *
 * - A turn that stores what it produced carries the record in the same commit (one atomic append).
 * - A turn that stores nothing else (a hard abort's rollback, a blocked turn) stores the record
 *   alone, outside the cluster's commit ticket: the record does not change the view, and a
 *   request's commit stays the sign that its turn's messages were kept. A failure of that write is
 *   logged; the turn's result is unchanged.
 * - A turn the store failed (`SessionStoreError`: its log could not be read, or its commit could
 *   not be written) gets no record: nothing more is written to a store that is failing, and a log
 *   that cannot be read is left as it is. Nor does a turn whose commit was fenced off
 *   (`SessionFenced`): the session is another runner's now.
 */
import * as Effect from "effect/Effect"
import type { TurnFailure } from "../../domain/errors.ts"
import type { TurnOutcome } from "../../domain/SessionLog.ts"
import type { TurnStatus } from "../../domain/Turn.ts"
import { CommitTicket } from "../../services/SessionFencing.ts"
import type { Engine } from "./engine.ts"
import type * as RunningTurn from "./runningTurn.ts"

/**
 * The record of `turn` ending `status` at `endedAt`, `error` (the result's words) scrubbed of known
 * secrets; `undefined` when the store failed the turn (see above).
 */
export const of = (
  engine: Engine,
  turn: RunningTurn.RunningTurn,
  status: TurnStatus,
  endedAt: number,
  failure: TurnFailure | undefined,
  error: string | undefined
): TurnOutcome | undefined =>
  failure?._tag === "SessionStoreError" ? undefined : ({
  role: "outcome",
  turnId: turn.turnId,
  status,
  model: turn.model,
  startedAt: turn.startedAt,
  endedAt,
  iterations: turn.iteration,
  usage: turn.usage,
  ...(failure === undefined && error === undefined
    ? {}
    : { error: { _tag: failure?._tag ?? "Error", message: engine.secrets.scrub(error ?? failure?.message ?? "") } })
})

/** Stores `outcome` alone (see above); never fails. */
export const storeAlone = (turn: RunningTurn.RunningTurn, outcome: TurnOutcome): Effect.Effect<void> =>
  turn.start.session.commit([outcome]).pipe(
    Effect.provideService(CommitTicket, undefined),
    Effect.catch((e) => Effect.logWarning(`turn ${turn.turnId}: its outcome record could not be stored: ${e.message}`))
  )
