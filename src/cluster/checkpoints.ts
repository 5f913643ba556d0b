/**
 * Where the cluster keeps the checkpoints of running turns (`domain/Checkpoint.ts`): one row per
 * persisted request, in the cluster's own database, replaced at each completed step and deleted
 * when the turn ends. The session log never sees them: a turn's messages reach it in one append at
 * its end, as on one process.
 *
 * Its own migrations table, so the table's history is independent of the claims' (`claims.ts`).
 */
import { Effect, Option, Schema } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { Checkpoint } from "../domain/Checkpoint.ts"

const TABLE = "agent_loop_turn_checkpoints"

const migrate = Migrator.make({})({
  table: "agent_loop_checkpoint_migrations",
  loader: Migrator.fromRecord({
    "0001_turn_checkpoints": Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(TABLE)} (
        request_id VARCHAR(32) PRIMARY KEY,
        session_key TEXT NOT NULL,
        checkpoint TEXT NOT NULL,
        saved_at BIGINT NOT NULL
      )`
    })
  })
})

const decode = Schema.decodeUnknownOption(Schema.fromJsonString(Checkpoint))

/** Saved checkpoints by request id. */
export interface Checkpoints {
  /** Replaces the request's checkpoint. */
  readonly save: (requestId: string, sessionKey: string, checkpoint: Checkpoint, at: number) => Effect.Effect<void>
  /**
   * The request's checkpoint, if one was saved. A row that no longer decodes (written by another
   * version) reads as outgrown: not resumable, rather than resumed wrongly.
   */
  readonly load: (requestId: string) => Effect.Effect<Option.Option<Checkpoint>>
  readonly remove: (requestId: string) => Effect.Effect<void>
}

/**
 * Runs the migration, then reads and writes rows. A database that cannot be written is a defect:
 * the turn cannot go on without its checkpoint (a crash would run its tools again).
 */
export const make: Effect.Effect<Checkpoints, never, SqlClient.SqlClient> = Effect.gen(function*() {
  yield* Effect.orDie(migrate)
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  return {
    save: (requestId, sessionKey, checkpoint, at) =>
      sql`
        INSERT INTO ${sql(TABLE)} (request_id, session_key, checkpoint, saved_at)
        VALUES (${requestId}, ${sessionKey}, ${JSON.stringify(checkpoint)}, ${at})
        ON CONFLICT (request_id) DO UPDATE SET checkpoint = EXCLUDED.checkpoint, saved_at = EXCLUDED.saved_at
      `.pipe(Effect.asVoid, Effect.orDie),
    load: (requestId) =>
      sql<{ readonly checkpoint: string }>`SELECT checkpoint FROM ${sql(TABLE)} WHERE request_id = ${requestId}`.pipe(
        Effect.map((rows) =>
          rows.length === 0
            ? Option.none()
            : Option.orElse(decode(rows[0]!.checkpoint), () =>
              Option.some<Checkpoint>({ _tag: "CheckpointOutgrown", turnId: "", bytes: rows[0]!.checkpoint.length, limit: 0 }))
        ),
        Effect.orDie
      ),
    remove: (requestId) => sql`DELETE FROM ${sql(TABLE)} WHERE request_id = ${requestId}`.pipe(Effect.asVoid, Effect.orDie)
  }
})
