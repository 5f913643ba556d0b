/**
 * The tables of `SessionStoreSql` and their migrations (effect's SQL migrator, its own migrations
 * table so that it can share a database with an application's).
 *
 * - `agent_loop_sessions`: one row per session: its id (the SHA-256 of the key: keys of any length
 *   fit an index, which Postgres limits to about 2.7 kB), its key, a `generation` (a random id given
 *   when the session is created, so a reader notices a session removed and created again), how many
 *   entries it holds, and when it was last appended to (epoch milliseconds).
 * - `agent_loop_entries`: one row per log entry: the session id, its per-session `seq` (0, 1, 2, …;
 *   the primary key, so the order is total and an append can never slip between two entries of
 *   another), and the entry as JSON (text, not `jsonb`: Postgres's `jsonb` refuses `\u0000`, which
 *   conversations may hold).
 * - `agent_loop_session_owners`: a session's ownership epoch and the cluster runner holding it
 *   (`SessionFencing`); `agent_loop_turn_commits`: which entries (`first_seq` up to `end_seq`) the
 *   turn answering a cluster request committed, written in the commit's transaction.
 * - `agent_loop_events` (migration 3): the session's event journal, one row per event: the session
 *   id, its `seq` (1, 2, …; the primary key with the id) and the event as JSON text. Removed with
 *   the session; a database migrated from before has no rows for older sessions.
 * - `agent_loop_paused_calls` (migration 5): calls waiting for approval, with their turn's
 *   checkpoint (`sessionStoreSqlPaused.ts`); removed when the turn ends, and with the session.
 *
 * An append is one transaction that locks the session row first (an upsert), so writers of one
 * session take turns and each append's entries get consecutive `seq`s.
 */
import { createHash } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import { isSqlError } from "effect/sql/SqlError"
import { isTransient } from "../../domain/connectionFailure.ts"

/** The id of a session's rows: the SHA-256 of its key (a well-formed string, so one UTF-8 encoding), in hex. */
export const sessionId = (key: string): string => createHash("sha256").update(key, "utf8").digest("hex")

/** The migrations table of this store. */
export const MIGRATIONS_TABLE = "agent_loop_migrations"

const migrations = Migrator.fromRecord({
  "1_session_log": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS agent_loop_sessions (
      session_id TEXT PRIMARY KEY NOT NULL,
      session_key TEXT NOT NULL,
      generation TEXT NOT NULL,
      entries INTEGER NOT NULL,
      updated_at BIGINT NOT NULL
    )`
    yield* sql`CREATE TABLE IF NOT EXISTS agent_loop_entries (
      session_id TEXT NOT NULL,
      seq INTEGER NOT NULL,
      entry TEXT NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`
  }),
  "2_fencing": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS agent_loop_session_owners (
      session_id TEXT PRIMARY KEY NOT NULL,
      owner TEXT NOT NULL,
      epoch BIGINT NOT NULL
    )`
    yield* sql`CREATE TABLE IF NOT EXISTS agent_loop_turn_commits (
      request_id TEXT PRIMARY KEY NOT NULL,
      session_id TEXT NOT NULL,
      first_seq INTEGER NOT NULL,
      end_seq INTEGER NOT NULL,
      committed_at BIGINT NOT NULL
    )`
    yield* sql`CREATE INDEX IF NOT EXISTS agent_loop_turn_commits_at ON agent_loop_turn_commits (committed_at)`
  }),
  "3_event_journal": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS agent_loop_events (
      session_id TEXT NOT NULL,
      seq INTEGER NOT NULL,
      event TEXT NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`
  }),
  // the token of the session's last append: an append retried after its connection was lost
  // finds whether its earlier attempt was committed (see `SessionStoreSql`'s `append`)
  "4_append_token": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`ALTER TABLE agent_loop_sessions ADD COLUMN last_append TEXT`
  }),
  // turns paused on a call waiting for approval (`sessionStoreSqlPaused.ts`), to outlive the process
  "5_paused_calls": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS agent_loop_paused_calls (
      approval_id TEXT PRIMARY KEY NOT NULL,
      session_id TEXT NOT NULL,
      turn_id TEXT NOT NULL,
      approval TEXT NOT NULL,
      checkpoint TEXT NOT NULL,
      paused_at BIGINT NOT NULL
    )`
  })
})

/**
 * How a transaction that writes starts. SQLite: `BEGIN IMMEDIATE` takes the write lock up front, so
 * two processes never both read and then both try to write (one would fail instead of waiting).
 * Postgres: the default; the row lock of the upsert orders writers.
 */
export const beginWrite = (sql: SqlClient.SqlClient): string | undefined =>
  sql.onDialectOrElse({ sqlite: () => "BEGIN IMMEDIATE", orElse: () => undefined })

/**
 * Runs a writing transaction with `beginWrite`.
 *
 * A transaction whose connection is lost under it (a database restarting) fails, and so does its
 * `ROLLBACK` on the dead connection, which the SQL client reports as a defect. The database rolls
 * back what a dropped connection left open, so nothing was written: the lost connection is made
 * a failure again, which callers retry like any other transient one.
 */
export const writeTransaction = <A, E, R>(sql: SqlClient.SqlClient, effect: Effect.Effect<A, E, R>) => {
  const begin = beginWrite(sql)
  const transaction = sql.withTransaction(effect).pipe(
    Effect.catchDefect((defect) => isSqlError(defect) && isTransient(defect) ? Effect.fail(defect) : Effect.die(defect))
  )
  return begin === undefined ? transaction : Effect.provideService(transaction, SqlClient.BeginTransaction, begin)
}

/** Brings the tables up to date; safe when several processes start at once (the migrator locks). */
export const migrate = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const run = Migrator.make({})({ loader: migrations, table: MIGRATIONS_TABLE })
  const begin = beginWrite(sql)
  return yield* begin === undefined ? run : Effect.provideService(run, SqlClient.BeginTransaction, begin)
})
