/**
 * What became of a keyed request (`protocol.ts`: its client-made key): started by a runner, or
 * cancelled by its client, whichever was decided first, in one row per key in the cluster's own
 * database.
 *
 * A client that waited too long for a turn without progress gives up on it; it must not be told
 * `failed` while its request still waits in the cluster's storage and runs later (its tools would
 * run with nobody told). So giving up and starting are one race with one winner: the runner writes
 * `started` before it claims the request, the client writes `cancelled`, each only if no fate is
 * there yet. A runner that finds the request cancelled refuses it, unrun; a client that finds it
 * started knows a runner has it.
 */
import * as Effect from "effect/Effect"
import * as SqlClient from "effect/sql/SqlClient"
import { retryTransientOrDie } from "../domain/connectionFailure.ts"
import * as Migrations from "./migrations.ts"

/** The fates table. */
export const TABLE = "agent_loop_request_fates"

const migrate = Migrations.migrate("agent_loop_fate_migrations", {
  "0001_request_fates": (sql) =>
    sql`CREATE TABLE IF NOT EXISTS ${sql(TABLE)} (
      request_key VARCHAR(64) PRIMARY KEY,
      fate VARCHAR(16) NOT NULL,
      decided_at BIGINT NOT NULL
    )`
})

/** What became of a request: the first to decide wins. */
export type Fate = "started" | "cancelled"

/** The longest key kept: a client's key is a UUID; a longer one is not a client's. */
export const MAX_KEY = 64

export interface Fates {
  /** Decides `fate` for the request unless its fate is decided already; the fate it has now. */
  readonly decide: (key: string, fate: Fate, at: number) => Effect.Effect<Fate>
  /** Forgets the fates decided before `before` (epoch milliseconds). */
  readonly sweep: (before: number) => Effect.Effect<void>
}

/** Why a runner does not run a request its client cancelled. */
export const CANCELLED = "its client cancelled it (it gave up waiting), so it does not run"

/**
 * Runs the migration, then decides fates with one insert (and a read when another decided first).
 * A database that cannot be written is a defect: without the fate, a cancelled request could run.
 */
export const make: Effect.Effect<Fates, never, SqlClient.SqlClient> = Effect.gen(function*() {
  yield* migrate
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  return {
    decide: (key, fate, at) =>
      Effect.gen(function*() {
        const inserted = yield* sql<{ readonly fate: string }>`
          INSERT INTO ${sql(TABLE)} (request_key, fate, decided_at) VALUES (${key}, ${fate}, ${at})
          ON CONFLICT (request_key) DO NOTHING
          RETURNING fate
        `
        if (inserted.length === 1) return fate
        const [row] = yield* sql<{ readonly fate: string }>`SELECT fate FROM ${sql(TABLE)} WHERE request_key = ${key}`
        return (row?.fate ?? fate) as Fate
      }).pipe(retryTransientOrDie),
    sweep: (before) => sql`DELETE FROM ${sql(TABLE)} WHERE decided_at < ${before}`.pipe(Effect.asVoid, retryTransientOrDie)
  }
})
