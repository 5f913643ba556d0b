/**
 * The SQL session stores of `--store sqlite|postgres` (`storeChoice.ts`): the SQL client of the
 * choice and the store on it. Apart from `storeChoice.ts`, so that the SQL code loads only when a
 * SQL store is opened (never for `--ephemeral` or `--store jsonl`).
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as SqlClient from "effect/sql/SqlClient"
import * as NodeSqliteClient from "../../layers/sql/NodeSqliteClient.ts"
import * as SessionStoreSql from "../../layers/SessionStoreSql.ts"
import { SessionStore } from "../../services/SessionStore.ts"
import { ensureDataDir } from "../config/dataDir.ts"
import { CliFailure } from "../terminal/failure.ts"
import { location, sqliteFile, type StoreChoice } from "./storeChoice.ts"

const storeFailure = (choice: StoreChoice, data: string) => (error: { readonly message: string }) =>
  new CliFailure({ message: `cannot open the session store (${location(choice, data)}): ${error.message}`, code: 1 })

/** The SQL client of a SQL choice, its failures as `CliFailure`s. */
const sqlClient = (choice: StoreChoice, data: string): Layer.Layer<SqlClient.SqlClient, CliFailure, FileSystem.FileSystem> => {
  const failure = storeFailure(choice, data)
  const client = choice.kind === "sqlite"
    ? Effect.andThen(ensureDataDir(data).pipe(Effect.mapError(failure)), NodeSqliteClient.make({ filename: sqliteFile(data) }))
    : Effect.flatMap(
      Effect.tryPromise({
        try: () => import("@effect/sql-pg/PgClient"),
        catch: () => new CliFailure({ message: "--store postgres needs @effect/sql-pg: npm install @effect/sql-pg", code: 1 })
      }),
      (PgClient) => PgClient.make({ url: choice.databaseUrl! })
    )
  return Layer.effect(
    SqlClient.SqlClient,
    client.pipe(Effect.mapError((e) => (e instanceof CliFailure ? e : failure(e))))
  ).pipe(Layer.provide(Reactivity.layer))
}

/** The SQL session store of a choice (SQLite or Postgres); opening it fails with one line. */
export const layer = (choice: StoreChoice, data: string) =>
  Layer.effect(SessionStore, SessionStoreSql.make().pipe(Effect.mapError(storeFailure(choice, data)))).pipe(
    Layer.provide(sqlClient(choice, data))
  )
