/**
 * A separate process using the SQL session store, for the tests that need two processes or a crash.
 * Run with Node 24 from the repository root: `node test/support/sqlStoreChild.ts MODE`.
 *
 * Environment: `STORE_KIND` (`sqlite` | `postgres`), `STORE_TARGET` (the file or the URL),
 * `STORE_KEY`, `STORE_TAG` (names this process's messages), `STORE_COUNT`.
 *
 * - `append`: `STORE_COUNT` appends of two messages each, `user "<tag> <i>"` and
 *   `assistant "<tag> reply <i>"`, then exit 0.
 * - `crash`: inside a transaction, append `STORE_COUNT` messages, print `inside` and wait to be
 *   killed. Exits by itself when its stdin closes, so it never outlives the test.
 */
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { PgClient } from "@effect/sql-pg"
import * as NodeSqliteClient from "../../src/layers/sql/NodeSqliteClient.ts"
import * as SessionStoreSql from "../../src/layers/SessionStoreSql.ts"
import * as Message from "../../src/domain/Message.ts"

const env = (name: string) => {
  const value = process.env[name]
  if (value === undefined) throw new Error(`${name} is not set`)
  return value
}

process.stdin.on("end", () => process.exit(3))
process.stdin.resume()

const client: Layer.Layer<SqlClient.SqlClient, unknown> = env("STORE_KIND") === "sqlite"
  ? NodeSqliteClient.layer({ filename: env("STORE_TARGET"), busyTimeout: "30 seconds" })
  : PgClient.layer({ url: Redacted.make(env("STORE_TARGET")) })
const key = env("STORE_KEY")
const tag = env("STORE_TAG")
const count = Number(env("STORE_COUNT"))

const program = Effect.gen(function*() {
  const store = yield* SessionStoreSql.make()
  if (process.argv[2] === "append") {
    for (let i = 0; i < count; i++) yield* store.append(key, [Message.user(`${tag} ${i}`), Message.assistant(`${tag} reply ${i}`)])
    return
  }
  const sql = yield* SqlClient.SqlClient
  yield* sql.withTransaction(Effect.gen(function*() {
    yield* store.append(key, Array.from({ length: count }, (_, i) => Message.user(`${tag} ${i}`)))
    yield* Effect.sync(() => process.stdout.write("inside\n"))
    return yield* Effect.never
  }))
})

await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(client)))
process.exit(0)
