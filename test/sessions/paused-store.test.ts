/**
 * The SQL store keeps turns paused on a call waiting for approval (`SessionStore.paused`), on
 * SQLite and on a real Postgres (skipped, saying why, where Postgres is not installed): a call kept
 * with its turn's checkpoint, its decision and its turn's progress replaced beside it, listed
 * oldest first across sessions, forgotten when its turn ends and with its session; a row that does
 * not decode is left out; a store opened again reads what was kept.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Checkpoint, Message } from "effect-agent-loop"
import { type PostgresServer, postgresProbe, postgresSuite, startPostgres } from "../support/postgres.ts"
import { type Backend, openSql, openStore, postgres, sqlite } from "../support/sqlBackends.ts"

const checkpoint = (turnId: string, results = 0, iteration = 1): Checkpoint.TurnCheckpoint => ({
  _tag: "TurnCheckpoint",
  turnId,
  iteration,
  historyLength: 0,
  usage: { inputTokens: 1, outputTokens: 2 },
  produced: [Message.user(`run ${turnId}`)],
  stopBlocks: 0,
  results: Array.from({ length: results }, (_, i) => ({ role: "tool" as const, toolCallId: `c${i}`, toolName: "exec", content: "ok" })),
  started: []
})

const call = (id: string, sessionKey: string, turnId: string, at: number): typeof Checkpoint.PausedCall.Type => ({
  approval: { id, sessionKey, turnId, toolCallId: `call-${id}`, toolName: "exec", arguments: { command: "echo hi" }, requestedAt: at, status: "pending" },
  checkpoint: checkpoint(turnId, at % 2)
})

const contract = (backend: Backend) => {
  it.effect("keeps, decides, follows the turn's progress, lists, forgets, and goes with the session", () =>
    Effect.scoped(Effect.gen(function*() {
      const db = yield* backend.fresh
      const store = yield* openStore(db)
      const paused = store.paused!
      expect(yield* paused.list).toEqual([])
      const [a, b, c] = [call("a", "s", "t1", 20), call("b", "s", "t1", 10), call("c", "other", "t2", 30)]
      yield* paused.put(a)
      yield* paused.put(b)
      yield* paused.put(c)
      // put again under the same id: replaced, not doubled
      yield* paused.put(a)
      expect(yield* paused.list).toEqual([b, a, c])
      const decided = { ...a.approval, status: "allow" as const, reason: "fine" }
      yield* paused.decide(decided)
      // a decision on a call not kept changes nothing
      yield* paused.decide({ ...a.approval, id: "unknown", status: "deny" })
      expect(yield* paused.list).toEqual([b, { ...a, approval: decided }, c])
      // the turn went on: every kept call of the turn has its latest checkpoint, other turns' are left
      const later = checkpoint("t1", 3, 2)
      yield* paused.progress("s", later)
      expect(yield* paused.list).toEqual([{ ...b, checkpoint: later }, { approval: decided, checkpoint: later }, c])
      // a session's paused calls are not a session of their own
      expect((yield* store.list).map((info) => info.sessionKey)).toEqual([])
      yield* paused.forget("s", "t1")
      expect(yield* paused.list).toEqual([c])
      yield* store.append("other", [Message.user("u")])
      yield* store.remove("other")
      expect(yield* paused.list).toEqual([])
    })))

  it.effect("leaves out a row that does not decode, and a store opened again reads what was kept", () =>
    Effect.scoped(Effect.gen(function*() {
      const db = yield* backend.fresh
      const first = yield* openStore(db)
      yield* first.paused!.put(call("a", "s", "t1", 1))
      const sql = yield* openSql(db)
      yield* sql`INSERT INTO agent_loop_paused_calls (approval_id, session_id, turn_id, approval, checkpoint, paused_at) VALUES ('x', 'y', 'z', '{"not":"an approval"}', '{}', 2)`
      const again = yield* openStore(db)
      expect(yield* again.paused!.list).toEqual([call("a", "s", "t1", 1)])
    })))
}

describe("paused turns in the SQL store on SQLite", () => contract(sqlite))

describe.skipIf(!postgresProbe.ok)(postgresSuite("paused turns in the SQL store on Postgres"), () => {
  let server: PostgresServer | undefined
  beforeAll(async () => {
    server = await startPostgres()
  }, 120_000)
  afterAll(() => server?.stop())
  contract(postgres(() => server!))
})
