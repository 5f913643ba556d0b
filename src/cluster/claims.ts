/**
 * Which persisted requests have started a turn on some runner: one row per request, written before
 * the turn starts, in the cluster's own database.
 *
 * Effect Cluster delivers a persisted request again when its runner stopped before answering. A
 * request that had already started is a turn that was cut short: it resumes from its checkpoint
 * (`resume.ts`), or ends `aborted` with nothing saved, as a hard abort does, instead of running a
 * second time from the start (its tools would run twice).
 *
 * Each claim names the attempt at the request that holds it: the first delivery's, then the one of
 * whichever runner took the request over. Only that attempt may save the turn's checkpoints
 * (`checkpoints.ts`), so a runner that was frozen before it saved anything, and wakes up after
 * another took its request over, cannot start a checkpoint (and learns that it must stop).
 *
 * Why a row and not a first stream chunk ("accepted") stored by the cluster: a stream's next chunk
 * waits for the client's acknowledgement of the previous one, and a runner handing a shard to
 * another (when a runner joins) no longer receives acknowledgements for it, so the turn would hang
 * until the hand-off timed out and then be reported lost although it never ran.
 */
import { randomUUID } from "node:crypto"
import * as Effect from "effect/Effect"
import * as SqlClient from "effect/sql/SqlClient"
import * as Migrations from "./migrations.ts"
import { retryTransientOrDie } from "../domain/connectionFailure.ts"

/** The claims table. */
export const TABLE = "agent_loop_turn_claims"

/** The table, created by Effect's SQL migrator (which serialises concurrent runners on Postgres). */
const migrate = Migrations.migrate("agent_loop_cluster_migrations", {
  "0001_turn_claims": (sql) =>
    sql`CREATE TABLE IF NOT EXISTS ${sql(TABLE)} (
      request_id VARCHAR(32) PRIMARY KEY,
      session_key TEXT NOT NULL,
      claimed_at BIGINT NOT NULL
    )`,
  "0002_claim_attempt": (sql) => sql`ALTER TABLE ${sql(TABLE)} ADD COLUMN attempt VARCHAR(64)`,
  "0003_claim_running_from": (sql) => sql`ALTER TABLE ${sql(TABLE)} ADD COLUMN running_from INTEGER`,
  "0004_claim_epoch": (sql) => sql`ALTER TABLE ${sql(TABLE)} ADD COLUMN epoch BIGINT`
})

/**
 * A request claimed by one attempt at it; `Stale` when the request's claim was taken under a later
 * ownership of its session than the claimer's (a runner that froze, woke up, and no longer owns
 * the session): it must not run the request.
 */
export type Claim = Claimed | { readonly _tag: "Stale" }

/** A request claimed by one attempt at it. */
export interface Claimed {
  readonly _tag: "Claimed"
  /** True when this is the request's first start; false when a runner started it before (this attempt takes it over). */
  readonly fresh: boolean
  /** This attempt's id: the owner of the checkpoints it saves. */
  readonly attempt: string
}

/** Claims a request for a turn. */
export interface Claims {
  /**
   * Claims the request for a new attempt at its turn, which from now on is the only one that may
   * save its checkpoints; with `epoch` (the claimer's ownership of the session, from a store that
   * fences), only unless the request was claimed under a later one.
   */
  readonly claim: (requestId: string, sessionKey: string, at: number, epoch?: number) => Effect.Effect<Claim>
  /**
   * Records that a later turn of a `Send` request is running, after `from` entries the request had
   * committed (its earlier turns'), while `attempt` holds the claim.
   */
  readonly running: (requestId: string, attempt: string, from: number) => Effect.Effect<void>
  /** Where the request's running turn started among its committed entries (0: its first turn). */
  readonly runningFrom: (requestId: string) => Effect.Effect<number>
}

/**
 * Runs the migration, then claims requests with one insert each (and an update when a runner
 * started the request before). A database that cannot be written is a defect: without the claim,
 * a turn could run twice.
 */
export const make: Effect.Effect<Claims, never, SqlClient.SqlClient> = Effect.gen(function*() {
  yield* migrate
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  return {
    claim: (requestId, sessionKey, at, epoch) =>
      Effect.gen(function*() {
        const attempt = randomUUID()
        const inserted = yield* sql<{ readonly request_id: string }>`
          INSERT INTO ${sql(TABLE)} (request_id, session_key, claimed_at, attempt, epoch)
          VALUES (${requestId}, ${sessionKey}, ${at}, ${attempt}, ${epoch ?? null})
          ON CONFLICT (request_id) DO NOTHING
          RETURNING request_id
        `
        if (inserted.length === 1) return { _tag: "Claimed", fresh: true, attempt } as const
        // taken over: by a later owner of the session (or without fencing), never by an earlier one
        const taken = yield* (epoch === undefined
          ? sql<{ readonly request_id: string }>`UPDATE ${sql(TABLE)} SET attempt = ${attempt} WHERE request_id = ${requestId} RETURNING request_id`
          : sql<{ readonly request_id: string }>`UPDATE ${sql(TABLE)} SET attempt = ${attempt}, epoch = ${epoch}
            WHERE request_id = ${requestId} AND (epoch IS NULL OR epoch <= ${epoch}) RETURNING request_id`)
        return taken.length === 1 ? { _tag: "Claimed", fresh: false, attempt } as const : { _tag: "Stale" } as const
      }).pipe(retryTransientOrDie),
    running: (requestId, attempt, from) =>
      sql`UPDATE ${sql(TABLE)} SET running_from = ${from} WHERE request_id = ${requestId} AND attempt = ${attempt}`.pipe(
        Effect.asVoid,
        retryTransientOrDie
      ),
    runningFrom: (requestId) =>
      sql<{ readonly running_from: number | string | null }>`SELECT running_from FROM ${sql(TABLE)} WHERE request_id = ${requestId}`.pipe(
        Effect.map((rows) => Number(rows[0]?.running_from ?? 0)),
        retryTransientOrDie
      )
  }
})
