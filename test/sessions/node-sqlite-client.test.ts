/**
 * The `effect/sql` client on `node:sqlite`: statements, transactions (commit, rollback, nesting),
 * safe integers, a private file, the prepared-statement cache past its bound, and a writer that
 * gives up on another connection's lock after its busy timeout instead of waiting forever.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as NodeFs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { NodeSqliteClient } from "effect-agent-loop"

/** A client on a fresh file for the scope (the directory removed afterwards). */
const withClient = (options: Omit<NodeSqliteClient.Options, "filename"> = {}) =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => NodeFs.mkdtempSync(NodePath.join(os.tmpdir(), "node-sqlite-client-"))),
      (dir) => Effect.sync(() => NodeFs.rmSync(dir, { recursive: true, force: true }))
    )
    const filename = NodePath.join(dir, "db.sqlite")
    const open = Effect.map(Layer.build(NodeSqliteClient.layer({ filename, ...options })), Context.get(SqlClient.SqlClient))
    return { sql: yield* open, open, filename }
  })

describe("NodeSqliteClient", () => {
  it.live("runs statements with parameters; a transaction commits, or rolls back on failure (nested: to its savepoint)", () =>
    Effect.scoped(Effect.gen(function*() {
      const { filename, sql } = yield* withClient()
      expect((NodeFs.statSync(filename).mode & 0o777).toString(8)).toBe("600")
      yield* sql`CREATE TABLE t (n INTEGER, s TEXT)`
      yield* sql`INSERT INTO t ${sql.insert([{ n: 1, s: "one" }, { n: 2, s: "two" }])}`
      expect(yield* sql`SELECT n, s FROM t WHERE n > ${1}`).toEqual([{ n: 2, s: "two" }])
      const failed = yield* Effect.flip(sql.withTransaction(Effect.andThen(sql`INSERT INTO t VALUES (3, 'three')`, Effect.fail("no"))))
      expect(failed).toBe("no")
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO t VALUES (4, 'four')`
        yield* Effect.ignore(sql.withTransaction(Effect.andThen(sql`INSERT INTO t VALUES (5, 'five')`, Effect.fail("inner"))))
      }))
      expect((yield* sql<{ n: number }>`SELECT n FROM t ORDER BY n`).map((row) => row.n)).toEqual([1, 2, 4])
      const big = yield* sql<{ n: bigint }>`SELECT ${2n ** 62n} AS n`.pipe(Effect.provideService(SqlClient.SafeIntegers, true))
      expect(big).toEqual([{ n: 2n ** 62n }])
    })))

  it.live("past the prepared-statement cache's bound every statement still runs", () =>
    Effect.scoped(Effect.gen(function*() {
      const { sql } = yield* withClient({ prepareCacheSize: 4 })
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < 6; i++) expect(yield* sql.unsafe(`SELECT ${i} AS n`)).toEqual([{ n: i }])
      }
    })))

  it.live("a writer waits for another connection's write lock at most its busy timeout, then fails with a SqlError", () =>
    Effect.scoped(Effect.gen(function*() {
      const { open, sql } = yield* withClient({ busyTimeout: "20 millis" })
      yield* sql`CREATE TABLE t (n INTEGER)`
      const other = yield* open
      const error = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO t VALUES (1)`
        return yield* Effect.flip(other`INSERT INTO t VALUES (2)`)
      })).pipe(Effect.provideService(SqlClient.BeginTransaction, "BEGIN IMMEDIATE"))
      expect(error._tag).toBe("SqlError")
      expect(error.reason._tag).toBe("LockTimeoutError")
      yield* other`INSERT INTO t VALUES (3)`
      expect((yield* sql<{ n: number }>`SELECT n FROM t ORDER BY n`).map((row) => row.n)).toEqual([1, 3])
    })))
})
