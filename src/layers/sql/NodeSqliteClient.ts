/**
 * An `effect/sql` `SqlClient` on SQLite through Node's built-in `node:sqlite` (no native build).
 *
 * Why here and not `@effect/sql-sqlite-node`: that package's Effect 4 releases on npm are betas that
 * import `effect/unstable/*`, which `effect` 4.1 no longer exports, so they cannot load next to it.
 * This module is the small part of it that the session store needs, built on what `effect/sql`
 * provides for SQLite drivers (`SqlClient.makeSqliteAcquirers`, the SQLite compiler and error
 * classification): one connection shared through a semaphore, prepared statements cached. Any code
 * written against `SqlClient` (the session store included) runs unchanged on the package once an
 * Effect 4.1 release of it exists.
 *
 * Several processes may open the same file: the journal is WAL (readers never wait for the writer),
 * and a writer waits for another's lock at most `busyTimeout` before failing with a `SqlError`.
 * `node:sqlite` is loaded when a client is made, so programs that never use SQLite never load it.
 * The database file is private (0600), as the JSON Lines store's files are.
 */
import * as Cache from "effect/Cache"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlConnection from "effect/sql/SqlConnection"
import * as SqlError from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"
import * as NodeFs from "node:fs"
import type { DatabaseSync, StatementSync } from "node:sqlite"

/** Options of the SQLite client. */
export interface Options {
  /** The database file (created if missing), or `:memory:`. */
  readonly filename: string
  /** How long a write waits for another connection's lock before failing. Default 5 seconds. */
  readonly busyTimeout?: Duration.Input
  /** How many prepared statements stay cached. Default 200. */
  readonly prepareCacheSize?: number
}

const failure = (cause: unknown, message: string, operation: string) =>
  new SqlError.SqlError({ reason: SqlError.classifySqliteError(withErrno(cause), { message, operation }) })

/** `node:sqlite` reports the SQLite result code as `errcode`; the classifier reads `errno`. */
const withErrno = (cause: unknown): unknown => {
  if (typeof cause !== "object" || cause === null || !("errcode" in cause) || "errno" in cause) return cause
  const errcode = (cause as { readonly errcode: unknown }).errcode
  return typeof errcode === "number" ? Object.assign(cause, { errno: errcode }) : cause
}

const PRIVATE_FILE = 0o600
const OPEN_TO_OTHERS = 0o077

/**
 * Creates the database file 0600 (or tightens an existing one): it holds whatever was stored in it.
 * SQLite gives its `-wal` and `-shm` files the database file's permissions.
 */
const makePrivate = (filename: string) => {
  NodeFs.closeSync(NodeFs.openSync(filename, "a", PRIVATE_FILE))
  if ((NodeFs.statSync(filename).mode & OPEN_TO_OTHERS) !== 0) NodeFs.chmodSync(filename, PRIVATE_FILE)
}

const open = (options: Options) =>
  Effect.gen(function*() {
    const { DatabaseSync } = yield* Effect.promise(() => import("node:sqlite"))
    const timeout = Duration.toMillis(Duration.fromInputUnsafe(options.busyTimeout ?? Duration.seconds(5)))
    return yield* Effect.acquireRelease(
      Effect.try({
        try: (): DatabaseSync => {
          if (options.filename !== ":memory:" && options.filename !== "") makePrivate(options.filename)
          const db = new DatabaseSync(options.filename, { timeout })
          try {
            // WAL: readers see the last commit while a writer works, and a crash rolls back cleanly
            db.exec("PRAGMA journal_mode = WAL")
            return db
          } catch (error) {
            db.close()
            throw error
          }
        },
        catch: (cause) => failure(cause, `cannot open the SQLite database ${options.filename}`, "open")
      }),
      (db) => Effect.sync(() => db.close())
    )
  })

const makeConnection = (db: DatabaseSync, options: Options) =>
  Effect.gen(function*() {
    const prepared = yield* Cache.make({
      capacity: options.prepareCacheSize ?? 200,
      lookup: (sql: string) =>
        Effect.try({ try: () => db.prepare(sql), catch: (cause) => failure(cause, "Failed to prepare statement", "prepare") })
    })

    const run = (statement: StatementSync, params: ReadonlyArray<unknown>, options: { readonly raw?: boolean; readonly arrays?: boolean }) =>
      Effect.withFiber<any, SqlError.SqlError>((fiber) =>
        Effect.try({
          try: () => {
            statement.setReadBigInts(Context.get(fiber.context, SqlClient.SafeIntegers))
            statement.setReturnArrays(options.arrays === true)
            const args = params as Array<any>
            if (statement.columns().length > 0) return statement.all(...args)
            const result = statement.run(...args)
            return options.raw === true ? result : []
          },
          catch: (cause) => failure(cause, "Failed to execute statement", "execute")
        })
      )

    const cached = (sql: string, params: ReadonlyArray<unknown>, options: { readonly raw?: boolean; readonly arrays?: boolean } = {}) =>
      Effect.flatMap(Cache.get(prepared, sql), (statement) => run(statement, params, options))
    const unprepared = (sql: string, params: ReadonlyArray<unknown>, arrays: boolean) =>
      Effect.flatMap(
        Effect.try({ try: () => db.prepare(sql), catch: (cause) => failure(cause, "Failed to prepare statement", "prepare") }),
        (statement) => run(statement, params, { arrays })
      )
    const transformed = <A>(effect: Effect.Effect<ReadonlyArray<A>, SqlError.SqlError>, transform: (<B extends object>(rows: ReadonlyArray<B>) => ReadonlyArray<B>) | undefined) =>
      transform === undefined ? effect : Effect.map(effect, (rows) => transform(rows as ReadonlyArray<any>))

    const connection: SqlConnection.Connection = {
      execute: (sql, params, transform) => transformed(cached(sql, params), transform),
      executeRaw: (sql, params) => cached(sql, params, { raw: true }),
      executeValues: (sql, params) => cached(sql, params, { arrays: true }),
      executeValuesUnprepared: (sql, params) => unprepared(sql, params, true),
      executeUnprepared: (sql, params, transform) => transformed(unprepared(sql, params ?? [], false), transform),
      executeStream: () => Stream.die("node:sqlite streams are not supported")
    }
    return connection
  })

/** A client on the database file; closed with its scope. */
export const make = (options: Options): Effect.Effect<SqlClient.SqlClient, SqlError.SqlError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const db = yield* open(options)
    const connection = yield* makeConnection(db, options)
    const acquirers = SqlClient.makeSqliteAcquirers({
      connection: Effect.succeed(connection),
      semaphore: yield* Semaphore.make(1),
      isTransaction: () => db.isTransaction
    })
    return yield* SqlClient.make({
      ...acquirers,
      compiler: Statement.makeCompilerSqlite(),
      driver: "sqlite-node",
      spanAttributes: [["db.system.name", "sqlite"]]
    })
  })

/** The client as the `SqlClient` service. */
export const layer = (options: Options): Layer.Layer<SqlClient.SqlClient, SqlError.SqlError> =>
  Layer.effect(SqlClient.SqlClient, make(options)).pipe(Layer.provide(Reactivity.layer))
