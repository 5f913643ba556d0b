/**
 * `SessionStore` in a SQL database, on any `effect/sql` `SqlClient`: SQLite (`layerSqlite`, Node's
 * built-in `node:sqlite`), Postgres (`@effect/sql-pg`'s `PgClient`), or another driver. Tables and
 * migrations in `internal/sessionStoreSqlSchema.ts`.
 *
 * - Append-only: `append` is one transaction that locks the session's row, numbers the entries
 *   after the last stored one and inserts them, so processes appending to one session at once lose
 *   nothing and interleave whole appends only; a crash (or an interrupted fiber) before the commit
 *   leaves the session as it was. Nothing is ever rewritten; compaction is a record (`SessionLog`).
 * - A decoded-history cache per key, per store, for the `cachedSessions` keys used last: a `load`
 *   after growth reads and decodes only the new rows (one statement), an `append` on an up-to-date
 *   cache reads nothing. A session removed and created again (a new `generation`) is read whole.
 * - Another process may append between this store's `load` and `append`: its entries stay, and the
 *   compaction records of this store's batch are rebased onto them (`SessionLog.rebase`), as the
 *   JSON Lines store does. That needs the key's cache; a key evicted in between is written as given.
 * - An entry that does not decode is damage, not a crash artefact (transactions leave none): reading
 *   the session fails naming the entry, and `list` shows the session with that problem.
 * - Fencing (`SessionFencing`): an append under a `CommitTicket` checks the session's ownership
 *   epoch and records its request in the same transaction (`internal/sessionStoreSqlFence.ts`).
 * - The session's event journal is a table beside its entries (`internal/sessionStoreSqlJournal.ts`),
 *   removed with the session in the same transaction.
 * - Turns paused on a call waiting for approval (`paused`) are a table beside them too
 *   (`internal/sessionStoreSqlPaused.ts`), removed with the session.
 * - Session keys are any well-formed Unicode string without NUL (both databases store text; a lone
 *   surrogate or NUL could not be stored faithfully), else a `SessionStoreError`.
 */
import { randomUUID } from "node:crypto"
import * as Arr from "effect/Array"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Hash from "effect/Hash"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import { type SessionFenced, SessionStoreError } from "../domain/errors.ts"
import type { Message } from "../domain/Message.ts"
import * as SessionLog from "../domain/SessionLog.ts"
import { CommitTicket } from "../services/SessionFencing.ts"
import { type SessionInfo, SessionStore, type SessionStoreShape } from "../services/SessionStore.ts"
import * as NodeSqliteClient from "./sql/NodeSqliteClient.ts"
import * as Fence from "./internal/sessionStoreSqlFence.ts"
import * as Journal from "./internal/sessionStoreSqlJournal.ts"
import * as Paused from "./internal/sessionStoreSqlPaused.ts"
import { migrate, sessionId, writeTransaction } from "./internal/sessionStoreSqlSchema.ts"
import { untraced, withoutSpans } from "./internal/untraced.ts"
import { isTransient, retryTransient } from "../domain/connectionFailure.ts"

/** Options of the SQL store. */
export interface Options {
  /** How many sessions keep their decoded log in memory (least recently used go first). Default 32; 0 turns the cache off. */
  readonly cachedSessions?: number
  /**
   * Whether each SQL statement is a span (`effect/sql`'s, with the statement's text, its values
   * never: they are bound parameters). Default false: the store's statements make no spans, so a
   * trace holds the turns, not a trace of its own per write.
   */
  readonly traceStatements?: boolean
}

const LOCK_STRIPES = 64
/** Rows per INSERT: well under the bound-parameter limits of SQLite (32766) and Postgres (65535). */
const INSERT_CHUNK = 500

const EntryJson = Schema.fromJsonString(SessionLog.SessionEntry)
const decodeEntry = Schema.decodeUnknownOption(EntryJson)
const encodeEntry = Schema.encodeEffect(EntryJson)

/** A key's decoded log: valid while the session has this `generation` and at least `count` entries. */
interface Cached {
  readonly generation: string
  /** Entries read, so the `seq` of the next one. */
  count: number
  readonly entries: Array<SessionLog.SessionEntry>
  /** `entries` folded (`SessionLog.foldEntry`), not yet repaired. */
  folded: Array<Message>
}

const extend = (cached: Cached, entries: ReadonlyArray<SessionLog.SessionEntry>) => {
  for (const entry of entries) {
    cached.entries.push(entry)
    cached.folded = SessionLog.foldEntry(cached.folded, entry)
  }
  cached.count += entries.length
}

