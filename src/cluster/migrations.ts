/**
 * How the cluster's own tables are created: Effect's SQL migrator (which serialises concurrent
 * runners on Postgres), each table module with a migrations table of its own, so that the tables'
 * histories are independent of one another.
 */
import * as Effect from "effect/Effect"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import { retryTransientOrDie } from "../domain/connectionFailure.ts"

/** One step of a table's history (`NNNN_name`), given the client. */
type Step = (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>

/** The migrator of `steps`, recording them in `table`; running it is a defect when the database refuses. */
export const migrate = (table: string, steps: Readonly<Record<string, Step>>): Effect.Effect<void, never, SqlClient.SqlClient> =>
  retryTransientOrDie(Effect.asVoid(Migrator.make({})({
    table,
    loader: Migrator.fromRecord(Object.fromEntries(
      Object.entries(steps).map(([name, step]) => [name, Effect.gen(function*() {
        yield* step(yield* SqlClient.SqlClient)
      })])
    ))
  })))
