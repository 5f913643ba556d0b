/**
 * Retention of the cluster's bookkeeping: what a turn leaves besides its session log (its request
 * and reply in Effect Cluster's `cluster_messages`/`cluster_replies`, its claim, its commit record)
 * is deleted once the request was answered and the retention window has passed, so the rows per
 * turn stay constant however many turns run. The session log itself is never touched.
 *
 * - Requests and replies: those of requests answered (`processed`) longer ago than the window (a
 *   reply's id is a snowflake, which carries its time). A request not yet answered stays, whatever
 *   its age: it may be delivered again. A client reads its reply from storage within its reply poll
 *   interval (when not straight from the runner), so the window only needs to exceed that, with
 *   room for a loaded machine: a reply swept before its client read it would leave it waiting.
 * - Claims: those older than the window whose request is gone (answered and deleted).
 * - Commit records (`SessionFencing.forget`): those older than the window. A request is delivered
 *   again within seconds of its runner stopping, long before.
 * - Nonces of signed requests (`nonces.ts`): those of requests made before the window (or, when
 *   a request made earlier still waits to be answered, before it less a margin); a request made
 *   before the nonces kept is refused whatever its nonce, so a copy of a forgotten one never runs.
 * - Checkpoints left by turns that ended with nothing stored (`checkpoints.ts`): those older than
 *   the window whose request is gone.
 * - Fates of keyed requests (`fates.ts`): those decided before the nonces' horizon, so a cancelled
 *   request's fate stays while the request waits to be refused.
 * - Waiting follow-ups of `Send` requests (`backlogs.ts`), left by a runner that stopped: those
 *   older than the window whose request is gone.
 *
 * Every runner sweeps; the deletes are idempotent, so runners sweeping at once do no harm.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Snowflake from "effect/cluster/Snowflake"
import * as SqlClient from "effect/sql/SqlClient"
import { SessionStore } from "../services/SessionStore.ts"
import { TABLE as CLAIMS } from "./claims.ts"
import * as Checkpoints from "./checkpoints.ts"
import { TABLE as BACKLOGS, make as makeBacklogs } from "./backlogs.ts"
import * as Fates from "./fates.ts"
import * as Nonces from "./nonces.ts"

/** How long answered requests, their replies, claims and commit records are kept. */
export interface RetentionOptions {
  /** Kept at least this long after the request; default 10 minutes. */
  readonly window?: Duration.Input
  /** How often a runner sweeps; default the window, at most a minute, at least a second. */
  readonly interval?: Duration.Input
}

/** The default retention window. */
export const DEFAULT_WINDOW = Duration.minutes(10)

/**
 * How long before it is stored a request may have been signed (its `issuedAt`, on the client's
 * clock, which also names the stored request): the nonce sweep keeps the nonces of requests made
 * that much before the oldest request still waiting.
 */
const SIGNING_MARGIN_MS = 5 * 60_000

/** Effect Cluster's default table prefix, which the runners use. */
const MESSAGES = "cluster_messages"
const REPLIES = "cluster_replies"

/** One sweep at `now` (epoch milliseconds): deletes what is older than `cutoff` (`now` less the window) and no longer needed. */
export const sweep = (nonces: Nonces.Nonces, fates: Fates.Fates, cutoff: number, now: number) =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const store = yield* SessionStore
    const before = String(Snowflake.make({ timestamp: cutoff, machineId: 0 as never, sequence: 0 }))
    // answered before the cutoff: the final reply's id (a snowflake) is when it was written
    const answered = sql`SELECT m.request_id FROM ${sql(MESSAGES)} m
      WHERE m.id = m.request_id AND m.processed = ${true} AND m.last_reply_id < ${before}`
    yield* sql`DELETE FROM ${sql(REPLIES)} WHERE request_id < ${before} AND request_id IN (${answered})`
    yield* sql`DELETE FROM ${sql(MESSAGES)} WHERE request_id < ${before} AND request_id IN (${answered})`
    yield* sql`DELETE FROM ${sql(CLAIMS)} WHERE claimed_at < ${cutoff}
      AND NOT EXISTS (SELECT 1 FROM ${sql(MESSAGES)} m WHERE m.id = CAST(${sql(CLAIMS)}.request_id AS BIGINT))`
    // checkpoints left by turns that ended with nothing stored (their key: the request id, then `+N` for a `Send`'s turn)
    yield* sql`DELETE FROM ${sql(Checkpoints.TABLE)} WHERE saved_at < ${cutoff}
      AND NOT EXISTS (SELECT 1 FROM ${sql(MESSAGES)} m WHERE m.id = CAST(split_part(${sql(Checkpoints.TABLE)}.request_id, '+', 1) AS BIGINT))`
    yield* sql`DELETE FROM ${sql(BACKLOGS)} WHERE saved_at < ${cutoff}
      AND NOT EXISTS (SELECT 1 FROM ${sql(MESSAGES)} m WHERE m.id = CAST(${sql(BACKLOGS)}.request_id AS BIGINT))`
    if (store.fencing !== undefined) yield* store.fencing.forget(cutoff)
    // nonces: those of requests made before the window, unless a request made then still waits
    const [pending] = yield* sql<{ readonly id: string | number | bigint | null }>`SELECT min(m.id) AS id FROM ${sql(MESSAGES)} m
      WHERE m.id = m.request_id AND m.processed = ${false}`
    const oldest = pending?.id === null || pending?.id === undefined ? undefined : Snowflake.timestamp(Snowflake.Snowflake(String(pending.id)))
    const horizon = Math.min(cutoff, oldest === undefined ? cutoff : oldest - SIGNING_MARGIN_MS)
    yield* nonces.sweep(now, horizon)
    // a cancelled request is decided after it was made: its fate outlives it while it waits
    yield* fates.sweep(horizon)
  })

/**
 * Sweeps every `interval` for the life of the layer; a sweep that fails is logged with its cause
 * and tried again at the next interval.
 */
export const layer = (options: RetentionOptions = {}): Layer.Layer<never, never, SqlClient.SqlClient | SessionStore> => {
  const window = Duration.fromInputUnsafe(options.window ?? DEFAULT_WINDOW)
  const interval = Duration.fromInputUnsafe(
    options.interval ?? Duration.clamp(window, { minimum: Duration.seconds(1), maximum: Duration.minutes(1) })
  )
  return Layer.effectDiscard(Effect.gen(function*() {
    const nonces = yield* Nonces.make
    const fates = yield* Fates.make
    // the backlogs' and checkpoints' tables, which the sweep reads, exist before the first sweep
    yield* makeBacklogs
    yield* Checkpoints.make
    yield* Effect.gen(function*() {
      const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
      yield* sweep(nonces, fates, now - Duration.toMillis(window), now)
    }).pipe(
      Effect.catchCause((cause) => Effect.logWarning("Could not sweep the cluster's answered requests", cause)),
      Effect.repeat(Schedule.spaced(interval)),
      Effect.delay(interval),
      Effect.forkScoped
    )
  }))
}
