/**
 * The paused turns of `SessionStoreSql`: table `agent_loop_paused_calls` (migration 5,
 * `sessionStoreSqlSchema.ts`), one row per call waiting for approval, keyed by its approval's id,
 * holding the approval and its turn's checkpoint as JSON text. Written when a turn pauses, when the
 * call is decided and at each step of the turn after it; deleted when the turn ends, and with the
 * session.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as SqlClient from "effect/sql/SqlClient"
import type { TurnCheckpoint } from "../../domain/Checkpoint.ts"
import type { SessionStoreError } from "../../domain/errors.ts"
import { PausedApproval, PausedCall } from "../../domain/PausedTurn.ts"
import type { PausedTurnStore } from "../../services/SessionStore.ts"
import { sessionId } from "./sessionStoreSqlSchema.ts"

const decodeApproval = Schema.decodeUnknownOption(Schema.fromJsonString(PausedApproval))
const decodeCheckpoint = Schema.decodeUnknownOption(Schema.fromJsonString(PausedCall.fields.checkpoint))

/** The paused calls on `sql` (transforms off); `failure` says which session and what failed. */
export const make = (
  sql: SqlClient.SqlClient,
  failure: (key: string, doing: string) => (cause: { readonly message: string }) => SessionStoreError
): PausedTurnStore => {
  const put = (call: PausedCall) => {
    const { approval } = call
    const row = {
      approval_id: approval.id,
      session_id: sessionId(approval.sessionKey),
      turn_id: approval.turnId,
      approval: JSON.stringify(approval),
      checkpoint: JSON.stringify(call.checkpoint),
      paused_at: approval.requestedAt
    }
    return sql.withTransaction(Effect.gen(function*() {
      yield* sql`DELETE FROM agent_loop_paused_calls WHERE approval_id = ${approval.id}`
      yield* sql`INSERT INTO agent_loop_paused_calls ${sql.insert(row)}`
    })).pipe(Effect.mapError(failure(approval.sessionKey, "cannot keep the paused turn")))
  }

  const decide = (approval: PausedApproval) =>
    sql`UPDATE agent_loop_paused_calls SET approval = ${JSON.stringify(approval)} WHERE approval_id = ${approval.id}`.pipe(
      Effect.asVoid,
      Effect.mapError(failure(approval.sessionKey, "cannot keep the approval's decision"))
    )

  const progress = (sessionKey: string, checkpoint: TurnCheckpoint) =>
    sql`UPDATE agent_loop_paused_calls SET checkpoint = ${JSON.stringify(checkpoint)}
      WHERE session_id = ${sessionId(sessionKey)} AND turn_id = ${checkpoint.turnId}`.pipe(
      Effect.asVoid,
      Effect.mapError(failure(sessionKey, "cannot keep the paused turn's progress"))
    )

  const list = sql<{ readonly approval: string; readonly checkpoint: string }>`SELECT approval, checkpoint FROM agent_loop_paused_calls
      ORDER BY paused_at, approval_id`.pipe(
    Effect.map((rows) =>
      rows.flatMap((row): ReadonlyArray<PausedCall> => {
        const approval = decodeApproval(row.approval)
        const checkpoint = decodeCheckpoint(row.checkpoint)
        // a row that does not decode (written by a newer version, say) is left out, not fatal
        return approval._tag === "Some" && checkpoint._tag === "Some" ? [{ approval: approval.value, checkpoint: checkpoint.value }] : []
      })
    ),
    Effect.mapError(failure("", "cannot list the paused turns"))
  )

  const forget = (sessionKey: string, turnId: string) =>
    sql`DELETE FROM agent_loop_paused_calls WHERE session_id = ${sessionId(sessionKey)} AND turn_id = ${turnId}`.pipe(
      Effect.asVoid,
      Effect.mapError(failure(sessionKey, "cannot forget the paused turn"))
    )

  return { put, decide, progress, list, forget }
}