interface LogRow {
  readonly session_key: string
  readonly generation: string
  readonly total: number | string | bigint
  readonly seq: number | string | bigint | null
  readonly entry: string | null
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Whether a key can be stored as text faithfully. */
const storable = (key: string) => !key.includes("\u0000") && !LONE_SURROGATE.test(key)

/** A store on the `SqlClient` in context; brings its tables up to date first. Its statements make no spans unless `traceStatements`. */
export const make = (options: Options = {}): Effect.Effect<SessionStoreShape, SessionStoreError, SqlClient.SqlClient> =>
  options.traceStatements === true ? open(options) : Effect.map(withoutSpans(open(options)), untraced)

const open = (options: Options): Effect.Effect<SessionStoreShape, SessionStoreError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    yield* migrate.pipe(
      Effect.provideService(SqlClient.SqlClient, sql),
      Effect.mapError((e) => new SessionStoreError({ sessionKey: "", message: `cannot prepare the session tables: ${e.message}` }))
    )
    const capacity = options.cachedSessions ?? 32
    const cache = new Map<string, Cached>()
    const stripes = Array.from({ length: LOCK_STRIPES }, () => Semaphore.makeUnsafe(1))
    const locked = (key: string) => stripes[Hash.string(key) & (LOCK_STRIPES - 1)]!.withPermits(1)
    const failure = (key: string, doing: string) => (cause: { readonly message: string }) =>
      new SessionStoreError({ sessionKey: key, message: `${doing}: ${cause.message}`, ...(isTransient(cause) ? { transient: true } : {}) })

