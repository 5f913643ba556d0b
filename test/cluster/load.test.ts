/**
 * A cluster under load keeps its word and its tables small: one runner process (short shard lock
 * timings, so a renewal slowed by the load gives its shards up, which must not abort turns), 200
 * sessions at once, five turns each on a 200 ms model. No turn is aborted, every history is whole
 * and in order, and once the turns are answered the bookkeeping (requests, replies, claims, commit
 * records, nonces, request fates) is swept to nothing past a 15-second retention window. The persisted replies hold no
 * second copy of the turns' messages (those of `send` neither): the client reads them from the
 * session log, in the same database, before and after the window. Multi-process, on real time:
 * every wait polls a condition with a deadline.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Fiber, ManagedRuntime, Redacted, Stream } from "effect"
import type { Sharding } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AgentLoop, AgentLoopCluster, Message } from "effect-agent-loop"
import * as Auth from "../../src/cluster/auth.ts"
import * as ReplyLog from "../../src/cluster/replyLog.ts"
import { startCluster, type TestCluster, waitUntil } from "../support/cluster.ts"
import { postgresProbe, postgresSuite } from "../support/postgres.ts"

const SESSIONS = 200
const SECRET = "the load test's cluster secret"
const TURNS = 5

describe.skipIf(!postgresProbe.ok)(postgresSuite(`${SESSIONS} sessions at once on one runner`), () => {
  let cluster: TestCluster
  let runtime: ManagedRuntime.ManagedRuntime<AgentLoop | Sharding.Sharding, unknown>

  /** Rows of the cluster's bookkeeping, table by table. */
  const bookkeeping = async () => {
    const counts = await cluster.pg.psql(
      ["cluster_messages", "cluster_replies", "agent_loop_turn_claims", "agent_loop_turn_commits", "agent_loop_request_nonces", "agent_loop_send_backlogs", "agent_loop_request_fates"]
        .map((table) => `SELECT '${table}', count(*) FROM ${table}`).join(" UNION ALL ")
    )
    return Object.fromEntries(counts.split("\n").filter((line) => line !== "").map((line) => {
      const [table, count] = line.split("|")
      return [table!, Number(count)]
    }))
  }

  beforeAll(async () => {
    // with a secret: signed requests leave nonces, which the window sweeps too. The window is what
    // a client has to read its reply: 5 s was too short on a loaded machine (at about 8 times the
    // cores a few clients read theirs later, the request was stored again, and the runner refused it
    // as answered already); swept every second, so the tests wait little past it
    cluster = await startCluster(1, undefined, { store: "sql", retentionMs: 15_000, retentionIntervalMs: 1000, secret: SECRET })
    runtime = ManagedRuntime.make(cluster.client({}, { secret: Redacted.make(SECRET) }))
  }, 120_000)

  afterAll(async () => {
    await runtime?.dispose()
    await cluster?.close()
  })

  /** The session's messages as `role:text` lines (its other records, such as turn outcomes, aside), read straight from Postgres. */
  const storedLog = async (sessionKey: string) =>
    (await cluster.pg.psql(
      `SELECT e.entry FROM agent_loop_entries e JOIN agent_loop_sessions s ON s.session_id = e.session_id
       WHERE s.session_key = '${sessionKey}' ORDER BY e.seq`
    )).split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as Message.Message)
      .filter((entry) => ["user", "assistant", "tool"].includes(entry.role))
      .map((entry) => `${entry.role}:${Message.textOf(entry.content)}`)
  const lines = (messages: ReadonlyArray<Message.Message>) => messages.map((m) => `${m.role}:${Message.textOf(m.content)}`)

  it("a reply holds no copy of the turn's messages; the client reads them from the log, also after the retention window", async () => {
    const key = "no-copy"
    const marker = "only-the-log-keeps-this"
    const first = await runtime.runPromise(Effect.gen(function*() {
      return yield* (yield* AgentLoop).turn(key, `${marker} one`)
    }))
    expect(first.status).toBe("completed")
    expect(lines(first.messages)).toEqual([`user:${marker} one`, `assistant:seen 1: ${marker} one`])
    expect(first.finalMessage).toEqual(first.messages[1])
    expect(lines(first.messages)).toEqual(await storedLog(key))
    // the turn's persisted reply is there (the window has not passed), without the turn's text
    const replies = (await cluster.pg.psql("SELECT payload FROM cluster_replies")).split("\n").filter((row) => row.includes(first.turnId))
    expect(replies.length).toBeGreaterThan(0)
    expect(replies.filter((row) => row.includes(marker))).toEqual([])

    // a reply read once the window swept its commit record and the reply itself: where it points is the log's own positions
    const reply = await runtime.runPromise(Effect.gen(function*() {
      const request = yield* Auth.signRequest(Redacted.make(SECRET), "Turn", key, { input: `${marker} two` })
      return yield* (yield* AgentLoopCluster.AgentSession.client)(key).Turn(request)
    }))
    expect([reply.result.status, reply.result.messages, reply.result.finalMessage]).toEqual(["completed", [], undefined])
    expect(reply.log).toBeDefined()
    await waitUntil("the turns' bookkeeping to be swept", async () => Object.values(await bookkeeping()).every((n) => n === 0), 60_000)
    const restored = await Effect.runPromise(
      Effect.gen(function*() {
        return yield* ReplyLog.restore((yield* SqlClient.SqlClient).withoutTransforms(), reply.result, reply.log!)
      }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(cluster.pg.url()) })), Effect.scoped)
    )
    expect(lines(restored.messages)).toEqual([`user:${marker} two`, `assistant:seen 3: ${marker} one | ${marker} two`])
    expect(restored.finalMessage).toEqual(restored.messages[1])
    expect(lines([...first.messages, ...restored.messages])).toEqual(await storedLog(key))
  }, 120_000)

  it("a routed request's replies (send) hold no copy of their turns' messages either, a follow-up's neither; the client's outbound has them", async () => {
    const key = "no-copy-send"
    const replies = await runtime.runPromise(Effect.scoped(Effect.gen(function*() {
      const loop = yield* AgentLoop
      const subscription = yield* loop.subscribe({ capacity: 1000 })
      const outbound = yield* Effect.forkScoped(Stream.runCollect(Stream.take(loop.outbound, 2)))
      // a first answer 5 s late: time enough, on a loaded machine, to queue a follow-up while it runs
      yield* loop.send({ sessionKey: key, content: "wait 5000 first" })
      // while the first turn waits for its slow answer, a follow-up: the same request runs it next
      let event = yield* subscription.take
      while (!(event._tag === "LLMRequest" && event.sessionKey === key)) event = yield* subscription.take
      yield* loop.injectFollowUp(key, "second")
      return yield* Fiber.join(outbound)
    })))
    expect(replies.map((reply) => [reply.status, reply.content])).toEqual([["completed", "waited 5000: wait 5000 first"], ["completed", "seen 3: wait 5000 first | second"]])
    expect(lines(replies.flatMap((reply) => reply.result.messages))).toEqual(await storedLog(key))
    expect(replies.map((reply) => reply.result.finalMessage)).toEqual(replies.map((reply) => reply.result.messages.at(-1)))
    // the persisted replies (within the window) name where the messages are instead of holding them
    const rows = (await cluster.pg.psql("SELECT payload FROM cluster_replies")).split("\n").filter((row) => replies.some((reply) => row.includes(reply.turnId)))
    expect(rows.length).toBeGreaterThan(0)
    const persisted = rows.flatMap((row) => JSON.parse(row) as ReadonlyArray<{ readonly _tag: string; readonly outbound?: { readonly result: { readonly messages: ReadonlyArray<unknown> } }; readonly log?: unknown }>)
      .filter((chunk) => chunk._tag === "Replied")
    expect(persisted).toHaveLength(2)
    expect(persisted.map((chunk) => [chunk.outbound!.result.messages, chunk.log !== undefined])).toEqual([[[], true], [[], true]])
  }, 120_000)

  it("no turn is aborted, histories are whole, and the bookkeeping is swept once the turns are answered", async () => {
    const started = Date.now()
    const results = await runtime.runPromise(Effect.gen(function*() {
      const loop = yield* AgentLoop
      return yield* Effect.forEach(
        Array.from({ length: SESSIONS }, (_, i) => `load-${i}`),
        (key) => Effect.forEach(Array.from({ length: TURNS }, (_, t) => `wait 200 ${key} t${t}`), (input) => loop.turn(key, input)),
        { concurrency: "unbounded" }
      )
    }))
    const seconds = (Date.now() - started) / 1000
    const statuses = results.flat().reduce<Record<string, number>>((acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }), {})
    console.log(`${SESSIONS * TURNS} turns in ${seconds.toFixed(1)} s: ${JSON.stringify(statuses)}; rows right after: ${JSON.stringify(await bookkeeping())}`)
    expect(statuses).toEqual({ completed: SESSIONS * TURNS })
    for (const [i, session] of results.entries()) {
      const last = session.at(-1)!
      expect(last.finalMessage?.content).toBe(
        `waited 200: ${Array.from({ length: TURNS }, (_, t) => `wait 200 load-${i} t${t}`).join(" | ")}`
      )
    }
    const rows = await cluster.pg.psql(
      "SELECT count(*) FROM agent_loop_entries e JOIN agent_loop_sessions s ON s.session_id = e.session_id WHERE s.session_key LIKE 'load-%' AND e.entry::jsonb->>'role' IN ('user', 'assistant')"
    )
    expect(Number(rows)).toBe(SESSIONS * TURNS * 2)
    // nothing in flight: past the window, nothing of the turns is left but their logs
    await waitUntil("the bookkeeping to be swept", async () => Object.values(await bookkeeping()).every((n) => n === 0), 60_000)
    expect(cluster.runners[0]!.ends().filter((end) => end.status !== "completed")).toEqual([])
  }, 300_000)
})
