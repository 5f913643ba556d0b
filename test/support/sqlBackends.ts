/**
 * The databases the SQL session store's tests run on: a SQLite file in a temporary directory, and a
 * fresh database on a throwaway Postgres server (`postgres.ts`). Each test gets its own empty
 * database; `client` opens another connection (pool) on it, as another process would.
 */
import * as NodeFs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import { NodeSqliteClient, SessionStoreSql } from "effect-agent-loop"
import type { PostgresServer } from "./postgres.ts"

/** One empty database for one test. */
export interface Database {
  /** A new client on the database: its own connection (SQLite) or pool (Postgres). */
  readonly client: Layer.Layer<SqlClient.SqlClient, unknown>
  /** What `sqlStoreChild.ts` needs to open the same database. */
  readonly env: Readonly<Record<string, string>>
}

/** Where the tests' databases come from. */
export interface Backend {
  readonly name: string
  /** A fresh database, removed (SQLite) or left to the server's removal (Postgres) with the scope. */
  readonly fresh: Effect.Effect<Database, unknown, Scope.Scope>
}

export const sqlite: Backend = {
  name: "SQLite",
  fresh: Effect.acquireRelease(
    Effect.sync(() => NodeFs.mkdtempSync(NodePath.join(os.tmpdir(), "session-store-sql-"))),
    (dir) => Effect.sync(() => NodeFs.rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.map((dir) => {
    const filename = NodePath.join(dir, "sessions.db")
    return { client: NodeSqliteClient.layer({ filename }), env: { STORE_KIND: "sqlite", STORE_TARGET: filename } }
  }))
}

let databases = 0

/** Databases on the server `server()` returns (started by the test file). */
export const postgres = (server: () => PostgresServer): Backend => ({
  name: "Postgres",
  fresh: Effect.promise(async () => {
    const name = `sessions_${process.pid}_${++databases}`
    await server().createDatabase(name)
    const url = server().url(name)
    return { client: PgClient.layer({ url: Redacted.make(url) }), env: { STORE_KIND: "postgres", STORE_TARGET: url } }
  })
})

/** A client on the database, open for the scope. */
export const openSql = (db: Database) => Effect.map(Layer.build(db.client), (context) => Context.get(context, SqlClient.SqlClient))

/** A store on its own client, open for the scope. */
export const openStore = (db: Database, options: SessionStoreSql.Options = {}) =>
  Effect.flatMap(openSql(db), (sql) => SessionStoreSql.make(options).pipe(Effect.provideService(SqlClient.SqlClient, sql)))
