/**
 * The event journal of `SessionStoreSql`: table `agent_loop_events` (`sessionStoreSqlSchema.ts`),
 * one row per event keyed by the session's id and the event's `seq`. An append is one transaction
 * of multi-row inserts; a `seq` stored twice (two journals writing one session, which the loop's
 * one-writer-per-session rule prevents) fails the append rather than replacing what was stored.
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as SqlClient from "effect/sql/SqlClient"
import type { SessionStoreError } from "../../domain/errors.ts"
import { JournaledEvent } from "../../domain/EventJournal.ts"
import type { EventJournalStore } from "../../services/SessionStore.ts"
import { sessionId, writeTransaction } from "./sessionStoreSqlSchema.ts"

/** Rows per INSERT: 3 parameters each, well under SQLite's and Postgres's bound-parameter limits. */
const INSERT_CHUNK = 500

const decode = Schema.decodeUnknownOption(Schema.fromJsonString(JournaledEvent.fields.event))

/** The journal on `sql` (transforms off); `failure` says which session and what failed. */
export const make = (
  sql: SqlClient.SqlClient,
  failure: (key: string, doing: string) => (cause: { readonly message: string }) => SessionStoreError
): EventJournalStore => {
  const append = (key: string, events: ReadonlyArray<JournaledEvent>) => {
    if (events.length === 0) return Effect.void
    const id = sessionId(key)
    const rows = events.map((e): Record<string, unknown> => ({ session_id: id, seq: e.seq, event: JSON.stringify(e.event) }))
    return writeTransaction(
      sql,
      Effect.forEach(Arr.chunksOf(rows, INSERT_CHUNK), (chunk) => sql`INSERT INTO agent_loop_events ${sql.insert(chunk)}`, { discard: true })
    ).pipe(Effect.mapError(failure(key, "cannot append to the event journal")))
  }

  const read = (key: string, after: number, limit?: number) =>
    (limit === undefined
      ? sql<{ readonly seq: number | string | bigint; readonly event: string }>`SELECT seq, event FROM agent_loop_events
          WHERE session_id = ${sessionId(key)} AND seq > ${after} ORDER BY seq`
      : sql<{ readonly seq: number | string | bigint; readonly event: string }>`SELECT seq, event FROM agent_loop_events
          WHERE session_id = ${sessionId(key)} AND seq > ${after} ORDER BY seq LIMIT ${limit}`).pipe(
      Effect.map((rows) =>
        rows.flatMap((row): ReadonlyArray<JournaledEvent> => {
          const event = decode(row.event)
          // a row that does not decode (written by a newer version, say) is left out, not fatal
          return event._tag === "Some" ? [{ seq: Number(row.seq), event: event.value }] : []
        })
      ),
      Effect.mapError(failure(key, "cannot read the event journal"))
    )

  const last = (key: string) =>
    sql<{ readonly last: number | string | bigint | null }>`SELECT MAX(seq) AS last FROM agent_loop_events WHERE session_id = ${sessionId(key)}`.pipe(
      Effect.map((rows) => Number(rows[0]?.last ?? 0)),
      Effect.mapError(failure(key, "cannot read the event journal"))
    )

  return { append, read, last }
}
