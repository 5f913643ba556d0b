/**
 * The follow-ups of a `Send` request that wait behind its running turn (`entity.ts`'s routed
 * turns), in the cluster's own database: one row per request while it has some. A runner that
 * dies mid-turn takes its memory with it; the runner that resumes the request reads them here and
 * runs them after the resumed turn, as the first would have.
 *
 * Only the attempt holding the request's claim (`claims.ts`) writes the row, so a runner that was
 * frozen cannot bring back what the next attempt already ran. The texts are scrubbed of known
 * secrets, as checkpoints are. Its own migrations table.
 */
import * as Effect from "effect/Effect"
import * as SqlClient from "effect/sql/SqlClient"
import { TABLE as CLAIMS } from "./claims.ts"
import * as Migrations from "./migrations.ts"
import { retryTransientOrDie } from "../domain/connectionFailure.ts"

/** The backlogs table. */
export const TABLE = "agent_loop_send_backlogs"

const migrate = Migrations.migrate("agent_loop_backlog_migrations", {
  "0001_send_backlogs": (sql) =>
    sql`CREATE TABLE IF NOT EXISTS ${sql(TABLE)} (
      request_id VARCHAR(32) PRIMARY KEY,
      backlog TEXT NOT NULL,
      saved_at BIGINT NOT NULL
    )`
})

/** A stored backlog's texts; a row that does not read as one (written by another version) holds none. */
const parse = (text: string): ReadonlyArray<string> => {
  try {
    const parsed: unknown = JSON.parse(text)
    return Array.isArray(parsed) ? parsed.filter((item): item is string => typeof item === "string") : []
  } catch {
    return []
  }
}

/** The waiting follow-ups of `Send` requests. */
export interface Backlogs {
  /** Replaces the request's waiting follow-ups (none: the row goes), while `attempt` holds its claim. */
  readonly save: (requestId: string, attempt: string, backlog: ReadonlyArray<string>, at: number) => Effect.Effect<void>
  /** The request's waiting follow-ups, oldest first. */
  readonly load: (requestId: string) => Effect.Effect<ReadonlyArray<string>>
}

/**
 * Runs the migration, then reads and writes rows. A database that cannot be written is a defect,
 * as for checkpoints: the follow-ups would be lost with the runner.
 */
export const make: Effect.Effect<Backlogs, never, SqlClient.SqlClient> = Effect.gen(function*() {
  yield* migrate
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const table = sql(TABLE)
  return {
    save: (requestId, attempt, backlog, at) => {
      const claimed = sql`EXISTS (SELECT 1 FROM ${sql(CLAIMS)} WHERE request_id = ${requestId} AND attempt = ${attempt})`
      return (backlog.length === 0
        ? sql`DELETE FROM ${table} WHERE request_id = ${requestId} AND ${claimed}`
        : sql`INSERT INTO ${table} (request_id, backlog, saved_at)
          SELECT ${requestId}, ${JSON.stringify(backlog)}, ${at} WHERE ${claimed}
          ON CONFLICT (request_id) DO UPDATE SET backlog = EXCLUDED.backlog, saved_at = EXCLUDED.saved_at`).pipe(Effect.asVoid, retryTransientOrDie)
    },
    load: (requestId) =>
      sql<{ readonly backlog: string }>`SELECT backlog FROM ${table} WHERE request_id = ${requestId}`.pipe(
        Effect.map((rows) => (rows.length === 0 ? [] : parse(rows[0]!.backlog))),
        retryTransientOrDie
      )
  }
})
