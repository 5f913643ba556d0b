/**
 * Which persisted requests have started a turn on some runner: one row per request, written before
 * the turn starts, in the cluster's own database.
 *
 * Effect Cluster delivers a persisted request again when its runner stopped before answering. A
 * request that had already started is a turn that was cut short: it resumes from its checkpoint
 * (`resume.ts`), or ends `aborted` with nothing saved, as a hard abort does, instead of running a
 * second time from the start (its tools would run twice).
 *
 * Why a row and not a first stream chunk ("accepted") stored by the cluster: a stream's next chunk
 * waits for the client's acknowledgement of the previous one, and a runner handing a shard to
 * another (when a runner joins) no longer receives acknowledgements for it, so the turn would hang
 * until the hand-off timed out and then be reported lost although it never ran.
 */
import * as Effect from "effect/Effect"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"

/** The claims table. */
export const TABLE = "agent_loop_turn_claims"

/** The table, created by Effect's SQL migrator (which serialises concurrent runners on Postgres). */
const migrate = Migrator.make({})({
  table: "agent_loop_cluster_migrations",
  loader: Migrator.fromRecord({
    "0001_turn_claims": Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(TABLE)} (
        request_id VARCHAR(32) PRIMARY KEY,
        session_key TEXT NOT NULL,
        claimed_at BIGINT NOT NULL
      )`
    })
  })
})

/** Claims a request for a turn. */
export interface Claims {
  /** True when this is the request's first start; false when a runner started it before. */
  readonly claim: (requestId: string, sessionKey: string, at: number) => Effect.Effect<boolean>
}

/**
 * Runs the migration, then claims requests with one insert each. A database that cannot be
 * written is a defect: without the claim, a turn could run twice.
 */
export const make: Effect.Effect<Claims, never, SqlClient.SqlClient> = Effect.gen(function*() {
  yield* Effect.orDie(migrate)
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  return {
    claim: (requestId, sessionKey, at) =>
      sql<{ readonly request_id: string }>`
        INSERT INTO ${sql(TABLE)} (request_id, session_key, claimed_at)
        VALUES (${requestId}, ${sessionKey}, ${at})
        ON CONFLICT (request_id) DO NOTHING
        RETURNING request_id
      `.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)
  }
})
