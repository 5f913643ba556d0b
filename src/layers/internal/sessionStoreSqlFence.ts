/**
 * Fencing for `SessionStoreSql` (`SessionFencing`): ownership epochs and commit records in the
 * store's own database, checked and written inside the append's transaction.
 *
 * Order of locks: an append locks the session's row (its upsert), then the owner's row (`FOR
 * UPDATE` on Postgres; SQLite's writers are serialised by `BEGIN IMMEDIATE`). Taking a session
 * updates the owner's row, so it waits for a commit in flight, and a commit that starts after it
 * reads the new epoch. Hence a runner that took a session and finds no commit record for a request
 * knows none will ever appear: the old owner's late commit is rejected.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as SqlClient from "effect/sql/SqlClient"
import { SessionFenced, SessionStoreError } from "../../domain/errors.ts"
import * as SessionLog from "../../domain/SessionLog.ts"
import type { SessionFencing, CommitTicketShape } from "../../services/SessionFencing.ts"
import { sessionId } from "./sessionStoreSqlSchema.ts"
import { isTransient } from "../../domain/connectionFailure.ts"

const decodeEntry = Schema.decodeUnknownOption(Schema.fromJsonString(SessionLog.SessionEntry))

const failure = (key: string, doing: string) => (cause: { readonly message: string }) =>
  new SessionStoreError({ sessionKey: key, message: `${doing}: ${cause.message}`, ...(isTransient(cause) ? { transient: true } : {}) })

/**
 * Inside an append's transaction, after the session's row is locked: fails with `SessionFenced`
 * unless the ticket's epoch is the session's current one.
 */
export const check = (sql: SqlClient.SqlClient, key: string, ticket: CommitTicketShape) =>
  Effect.gen(function*() {
    const id = sessionId(key)
    const rows = yield* sql.onDialectOrElse({
      pg: () => sql<{ readonly epoch: number | string }>`SELECT epoch FROM agent_loop_session_owners WHERE session_id = ${id} FOR UPDATE`,
      orElse: () => sql<{ readonly epoch: number | string }>`SELECT epoch FROM agent_loop_session_owners WHERE session_id = ${id}`
    })
    const current = rows[0] === undefined ? 0 : Number(rows[0].epoch)
    if (current !== ticket.epoch) {
      return yield* new SessionFenced({
        sessionKey: key,
        epoch: ticket.epoch,
        current,
        message: `session ${JSON.stringify(key)} is owned by another runner now (epoch ${current}, this commit's ${ticket.epoch}): nothing of this turn was stored`
      })
    }
  })

/** Inside an append's transaction: records the entries `first` up to `end` under the ticket's request. */
export const record = (sql: SqlClient.SqlClient, key: string, ticket: CommitTicketShape, first: number, end: number, now: number) =>
  ticket.requestId === undefined ? Effect.void : sql`
    INSERT INTO agent_loop_turn_commits (request_id, session_id, first_seq, end_seq, committed_at)
    VALUES (${ticket.requestId}, ${sessionId(key)}, ${first}, ${end}, ${now})
    ON CONFLICT (request_id) DO UPDATE SET end_seq = excluded.end_seq, committed_at = excluded.committed_at`.pipe(Effect.asVoid)

/**
 * Inside a removal's transaction: the session's commit records go with its entries, which they
 * point into; a session created again under the key would otherwise pass for those requests' commits.
 */
export const removeSession = (sql: SqlClient.SqlClient, key: string) =>
  sql`DELETE FROM agent_loop_turn_commits WHERE session_id = ${sessionId(key)}`.pipe(Effect.asVoid)

/** The fencing operations on the store's database. */
export const make = (sql: SqlClient.SqlClient): SessionFencing => ({
  acquire: (key, owner) =>
    sql<{ readonly epoch: number | string }>`
      INSERT INTO agent_loop_session_owners (session_id, owner, epoch) VALUES (${sessionId(key)}, ${owner}, 1)
      ON CONFLICT (session_id) DO UPDATE SET
        epoch = CASE WHEN agent_loop_session_owners.owner = excluded.owner
          THEN agent_loop_session_owners.epoch ELSE agent_loop_session_owners.epoch + 1 END,
        owner = excluded.owner
      RETURNING epoch`.pipe(
      Effect.map((rows) => Number(rows[0]!.epoch)),
      Effect.mapError(failure(key, "cannot take session"))
    ),
  committed: (requestId) =>
    Effect.gen(function*() {
      const rows = yield* sql<{ readonly session_key: string; readonly seq: number | string; readonly entry: string }>`
        SELECT s.session_key AS session_key, e.seq AS seq, e.entry AS entry
        FROM agent_loop_turn_commits c
          JOIN agent_loop_sessions s ON s.session_id = c.session_id
          JOIN agent_loop_entries e ON e.session_id = c.session_id AND e.seq >= c.first_seq AND e.seq < c.end_seq
        WHERE c.request_id = ${requestId} ORDER BY e.seq`
      const first = rows[0]
      if (first === undefined) return Option.none()
      const entries: Array<SessionLog.SessionEntry> = []
      for (const row of rows) {
        const entry = decodeEntry(row.entry)
        if (entry._tag === "None") {
          return yield* new SessionStoreError({ sessionKey: first.session_key, message: `entry ${Number(row.seq) + 1} is corrupt` })
        }
        entries.push(entry.value)
      }
      return Option.some({ sessionKey: first.session_key, entries })
    }).pipe(Effect.mapError((e) => e._tag === "SessionStoreError" ? e : failure("", `cannot read the commit of request ${requestId}`)(e))),
  forget: (before) =>
    sql`DELETE FROM agent_loop_turn_commits WHERE committed_at < ${before}`.pipe(
      Effect.asVoid,
      Effect.mapError(failure("", "cannot forget commit records"))
    )
})
