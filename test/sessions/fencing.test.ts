/**
 * Fencing of the SQL session store (`SessionFencing`), on SQLite and on a real Postgres (skipped,
 * saying why, where Postgres is not installed): a runner taking a session raises its epoch unless
 * it already held it; a commit under a stale ticket is rejected with nothing stored; a commit under
 * the current one is recorded under its request, so "was it committed?" is one query; and a turn
 * whose commit is fenced ends `aborted` with nothing of it in the log, and a compaction whose summary
 * is fenced fails with `CompactionFailed`, the log as it was.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import { AgentLoop, AgentLoopLive, CommitTicket, Message, Scripted, SessionStoreSql, ToolRegistryLive } from "effect-agent-loop"
import { type PostgresServer, postgresProbe, postgresSuite, startPostgres } from "../support/postgres.ts"
import { type Backend, type Database, openSql, openStore, postgres, sqlite } from "../support/sqlBackends.ts"

/** A loop on the SQL store in `db`, answering with `replies`. */
const loopOn = (db: Database, replies: Parameters<typeof Scripted.layer>[0]) =>
  Effect.gen(function*() {
    const sql = yield* openSql(db)
    const context = yield* Layer.build(
      AgentLoopLive.layer({ model: "test-model" }).pipe(
        Layer.provideMerge(Layer.mergeAll(Scripted.layer(replies), ToolRegistryLive.layer([]), SessionStoreSql.layer())),
        Layer.provide(Layer.succeed(SqlClient.SqlClient, sql))
      )
    )
    return Context.get(context, AgentLoop)
  })

const contract = (backend: Backend) => {
  const withDb = <A, E>(f: (db: Effect.Success<Backend["fresh"]>) => Effect.Effect<A, E, Scope.Scope>) =>
    Effect.scoped(Effect.flatMap(backend.fresh, f))

  it.live("taking a session raises its epoch unless the owner already held it", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const fencing = (yield* openStore(db)).fencing!
        expect(yield* fencing.acquire("s", "runner-a")).toBe(1)
        expect(yield* fencing.acquire("s", "runner-a")).toBe(1)
        expect(yield* fencing.acquire("s", "runner-b")).toBe(2)
        expect(yield* fencing.acquire("s", "runner-a")).toBe(3)
        expect(yield* fencing.acquire("other", "runner-b")).toBe(1)
      })
    ))

  it.live("a stale ticket's commit is rejected and stores nothing; the current one's is recorded under its request", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        const fencing = store.fencing!
        yield* store.append("s", [Message.user("before")])
        const first = yield* fencing.acquire("s", "runner-a")
        yield* fencing.acquire("s", "runner-b")
        const stale = yield* store.append("s", [Message.user("late"), Message.assistant("late answer")]).pipe(
          Effect.provideService(CommitTicket, { epoch: first, requestId: "r1" }),
          Effect.flip
        )
        expect(stale._tag).toBe("SessionFenced")
        expect(stale).toMatchObject({ sessionKey: "s", epoch: 1, current: 2 })
        expect(yield* fencing.committed("r1")).toEqual(Option.none())
        // another connection, as another runner: the log holds nothing of the rejected commit
        expect(yield* (yield* openStore(db)).log("s")).toEqual([Message.user("before")])

        yield* store.append("s", [Message.user("t2"), Message.assistant("a2")]).pipe(
          Effect.provideService(CommitTicket, { epoch: 2, requestId: "r2" })
        )
        const committed = yield* (yield* openStore(db)).fencing!.committed("r2")
        expect(committed).toEqual(Option.some({ sessionKey: "s", entries: [Message.user("t2"), Message.assistant("a2")] }))
        const sql = yield* openSql(db)
        const rows = yield* sql<{ readonly n: number | string }>`SELECT count(*) AS n FROM agent_loop_turn_commits`
        expect(Number(rows[0]!.n)).toBe(1)
        // forgetting the record keeps the entries
        yield* fencing.forget(Date.now() + 1)
        expect(yield* fencing.committed("r2")).toEqual(Option.none())
        expect(yield* (yield* openStore(db)).log("s")).toHaveLength(3)
      })
    ))

  it.live("a removed session's commit records go with it: a session created again under its key is no request's commit", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        const epoch = yield* store.fencing!.acquire("s", "runner-a")
        yield* store.append("s", [Message.user("t1"), Message.assistant("a1")]).pipe(
          Effect.provideService(CommitTicket, { epoch, requestId: "r1" })
        )
        yield* store.remove("s")
        yield* store.append("s", [Message.user("new"), Message.assistant("new answer")])
        expect(yield* store.fencing!.committed("r1")).toEqual(Option.none())
      })
    ))

  it.live("a turn whose commit is fenced ends aborted, nothing of it stored; under the current epoch it completes", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const loop = yield* loopOn(db, [{ content: "first" }, { content: "second" }])
        const store = yield* openStore(db)
        const stale = yield* store.fencing!.acquire("s", "runner-a")
        const current = yield* store.fencing!.acquire("s", "runner-b")
        const aborted = yield* loop.turn("s", "hello").pipe(Effect.provideService(CommitTicket, { epoch: stale, requestId: "r1" }))
        expect(aborted.status).toBe("aborted")
        expect(aborted.failure?._tag).toBe("SessionFenced")
        expect(aborted.messages).toEqual([])
        expect(yield* store.log("s")).toEqual([])
        expect(yield* store.fencing!.committed("r1")).toEqual(Option.none())

        const done = yield* loop.turn("s", "again").pipe(Effect.provideService(CommitTicket, { epoch: current, requestId: "r2" }))
        expect(done.status).toBe("completed")
        const committed = yield* store.fencing!.committed("r2")
        // the turn's messages, then its outcome record, in the one committed append
        const entries = Option.getOrThrow(committed).entries
        expect(entries.slice(0, -1)).toEqual(done.messages)
        expect(entries.at(-1)).toMatchObject({ role: "outcome", turnId: done.turnId, status: "completed" })
      })
    ))

  it.live("a compaction under a stale ticket fails, appending nothing; under the current one its summary is stored", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const loop = yield* loopOn(db, [{ content: "The summary." }, { content: "The summary." }])
        const store = yield* openStore(db)
        const history = [Message.user("q"), Message.assistant("a")]
        yield* store.append("s", history)
        const stale = yield* store.fencing!.acquire("s", "runner-a")
        const current = yield* store.fencing!.acquire("s", "runner-b")
        const refused = yield* loop.compact("s", { keepMessages: 0 }).pipe(Effect.provideService(CommitTicket, { epoch: stale }), Effect.flip)
        expect(refused._tag).toBe("CompactionFailed")
        expect(refused.message).toContain("SessionFenced")
        expect(yield* store.log("s")).toEqual(history)
        const done = yield* loop.compact("s", { keepMessages: 0 }).pipe(Effect.provideService(CommitTicket, { epoch: current }))
        expect(done).toEqual({ sessionKey: "s", summarized: 2, remaining: 1 })
        expect((yield* store.log("s")).filter((entry) => entry.role === "compaction")).toHaveLength(1)
      })
    ))
}

describe("SQL session store fencing (SQLite)", () => contract(sqlite))

describe.skipIf(!postgresProbe.ok)(postgresSuite("SQL session store fencing"), () => {
  let server: PostgresServer | undefined
  beforeAll(async () => {
    server = await startPostgres()
  })
  afterAll(async () => {
    await server?.stop()
  })
  contract(postgres(() => server!))
})
