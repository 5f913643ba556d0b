/**
 * Replies without a second copy of the turn's messages. When the runner's session store is the
 * SQL store in the cluster's own database, the turn's committed entries are already there, where
 * every client of the cluster can read them: the reply (which Effect Cluster persists in
 * `cluster_replies` until the retention sweep) carries the turn's result without its messages and
 * final answer, plus where they are in the session log (`LogRange`), and the client reads them
 * back. The range is the log's own positions, not the commit record, so it stays valid after the
 * record is swept. With any other store (JSON Lines, a separate database) the reply carries the
 * messages, as before.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as SqlClient from "effect/sql/SqlClient"
import { Message } from "../domain/Message.ts"
import * as SessionLog from "../domain/SessionLog.ts"
import type { TurnResult } from "../domain/Turn.ts"
import { sessionId } from "../layers/internal/sessionStoreSqlSchema.ts"
import { retryTransient } from "../domain/connectionFailure.ts"

/** Where a turn's committed entries are in its session's log, and which of its messages is the final answer. */
export const LogRange = Schema.Struct({
  generation: Schema.String.annotate({ description: "The session log's generation the positions belong to" }),
  first: Schema.Number.annotate({ description: "Position of the turn's first committed entry" }),
  end: Schema.Number.annotate({ description: "Position after the turn's last committed entry" }),
  final: Schema.optionalKey(Schema.Number).annotate({ description: "Index of the final answer among the turn's messages" })
})
export type LogRange = typeof LogRange.Type

const decodeEntry = Schema.decodeUnknownOption(Schema.fromJsonString(SessionLog.SessionEntry))
const isMessage = Schema.is(Message)

/**
 * Where the request's committed entries are, read through the cluster's database: none when the
 * request committed nothing, or the session store is not in that database (its tables are not
 * there, so the query fails: the reply keeps its messages).
 */
export const locate = (sql: SqlClient.SqlClient, requestId: string): Effect.Effect<Option.Option<Omit<LogRange, "final">>> =>
  sql<{ readonly generation: string; readonly first_seq: number | string; readonly end_seq: number | string }>`
    SELECT s.generation AS generation, c.first_seq AS first_seq, c.end_seq AS end_seq
    FROM agent_loop_turn_commits c JOIN agent_loop_sessions s ON s.session_id = c.session_id
    WHERE c.request_id = ${requestId}`.pipe(
    Effect.map((rows) =>
      Option.fromNullishOr(rows[0]).pipe(
        Option.map((row) => ({ generation: row.generation, first: Number(row.first_seq), end: Number(row.end_seq) }))
      )
    ),
    retryTransient,
    Effect.orElseSucceed(() => Option.none())
  )

/**
 * The result without its messages and final answer, and where they are; the result unchanged
 * unless the range holds exactly its messages, one entry each, followed by at most its turn-outcome
 * record (a turn commits one with its messages; runners from before them did not), and its final
 * answer is one of them.
 */
export const slim = (result: TurnResult, range: Omit<LogRange, "final">): { readonly result: TurnResult; readonly log?: LogRange } => {
  const records = range.end - range.first - result.messages.length
  if (result.messages.length === 0 || records < 0 || records > 1) return { result }
  const final = result.finalMessage === undefined ? undefined : result.messages.lastIndexOf(result.finalMessage)
  if (final === -1) return { result }
  const { finalMessage: _final, ...rest } = result
  return { result: { ...rest, messages: [] }, log: { ...range, ...(final === undefined ? {} : { final }) } }
}

/**
 * The result with its messages read back from the log. A session removed meanwhile (another
 * generation) no longer has them: the result comes back without them, as the log now holds it.
 */
export const restore = (sql: SqlClient.SqlClient, result: TurnResult, log: LogRange): Effect.Effect<TurnResult, unknown> =>
  Effect.gen(function*() {
    const rows = yield* sql<{ readonly seq: number | string; readonly entry: string }>`
      SELECT e.seq AS seq, e.entry AS entry FROM agent_loop_entries e JOIN agent_loop_sessions s ON s.session_id = e.session_id
      WHERE s.session_id = ${sessionId(result.sessionKey)} AND s.generation = ${log.generation}
        AND e.seq >= ${log.first} AND e.seq < ${log.end}
      ORDER BY e.seq`
    const messages: Array<Message> = []
    for (const row of rows) {
      const entry = decodeEntry(row.entry)
      if (Option.isNone(entry)) return yield* Effect.fail(new Error(`session ${JSON.stringify(result.sessionKey)}: entry ${Number(row.seq) + 1} is corrupt`))
      if (isMessage(entry.value)) messages.push(entry.value)
    }
    const final = log.final === undefined ? undefined : messages[log.final]
    return { ...result, messages, ...(final?.role === "assistant" ? { finalMessage: final } : {}) }
  })
