/**
 * Where the cluster keeps the checkpoints of running turns (`domain/Checkpoint.ts`): one row per
 * persisted request, in the cluster's own database, replaced at each completed step and deleted
 * when the turn ends. The session log never sees them: a turn's messages reach it in one append at
 * its end, as on one process.
 *
 * Each row is owned by one attempt at the turn: the runner that resumes a turn takes the row over,
 * so a runner that was frozen and wakes up mid-turn can no longer save (nor delete) it, and learns
 * that it must stop. An attempt saves only while its request's claim is its own (`claims.ts`), so
 * one frozen before its first save cannot start a row after another attempt took the request over.
 * Its own migrations table, so the table's history is independent of the claims' (`claims.ts`).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { Checkpoint } from "../domain/Checkpoint.ts"
import { TABLE as CLAIMS } from "./claims.ts"
import * as Migrations from "./migrations.ts"
import { retryTransientOrDie } from "../domain/connectionFailure.ts"

export const TABLE = "agent_loop_turn_checkpoints"

/** The row of a turn that ended with nothing stored (`ended`): no checkpoint decodes from it. */
const ENDED = JSON.stringify({ _tag: "TurnEndedUnstored" })

const migrate = Migrations.migrate("agent_loop_checkpoint_migrations", {
  "0001_turn_checkpoints": (sql) =>
    sql`CREATE TABLE IF NOT EXISTS ${sql(TABLE)} (
      request_id VARCHAR(32) PRIMARY KEY,
      session_key TEXT NOT NULL,
      owner VARCHAR(64) NOT NULL,
      checkpoint TEXT NOT NULL,
      saved_at BIGINT NOT NULL
    )`
})

const decode = Schema.decodeUnknownOption(Schema.fromJsonString(Checkpoint))

/** Where one attempt saves a turn's checkpoints. */
export interface Slot {
  /** The row's key: the request id (a `Send` request's turn: `resume.ts`'s `sendKey`). */
  readonly key: string
  /** The request claimed (`claims.ts`). */
  readonly requestId: string
  readonly sessionKey: string
  /** The attempt (`Claimed.attempt`). */
  readonly owner: string
}

/** Saved checkpoints by key, each owned by the attempt at the turn that saves it. */
export interface Checkpoints {
  /**
   * Replaces the turn's checkpoint, if the slot's owner (one attempt at the turn) still holds the
   * request's claim and owns the row; false when another attempt took the turn over (`take`,
   * `Claims.claim`), or took it over and ended (its row is gone): this one must stop. `create`: the
   * attempt has no row yet (its first save).
   */
  readonly save: (slot: Slot, checkpoint: Checkpoint, at: number, create: boolean) => Effect.Effect<boolean>
  /**
   * Takes the request's checkpoint for `owner`, in one statement, and returns it: from now on only
   * `owner` can save it. A row that no longer decodes (written by another version) reads as
   * outgrown: not resumable, rather than resumed wrongly.
   */
  readonly take: (requestId: string, owner: string) => Effect.Effect<Option.Option<Checkpoint>>
  /** The keys of the rows whose key starts with `prefix` (the turns of one `Send` request). */
  readonly keys: (prefix: string) => Effect.Effect<ReadonlyArray<string>>
  /** Deletes the request's checkpoint; with `owner`, only while that attempt owns it. */
  readonly remove: (requestId: string, owner?: string) => Effect.Effect<void>
  /**
   * Marks the turn ended with nothing stored while `owner` owns its row: its calls may have run,
   * so a later delivery reads the row as not resumable (`take`), nor to be run again from the
   * start, and ends it as the log tells it. The retention sweep deletes the row with its request.
   */
  readonly ended: (requestId: string, owner: string) => Effect.Effect<void>
}

/**
 * Runs the migration, then reads and writes rows. A database that cannot be written is a defect:
 * the turn cannot go on without its checkpoint (a crash would run its tools again).
 */
export const make: Effect.Effect<Checkpoints, never, SqlClient.SqlClient> = Effect.gen(function*() {
  yield* migrate
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const table = sql(TABLE)
  return {
    save: ({ key, owner, requestId, sessionKey }, checkpoint, at, create) => {
      const claimed = sql`EXISTS (SELECT 1 FROM ${sql(CLAIMS)} WHERE request_id = ${requestId} AND attempt = ${owner})`
      // only a first save inserts: a later one that found no row would bring back a turn that
      // another attempt resumed and ended
      return (create
        ? sql<{ readonly request_id: string }>`
        INSERT INTO ${table} (request_id, session_key, owner, checkpoint, saved_at)
        SELECT ${key}, ${sessionKey}, ${owner}, ${JSON.stringify(checkpoint)}, ${at} WHERE ${claimed}
        ON CONFLICT (request_id) DO UPDATE SET checkpoint = EXCLUDED.checkpoint, saved_at = EXCLUDED.saved_at
        WHERE ${table}.owner = EXCLUDED.owner
        RETURNING request_id`
        : sql<{ readonly request_id: string }>`
        UPDATE ${table} SET checkpoint = ${JSON.stringify(checkpoint)}, saved_at = ${at}
        WHERE request_id = ${key} AND owner = ${owner} AND ${claimed}
        RETURNING request_id`).pipe(Effect.map((rows) => rows.length === 1), retryTransientOrDie)
    },
    take: (requestId, owner) =>
      sql<{ readonly checkpoint: string }>`UPDATE ${table} SET owner = ${owner} WHERE request_id = ${requestId} RETURNING checkpoint`.pipe(
        Effect.map((rows) =>
          rows.length === 0
            ? Option.none()
            : Option.orElse(decode(rows[0]!.checkpoint), () =>
              Option.some<Checkpoint>({ _tag: "CheckpointOutgrown", turnId: "", bytes: rows[0]!.checkpoint.length, limit: 0 }))
        ),
        retryTransientOrDie
      ),
    keys: (prefix) =>
      sql<{ readonly request_id: string }>`SELECT request_id FROM ${table} WHERE request_id LIKE ${`${prefix}%`}`.pipe(
        Effect.map((rows) => rows.map((row) => row.request_id)),
        retryTransientOrDie
      ),
    ended: (requestId, owner) =>
      sql`UPDATE ${table} SET checkpoint = ${ENDED} WHERE request_id = ${requestId} AND owner = ${owner}`.pipe(Effect.asVoid, retryTransientOrDie),
    remove: (requestId, owner) =>
      (owner === undefined
        ? sql`DELETE FROM ${table} WHERE request_id = ${requestId}`
        : sql`DELETE FROM ${table} WHERE request_id = ${requestId} AND owner = ${owner}`).pipe(Effect.asVoid, retryTransientOrDie)
  }
})
