/**
 * The SQL session store's contract, on SQLite and on a real Postgres (skipped, saying why, where
 * Postgres is not installed): the log round-trips, `load` is the view, `list` describes, damage is
 * reported per session, the cache follows other writers, compaction is rebased onto them, and a
 * transaction that does not commit leaves nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import { AgentEvent, Message, SessionLog, SessionStoreSql } from "effect-agent-loop"
import { sessionId } from "../../src/layers/internal/sessionStoreSqlSchema.ts"
import { type PostgresServer, postgresProbe, postgresSuite, startPostgres } from "../support/postgres.ts"
import { type Backend, openSql, openStore, postgres, sqlite } from "../support/sqlBackends.ts"
import { captureWarnings, everyKind, keysOf } from "../support/fixtures.ts"

const contract = (backend: Backend) => {
  const withDb = <A, E>(f: (db: Effect.Success<Backend["fresh"]>) => Effect.Effect<A, E, Scope.Scope>) =>
    Effect.scoped(Effect.flatMap(backend.fresh, f))

  it.live("keeps the event journal beside the log: appended, read after a seq (with a limit), its last seq, removed with the session", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        const journaled = (seq: number): AgentEvent.JournaledEvent => ({
          seq,
          event: AgentEvent.make("LLMDelta", { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }, seq, { kind: "text", text: `d${seq}\u0000` })
        })
        expect(yield* store.journal!.last("s")).toBe(0)
        yield* store.append("s", [Message.user("u"), { role: "outcome", turnId: "t", status: "completed", startedAt: 1, endedAt: 2, iterations: 1, usage: { inputTokens: 1, outputTokens: 1 } }])
        yield* store.journal!.append("s", [1, 2, 3].map(journaled))
        yield* store.journal!.append("s", [4].map(journaled))
        const other = yield* openStore(db)
        expect(yield* other.journal!.read("s", 1)).toEqual([2, 3, 4].map(journaled))
        expect(yield* other.journal!.read("s", 0, 2)).toEqual([1, 2].map(journaled))
        expect(yield* other.journal!.last("s")).toBe(4)
        expect((yield* other.list)[0]).toMatchObject({ sessionKey: "s", messages: 1, status: "completed" })
        // the same seq twice is refused, not replaced
        expect((yield* Effect.flip(store.journal!.append("s", [journaled(4)])))._tag).toBe("SessionStoreError")
        yield* store.remove("s")
        expect(yield* other.journal!.last("s")).toBe(0)
      })
    ))

  it.live("round-trips every kind across appends; a record is appended, load gives the view, log everything; another connection agrees", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        expect(yield* store.load("s")).toEqual([])
        expect(yield* store.log("s")).toEqual([])
        yield* store.append("s", everyKind.slice(0, 2))
        yield* store.append("s", everyKind.slice(2))
        yield* store.append("s", [])
        expect(yield* store.load("s")).toEqual(everyKind)
        const summary = { role: "compaction", reason: "summary", cut: 5, summary: "they listed files" } as const
        yield* store.append("s", [summary])
        expect(yield* store.load("s")).toEqual([Message.system(`${SessionLog.SUMMARY_PREFIX}\nthey listed files`), everyKind[5]])
        expect(yield* store.log("s")).toEqual([...everyKind, summary])
        const other = yield* openStore(db)
        expect(yield* other.load("s")).toEqual(yield* store.load("s"))
        expect(yield* other.log("s")).toEqual(yield* store.log("s"))
        expect(keysOf(yield* other.list)).toEqual(["s"])
      })
    ))

  it.live("an empty append stores nothing; the log a caller got is a copy", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        yield* store.append("empty", [])
        expect(yield* store.list).toEqual([])
        yield* store.append("s", [Message.user("u1")])
        const log = (yield* store.log("s")) as Array<Message.Message>
        log.push(Message.user("sneaked in"))
        expect(yield* store.log("s")).toEqual([Message.user("u1")])
      })
    ))

  it.live("an append of more rows than one INSERT takes (500) is still one append, in order", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        const many = Array.from({ length: 1001 }, (_, i) => Message.user(`m${i}`))
        yield* store.append("big", [Message.user("before")])
        yield* store.append("big", many)
        yield* store.append("big", [Message.user("after")])
        expect(yield* (yield* openStore(db)).log("big")).toEqual([Message.user("before"), ...many, Message.user("after")])
        const seqs = yield* (yield* openSql(db))<{ readonly seq: number }>`SELECT seq FROM agent_loop_entries ORDER BY seq`
        expect(seqs.map((row) => Number(row.seq))).toEqual(Array.from({ length: 1003 }, (_, i) => i))
      })
    ))

  it.live("list: last append time, messages (records not counted), the first question", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        const before = Date.now()
        yield* store.append("a", [Message.system("s"), Message.user("what is\nthis?"), Message.assistant("that")])
        yield* store.append("a", [{ role: "compaction", reason: "overflow", cut: 1 }])
        yield* store.append("b", [Message.assistant("no question yet")])
        const after = Date.now()
        const infos = [...(yield* store.list)].sort((x, y) => x.sessionKey.localeCompare(y.sessionKey))
        expect(infos.map(({ updatedAt: _, ...rest }) => rest)).toEqual([
          { sessionKey: "a", messages: 3, turns: 1, preview: "what is this?" },
          { sessionKey: "b", messages: 1, turns: 0 }
        ])
        for (const info of infos) expect(info.updatedAt).toBeGreaterThanOrEqual(before)
        for (const info of infos) expect(info.updatedAt).toBeLessThanOrEqual(after)
      })
    ))

  it.live("a corrupt or missing entry fails reading that session, naming the entry; list shows it with its problem", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        const sql = yield* openSql(db)
        yield* store.append("good", [Message.user("fine")])
        yield* store.append("corrupt", [Message.user("one"), Message.user("two"), Message.user("three")])
        yield* store.append("gap", [Message.user("one"), Message.user("two")])
        yield* sql`UPDATE agent_loop_entries SET entry = ${"{\"role\":\"user\",\"con"} WHERE session_id = ${sessionId("corrupt")} AND seq = 1`
        yield* sql`DELETE FROM agent_loop_entries WHERE session_id = ${sessionId("gap")} AND seq = 0`
        const fresh = yield* openStore(db)
        for (const reader of [store, fresh]) {
          const error = yield* Effect.flip(reader.load("corrupt"))
          expect(error).toMatchObject({ _tag: "SessionStoreError", sessionKey: "corrupt" })
          expect(error.message).toBe(`cannot read session: session "corrupt": entry 2 of 3 is corrupt`)
          expect((yield* Effect.flip(reader.log("gap"))).message).toBe(`cannot read session: session "gap": entry 1 of 2 is missing`)
        }
        const infos = [...(yield* fresh.list)].sort((x, y) => x.sessionKey.localeCompare(y.sessionKey))
        expect(infos.map(({ updatedAt: _, ...rest }) => rest)).toEqual([
          { sessionKey: "corrupt", problem: `cannot read session: session "corrupt": entry 2 of 3 is corrupt` },
          { sessionKey: "gap", problem: `cannot read session: session "gap": entry 1 of 2 is missing` },
          { sessionKey: "good", messages: 1, turns: 1, preview: "fine" }
        ])
      })
    ))

  it.live("an entry that cannot be encoded, or a key that cannot be stored, fails before anything is written", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        yield* store.append("s", [Message.user("one")])
        const bogus = { role: "wizard", content: 1 } as unknown as Message.Message
        const badCut = { role: "compaction", reason: "overflow", cut: -1 } as const
        expect((yield* Effect.flip(store.append("s", [Message.user("x"), bogus])))._tag).toBe("SessionStoreError")
        expect((yield* Effect.flip(store.append("s", [Message.user("x"), badCut])))._tag).toBe("SessionStoreError")
        for (const key of ["lone \uD800", "\uDC00", "nul \u0000"]) {
          const error = yield* Effect.flip(store.append(key, [Message.user("x")]))
          expect(error.message).toContain("cannot be stored in SQL")
          expect((yield* Effect.flip(store.load(key))).message).toContain("cannot be stored in SQL")
        }
        expect(yield* (yield* openStore(db)).log("s")).toEqual([Message.user("one")])
        expect(keysOf(yield* store.list)).toEqual(["s"])
      })
    ))

  it.live("odd and long keys stay distinct and list back exactly", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        const keys = ["../../etc/passwd", "a/b", "会话-🚀", "", ".", "Foo", "foo", "x".repeat(100_000), "x".repeat(99_999) + "y", "'; DROP TABLE x; --"]
        for (const [i, key] of keys.entries()) yield* store.append(key, [Message.user(`message ${i}`)])
        expect(keysOf(yield* store.list).sort()).toEqual([...keys].sort())
        const fresh = yield* openStore(db)
        for (const [i, key] of keys.entries()) expect(yield* fresh.load(key)).toEqual([Message.user(`message ${i}`)])
      })
    ))

  it.live("remove deletes (twice, or a key never stored, is fine); a session created again starts empty, also for another store's cache", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        const other = yield* openStore(db)
        yield* store.append("a", [Message.user("one"), Message.user("two")])
        yield* store.append("b", [Message.user("other")])
        expect(yield* other.load("a")).toEqual([Message.user("one"), Message.user("two")])
        yield* store.remove("a")
        yield* store.remove("a")
        yield* store.remove("never-existed")
        expect(keysOf(yield* store.list)).toEqual(["b"])
        expect(yield* store.load("a")).toEqual([])
        yield* store.append("a", [Message.user("fresh"), Message.user("er"), Message.user("and longer")])
        // the other store cached two entries of the old session: the new generation is read whole
        expect(yield* other.load("a")).toEqual([Message.user("fresh"), Message.user("er"), Message.user("and longer")])
      })
    ))

  it.live("a store's cache follows another writer's appends", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        const other = yield* openStore(db)
        yield* other.append("s", [Message.user("u1"), Message.assistant("a1")])
        expect(yield* store.load("s")).toEqual([Message.user("u1"), Message.assistant("a1")])
        yield* other.append("s", [Message.user("u2")])
        yield* store.append("s", [Message.assistant("a2")])
        yield* other.append("s", [{ role: "compaction", reason: "budget", cut: 2 }])
        const all = [Message.user("u1"), Message.assistant("a1"), Message.user("u2"), Message.assistant("a2")]
        expect(yield* store.log("s")).toEqual([...all, { role: "compaction", reason: "budget", cut: 2 }])
        expect(yield* store.load("s")).toEqual(all.slice(2))
        expect(yield* other.load("s")).toEqual(all.slice(2))
      })
    ))

  it.live("compaction is rebased onto another writer's messages, and dropped after another writer's compaction", () => {
    const { layer, warnings } = captureWarnings()
    return withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        const other = yield* openStore(db)
        yield* store.append("s", [Message.user("u1"), Message.assistant("a1"), Message.user("u2"), Message.assistant("a2")])
        expect(yield* store.load("s")).toHaveLength(4)
        yield* other.append("s", [Message.user("theirs")])
        // built on a view of 4: cut 5 drops everything before this store's u3; rebased, it stops at 4
        yield* store.append("s", [Message.user("u3"), { role: "compaction", reason: "overflow", cut: 5 }])
        expect(yield* store.load("s")).toEqual([Message.user("theirs"), Message.user("u3")])
        expect(yield* other.load("s")).toEqual([Message.user("theirs"), Message.user("u3")])
        expect(warnings.filter((w) => w.includes("compaction rebased"))).toHaveLength(1)

        yield* other.append("s", [{ role: "compaction", reason: "budget", cut: 1 }])
        yield* store.append("s", [Message.user("u4"), { role: "compaction", reason: "budget", cut: 2 }])
        expect(yield* store.log("s")).toEqual([
          Message.user("u1"), Message.assistant("a1"), Message.user("u2"), Message.assistant("a2"), Message.user("theirs"),
          Message.user("u3"), { role: "compaction", reason: "overflow", cut: 4 }, { role: "compaction", reason: "budget", cut: 1 },
          Message.user("u4")
        ])
      })
    ).pipe(Effect.provide(layer))
  })

  it.live("only `cachedSessions` keys are cached: an evicted key's batch is written as given", () => {
    const { layer, warnings } = captureWarnings()
    return withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db, { cachedSessions: 2 })
        const other = yield* openStore(db)
        for (const key of ["a", "b", "c"]) yield* store.append(key, [Message.user(`${key}1`), Message.user(`${key}2`)])
        for (const key of ["a", "b", "c"]) yield* store.load(key) // c comes in at the bound: a goes
        for (const key of ["a", "c"]) yield* other.append(key, [Message.user(`${key} theirs`)])
        for (const key of ["a", "c"]) yield* store.append(key, [{ role: "compaction", reason: "overflow", cut: 2 }])
        expect(warnings.filter((w) => w.includes("compaction rebased"))).toHaveLength(1) // c only
        expect(yield* store.load("c")).toEqual([Message.user("c theirs")])
        expect(yield* store.load("a")).toEqual([Message.user("a theirs")])
        yield* store.load("a")
        for (const key of ["a", "b"]) yield* other.append(key, [Message.user(`${key} more`)])
        yield* store.append("a", [{ role: "compaction", reason: "overflow", cut: 9 }])
        yield* store.append("b", [{ role: "compaction", reason: "overflow", cut: 9 }]) // b was evicted by a: as given
        expect(warnings.filter((w) => w.includes("compaction rebased"))).toHaveLength(2) // and a
        expect(yield* store.load("a")).toEqual([Message.user("a more")])
        expect(yield* store.load("b")).toEqual([])
      })
    ).pipe(Effect.provide(layer))
  })

  it.live("a caller's transaction that rolls back leaves the session, and the store's view of it, as before", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const sql = yield* openSql(db)
        const store = yield* SessionStoreSql.make().pipe(Effect.provideService(SqlClient.SqlClient, sql))
        yield* store.append("s", [Message.user("kept")])
        expect(yield* store.load("s")).toEqual([Message.user("kept")])
        const error = yield* Effect.flip(sql.withTransaction(Effect.gen(function*() {
          yield* store.append("s", [Message.user("rolled back")])
          expect(yield* store.log("s")).toEqual([Message.user("kept"), Message.user("rolled back")])
          return yield* Effect.fail("changed my mind")
        })))
        expect(error).toBe("changed my mind")
        expect(yield* store.log("s")).toEqual([Message.user("kept")])
        yield* store.append("s", [Message.user("after")])
        yield* sql.withTransaction(store.append("s", [Message.user("committed")]))
        const all = [Message.user("kept"), Message.user("after"), Message.user("committed")]
        expect(yield* store.log("s")).toEqual(all)
        expect(yield* (yield* openStore(db)).log("s")).toEqual(all)
      })
    ))

  it.live("fibers appending at once: different sessions keep their order, one shared session interleaves whole appends only", () =>
    withDb((db) =>
      Effect.gen(function*() {
        const store = yield* openStore(db)
        const keys = Array.from({ length: 10 }, (_, i) => `fiber-${i}`)
        yield* Effect.forEach([...keys, ...keys.map(() => "shared")].map((key, i) => ({ key, tag: `w${i}` })), ({ key, tag }) =>
          Effect.forEach(Array.from({ length: 10 }, (_, t) => t), (t) =>
            store.append(key, [Message.user(`${tag} turn ${t}`), Message.assistant(`${tag} reply ${t}`)]), { discard: true }), {
          concurrency: "unbounded",
          discard: true
        })
        const fresh = yield* openStore(db)
        for (const [i, key] of keys.entries()) {
          expect((yield* fresh.load(key)).map((m) => m.content)).toEqual(
            Array.from({ length: 10 }, (_, t) => [`w${i} turn ${t}`, `w${i} reply ${t}`]).flat()
          )
        }
        const shared = (yield* fresh.log("shared")).map((m) => SessionLog.isMessage(m) ? Message.textOf(m.content) : "")
        expect(shared).toHaveLength(200)
        for (let i = 0; i < shared.length; i += 2) expect(shared[i + 1]).toBe(shared[i]!.replace("turn", "reply"))
        expect(new Set(shared).size).toBe(200)
      })
    ))
}

describe("SessionStore.sql on SQLite", () => contract(sqlite))

describe.skipIf(!postgresProbe.ok)(postgresSuite("SessionStore.sql on Postgres"), () => {
  let server: PostgresServer | undefined
  beforeAll(async () => {
    server = await startPostgres()
  }, 120_000)
  afterAll(() => server?.stop())
  contract(postgres(() => server!))
})
