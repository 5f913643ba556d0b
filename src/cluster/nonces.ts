/**
 * The signed requests the cluster's runners have admitted, by their nonce (`auth.ts`), in the
 * cluster's own database: one row per signed request, kept `MAX_AGE` after it was made.
 *
 * A signature proves a request came from a holder of the cluster secret, but a row can be copied:
 * someone who can write the database could store a signed request again under a new request id,
 * and its turn (its tools) would run again. The nonce and the time the request was made are
 * signed with it, so a copy carries the same nonce (refused: another request id admitted it) and
 * a request older than the rows kept is refused outright. The same request delivered again (a
 * runner stopped before answering) has the same request id and is still claimed (`claims.ts`), and
 * is admitted again; stored again under its own id once it was answered and swept, it is not.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as SqlClient from "effect/sql/SqlClient"
import { TABLE as CLAIMS } from "./claims.ts"
import * as Migrations from "./migrations.ts"
import { retryTransientOrDie } from "../domain/connectionFailure.ts"

/** The nonces table. */
export const TABLE = "agent_loop_request_nonces"

/**
 * One row: the time (epoch milliseconds) before which no nonce is kept any longer (`sweep`), so
 * a request signed before it is refused whatever its nonce.
 */
const HORIZON = "agent_loop_nonce_horizon"

/**
 * How long a signed request may wait before a runner takes it, and so how long its nonce is kept:
 * generous, for runners down a while and clocks that differ between machines.
 */
export const MAX_AGE = Duration.hours(24)

const migrate = Migrations.migrate("agent_loop_nonce_migrations", {
  "0001_request_nonces": (sql) =>
    sql`CREATE TABLE IF NOT EXISTS ${sql(TABLE)} (
      nonce VARCHAR(64) PRIMARY KEY,
      request_id VARCHAR(32) NOT NULL,
      issued_at BIGINT NOT NULL
    )`,
  "0002_nonce_horizon": (sql) =>
    sql`CREATE TABLE IF NOT EXISTS ${sql(HORIZON)} (
      id INTEGER PRIMARY KEY,
      horizon BIGINT NOT NULL
    )`
})

/**
 * Whether a signed request may run: it may, or it is a copy of one admitted under another id, or
 * stored again under its own id after it was answered, or too old.
 */
export type Admission = "admitted" | "copied" | "replayed" | "expired" | "forgotten"

/** Why a signed request that is not admitted does not run, as the runner's refusal says it. */
export const refusal = (admission: Exclude<Admission, "admitted">): string =>
  admission === "copied"
    ? "a request with this signature was already admitted under another request id: a copy does not run"
    : admission === "replayed"
    ? "the request was answered already: stored again, it does not run again"
    : admission === "forgotten"
    ? "the request was made before the oldest request the runners still keep (their retention window): answered already or a copy, it does not run"
    : `the request was made more than ${Duration.toHours(MAX_AGE)} hours ago`

/** Why a signed request without a nonce does not run. */
export const UNBOUND = "the request carries no nonce: it was signed by an older client"

/** The admitted nonces. */
export interface Nonces {
  /** Admits the request `requestId` signed with `nonce` at `issuedAt`, at `now` (epoch milliseconds). */
  readonly admit: (nonce: string, requestId: string, issuedAt: number, now: number) => Effect.Effect<Admission>
  /**
   * Forgets the nonces of requests made before `horizon` (epoch milliseconds; at the latest
   * `now - MAX_AGE`), and from then on refuses any request made before it (`forgotten`). The
   * retention sweep passes the start of its window, or, when earlier, the time of the oldest
   * request still waiting to be answered (less a margin): such a request was made after it.
   */
  readonly sweep: (now: number, horizon?: number) => Effect.Effect<void>
}

/**
 * Runs the migration, then admits with one insert (and a read when the nonce was there). A
 * database that cannot be written is a defect: without the row, a copy could run.
 */
export const make: Effect.Effect<Nonces, never, SqlClient.SqlClient> = Effect.gen(function*() {
  yield* migrate
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const maxAgeMs = Duration.toMillis(MAX_AGE)
  return {
    admit: (nonce, requestId, issuedAt, now) =>
      issuedAt < now - maxAgeMs ? Effect.succeed("expired") : Effect.gen(function*() {
        const [kept] = yield* sql<{ readonly horizon: number | string }>`SELECT horizon FROM ${sql(HORIZON)} WHERE id = 1`
        if (kept !== undefined && issuedAt < Number(kept.horizon)) return "forgotten" as const
        const inserted = yield* sql`INSERT INTO ${sql(TABLE)} (nonce, request_id, issued_at)
          VALUES (${nonce}, ${requestId}, ${issuedAt}) ON CONFLICT (nonce) DO NOTHING RETURNING nonce`
        if (inserted.length === 1) return "admitted" as const
        // delivered again: same request id, and the request is still claimed (a runner started it and
        // did not answer). A copy stored under another id, or under its own once the answered request
        // and its claim were swept, is not.
        const rows = yield* sql<{ readonly request_id: string; readonly claimed: number | string }>`
          SELECT n.request_id AS request_id, (SELECT count(*) FROM ${sql(CLAIMS)} c WHERE c.request_id = n.request_id) AS claimed
          FROM ${sql(TABLE)} n WHERE n.nonce = ${nonce}`
        if (rows[0]?.request_id !== requestId) return "copied" as const
        return Number(rows[0].claimed) > 0 ? "admitted" as const : "replayed" as const
      }).pipe(retryTransientOrDie),
    // twice the age: a sweeping runner's clock may run ahead of an admitting one's
    sweep: (now, horizon) =>
      Effect.gen(function*() {
        const before = Math.max(now - 2 * maxAgeMs, horizon ?? 0)
        // the horizon first: a nonce is forgotten only once requests made before it are refused
        yield* sql`INSERT INTO ${sql(HORIZON)} (id, horizon) VALUES (1, ${before})
          ON CONFLICT (id) DO UPDATE SET horizon = CASE WHEN ${sql(HORIZON)}.horizon > excluded.horizon THEN ${sql(HORIZON)}.horizon ELSE excluded.horizon END`
        yield* sql`DELETE FROM ${sql(TABLE)} WHERE issued_at < ${before}`
      }).pipe(retryTransientOrDie)
  }
})