    const checked = <A, E, R>(key: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SessionStoreError, R> =>
      storable(key)
        ? effect
        : Effect.fail(new SessionStoreError({
          sessionKey: key,
          message: `session key ${JSON.stringify(key)} cannot be stored in SQL: it holds a NUL character or a lone surrogate`
        }))

    const remember = (key: string, cached: Cached) => {
      cache.delete(key)
      if (capacity <= 0) return
      cache.set(key, cached)
      if (cache.size > capacity) cache.delete(cache.keys().next().value!)
    }

    /** The session's rows from `from.count` on when it still has `from.generation`, else all; one statement, one snapshot. */
    const fetch = (key: string, from: Cached | undefined) =>
      sql<LogRow>`SELECT s.session_key AS session_key, s.generation AS generation, s.entries AS total, e.seq AS seq, e.entry AS entry
        FROM agent_loop_sessions s LEFT JOIN agent_loop_entries e ON e.session_id = s.session_id
          AND e.seq >= CASE WHEN s.generation = ${from?.generation ?? ""} THEN ${from?.count ?? 0} ELSE 0 END
        WHERE s.session_id = ${sessionId(key)} ORDER BY e.seq`

    /**
     * Brings the key's cache up to date (reading only the rows after a valid cache, else all).
     * Returns the cache and the entries read now; `undefined` when the session does not exist.
     */
    const refresh = (key: string, shared: boolean) =>
      Effect.gen(function*() {
        const known = shared ? cache.get(key) : undefined
        let rows = yield* fetch(key, known)
        const first = rows[0]
        if (first === undefined) {
          if (shared) cache.delete(key)
          return undefined
        }
        if (first.session_key !== key) {
          return yield* new SessionStoreError({ sessionKey: key, message: `session ${JSON.stringify(key)}: its rows belong to another key` })
        }
        const total = Number(first.total)
        let base = known?.generation === first.generation ? known : undefined
        if (base !== undefined && base.count > total) {
          // fewer entries than this store read: not the log it read (restored from a backup, say)
          base = undefined
          rows = yield* fetch(key, undefined)
        }
        const start = base?.count ?? 0
        const read: Array<SessionLog.SessionEntry> = []
        for (const row of rows) {
          if (row.seq === null || row.entry === null) continue
          const seq = Number(row.seq)
          if (seq !== start + read.length) break
          const entry = decodeEntry(row.entry)
          if (entry._tag === "None") {
            return yield* new SessionStoreError({ sessionKey: key, message: `session ${JSON.stringify(key)}: entry ${seq + 1} of ${total} is corrupt` })
          }
          read.push(entry.value)
        }
        if (start + read.length !== total) {
          return yield* new SessionStoreError({
            sessionKey: key,
            message: `session ${JSON.stringify(key)}: entry ${start + read.length + 1} of ${total} is missing`
          })
        }
        const cached: Cached = base ?? { generation: first.generation, count: 0, entries: [], folded: [] }
        extend(cached, read)
        if (shared) remember(key, cached)
        return { cached, read }
      }).pipe(Effect.tapError(() => Effect.sync(() => shared && cache.delete(key))))

    /** Whether a caller's transaction is open: what it reads may yet roll back, so it stays out of the cache. */
    const inTransaction = Effect.map(Effect.serviceOption(sql.transactionService), Option.isSome)

    /**
     * The session's log, read again while the database blips (a turn's first step reads it; a read
     * is safe to repeat), except inside a transaction, which a failed statement has ended anyway.
     */
    const read = (key: string) =>
      checked(
        key,
        Effect.flatMap(inTransaction, (nested) => {
          const once = Effect.mapError(refresh(key, !nested), failure(key, "cannot read session"))
          return nested ? once : retryTransient(once)
        }).pipe(locked(key))
      )

    const load = (key: string) =>
      Effect.map(read(key), (got): ReadonlyArray<Message> => got === undefined ? [] : SessionLog.repair(got.cached.folded))

    const log = (key: string) =>
      Effect.map(read(key), (got): ReadonlyArray<SessionLog.SessionEntry> => got === undefined ? [] : [...got.cached.entries])

    const encode = (key: string, entries: ReadonlyArray<SessionLog.SessionEntry>) =>
      Effect.forEach(entries, (entry) => encodeEntry(entry)).pipe(Effect.mapError(failure(key, "cannot encode entry")))

    /**
     * What to write, and the cache to extend with it once committed. Runs inside the transaction,
     * after the session's row is locked, so what it reads is the latest log.
     */
    const prepare = (key: string, generation: string, total: number, entries: ReadonlyArray<SessionLog.SessionEntry>) =>
      Effect.gen(function*() {
        const known = cache.get(key)
        if (known === undefined) return { entries, cached: undefined }
        if (known.generation === generation && known.count === total) return { entries, cached: known }
        const baseLength = known.generation === generation && known.count <= total ? SessionLog.repair(known.folded).length : undefined
        const refreshed = yield* Effect.result(refresh(key, true))
        const fresh = refreshed._tag === "Success" ? refreshed.success : undefined
        const rebased = SessionLog.rebase(entries, fresh === undefined ? undefined : baseLength, fresh?.read ?? [])
        if (rebased !== entries) {
          yield* Effect.logWarning(`session ${JSON.stringify(key)}: changed by another writer since it was read; compaction rebased`)
        }
        return { entries: rebased, cached: fresh?.cached.count === total ? fresh.cached : undefined }
      })

    const insertRows = (id: string, first: number, lines: ReadonlyArray<string>) =>
      Effect.forEach(
        Arr.chunksOf(lines.map((entry, i): Record<string, unknown> => ({ session_id: id, seq: first + i, entry })), INSERT_CHUNK),
        (rows) => sql`INSERT INTO agent_loop_entries ${sql.insert(rows)}`,
        { discard: true }
      )

    /**
     * Appends in one transaction. Through a blip it is made again, with the same token: when the
     * connection was lost after an attempt's commit was applied but before it was acknowledged,
     * the next attempt finds the token on the session's row and writes nothing, so an append is
     * stored once (unless another writer appended in between: a cluster fences its sessions, so
     * it has none). Its failure after the retries is not transient any more: a caller that
     * retried it again would do so under a new token.
     */
    const append = (key: string, entries: ReadonlyArray<SessionLog.SessionEntry>) =>
      checked(
        key,
        Effect.gen(function*() {
          if (entries.length === 0) return
          const encoded = yield* encode(key, entries)
          const nested = yield* inTransaction
          // inside a caller's transaction the key goes uncached: written as given, read again after
          if (nested) cache.delete(key)
          const ticket = yield* CommitTicket
          const id = sessionId(key)
          const token = randomUUID()
          const attempt = Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            yield* writeTransaction(
              sql,
              Effect.gen(function*() {
                // the upsert creates the session or locks its row until the commit
                const [head] = yield* sql<{
                  readonly session_key: string
                  readonly generation: string
                  readonly entries: number | string | bigint
                  readonly last_append: string | null
                }>`
                  INSERT INTO agent_loop_sessions (session_id, session_key, generation, entries, updated_at)
                  VALUES (${id}, ${key}, ${randomUUID()}, 0, ${now})
                  ON CONFLICT (session_id) DO UPDATE SET updated_at = excluded.updated_at
                  RETURNING session_key, generation, entries, last_append`
                if (head!.session_key !== key) {
                  return yield* new SessionStoreError({ sessionKey: key, message: `session ${JSON.stringify(key)}: its rows belong to another key` })
                }
                if (head!.last_append === token) {
                  // an earlier attempt was committed, unacknowledged: its after-commit step never ran
                  cache.delete(key)
                  return
                }
                const total = Number(head!.entries)
                if (ticket !== undefined) yield* Fence.check(sql, key, ticket)
                const plan = yield* prepare(key, head!.generation, total, entries)
                const lines = plan.entries === entries ? encoded : yield* encode(key, plan.entries)
                yield* insertRows(id, total, lines)
                yield* sql`UPDATE agent_loop_sessions SET entries = ${total + lines.length}, last_append = ${token} WHERE session_id = ${id}`
                if (ticket !== undefined) yield* Fence.record(sql, key, ticket, total, total + lines.length, now)
                // The cache follows the commit: at once, or, inside a caller's transaction, once that
                // commits (never, if it rolls back). Only a cache still at this append's start grows.
                const cached = plan.cached
                if (cached !== undefined) {
                  yield* sql.afterCommit(Effect.sync(() => {
                    if (cache.get(key) !== cached || cached.count !== total) return
                    extend(cached, plan.entries)
                    remember(key, cached)
                  }))
                }
              })
            )
          }).pipe(Effect.mapError((e: SqlError.SqlError | SessionStoreError | SessionFenced) =>
            e._tag === "SqlError" ? failure(key, "cannot append to session")(e) : e
          ))
          // a caller's transaction is over once a statement failed: it is the caller's to retry
          if (nested) return yield* attempt
          return yield* retryTransient(attempt).pipe(
            Effect.mapError((e) => e._tag === "SessionStoreError" && e.transient === true ? new SessionStoreError({ sessionKey: key, message: e.message }) : e)
          )
        }).pipe(locked(key))
      )

    /** Describes a session; one that cannot be read says why. */
    const describeSession = (key: string, updatedAt: number): Effect.Effect<ReadonlyArray<SessionInfo>> =>
      read(key).pipe(
        Effect.map((got): ReadonlyArray<SessionInfo> =>
          got === undefined ? [] : [{ sessionKey: key, updatedAt, ...SessionLog.describe(got.cached.entries) }]
        ),
        Effect.catch((e) => Effect.succeed([{ sessionKey: key, problem: e.message }]))
      )

    const list = sql<{ readonly session_key: string; readonly updated_at: number | string | bigint }>`
      SELECT session_key, updated_at FROM agent_loop_sessions ORDER BY session_key`.pipe(
      Effect.mapError(failure("", "cannot list sessions")),
      Effect.flatMap((rows) => Effect.forEach(rows, (row) => describeSession(row.session_key, Number(row.updated_at)))),
      Effect.map((infos) => infos.flat())
    )

    const remove = (key: string) =>
      checked(
        key,
        writeTransaction(
          sql,
          Effect.gen(function*() {
            yield* sql`DELETE FROM agent_loop_entries WHERE session_id = ${sessionId(key)}`
            yield* sql`DELETE FROM agent_loop_events WHERE session_id = ${sessionId(key)}`
            yield* sql`DELETE FROM agent_loop_paused_calls WHERE session_id = ${sessionId(key)}`
            yield* sql`DELETE FROM agent_loop_sessions WHERE session_id = ${sessionId(key)}`
            yield* Fence.removeSession(sql, key)
          })
        ).pipe(
          Effect.ensuring(Effect.sync(() => cache.delete(key))),
          Effect.mapError(failure(key, "cannot remove session")),
          locked(key)
        )
      )

    return { load, log, append, list, remove, fencing: Fence.make(sql), journal: Journal.make(sql, failure), paused: Paused.make(sql, failure) }
  })

/** The SQL store as a layer on the `SqlClient` in context (e.g. `PgClient.layer` of `@effect/sql-pg`). */
export const layer = (options: Options = {}): Layer.Layer<SessionStore, SessionStoreError, SqlClient.SqlClient> =>
  Layer.effect(SessionStore, make(options))

/**
 * The SQL store on a SQLite database file (created if missing) through Node's built-in `node:sqlite`.
 * Several processes may use the file at once.
 */
export const layerSqlite = (
  filename: string,
  options: Options & Pick<NodeSqliteClient.Options, "busyTimeout"> = {}
): Layer.Layer<SessionStore, SessionStoreError> =>
  layer(options).pipe(
    Layer.provide(
      Layer.effect(
        SqlClient.SqlClient,
        NodeSqliteClient.make({ filename, ...(options.busyTimeout === undefined ? {} : { busyTimeout: options.busyTimeout }) }).pipe(
          Effect.mapError((e) => new SessionStoreError({ sessionKey: "", message: e.message }))
        )
      ).pipe(Layer.provide(Reactivity.layer))
    )
  )
