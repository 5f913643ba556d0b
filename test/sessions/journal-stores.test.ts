/**
 * Every built-in store keeps a session's event journal beside its log: appended and read after
 * any seq, its last seq known, removed with the session, invisible to listings; SQL databases
 * from before the journal gain its table when opened, their logs read as before.
 */
import { describe, expect, it } from "@effect/vitest"
import { NodeServices } from "@effect/platform-node"
import { Effect, type Scope } from "effect"
import * as NodeFs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { AgentEvent, Message, type SessionStoreShape, SessionStoreJsonl, SessionStoreMemory } from "effect-agent-loop"
import { fileName } from "../../src/layers/internal/sessionStoreJsonlNames.ts"
import { openSql, openStore, sqlite } from "../support/sqlBackends.ts"

const journaled = (seq: number): AgentEvent.JournaledEvent => ({
  seq,
  event: AgentEvent.make("LLMDelta", { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }, seq, { kind: "text", text: `d${seq} "quoted"\n` })
})

const tempDir = Effect.acquireRelease(
  Effect.sync(() => NodeFs.mkdtempSync(NodePath.join(os.tmpdir(), "journal-"))),
  (dir) => Effect.sync(() => NodeFs.rmSync(dir, { recursive: true, force: true }))
)

const stores: ReadonlyArray<readonly [string, Effect.Effect<SessionStoreShape, unknown, Scope.Scope>]> = [
  ["memory", SessionStoreMemory.make()],
  ["JSON Lines", Effect.flatMap(tempDir, (dir) => SessionStoreJsonl.make(dir).pipe(Effect.provide(NodeServices.layer)))],
  ["SQLite", Effect.flatMap(sqlite.fresh, (db) => openStore(db))]
]

describe.each(stores)("the %s store's event journal", (_, open) => {
  it.effect("appends, reads after any seq (with a limit), knows its last seq, and goes with the session", () =>
    Effect.scoped(Effect.gen(function*() {
      const store = yield* open
      const journal = store.journal!
      expect(yield* journal.last("s")).toBe(0)
      expect(yield* journal.read("s", 0)).toEqual([])
      yield* store.append("s", [Message.user("u")])
      yield* journal.append("s", [1, 2, 3].map(journaled))
      yield* journal.append("s", [])
      yield* journal.append("s", [4, 5].map(journaled))
      yield* journal.append("other", [1].map(journaled))
      expect(yield* journal.read("s", 0)).toEqual([1, 2, 3, 4, 5].map(journaled))
      expect(yield* journal.read("s", 3)).toEqual([4, 5].map(journaled))
      expect(yield* journal.read("s", 1, 2)).toEqual([2, 3].map(journaled))
      expect(yield* journal.read("s", 5)).toEqual([])
      expect(yield* journal.last("s")).toBe(5)
      // the journal is not a session of its own
      expect((yield* store.list).map((info) => info.sessionKey)).toEqual(["s"])
      yield* store.remove("s")
      expect(yield* journal.last("s")).toBe(0)
      expect(yield* journal.read("s", 0)).toEqual([])
      expect(yield* journal.last("other")).toBe(1)
    })))
})

describe("journal files and tables", () => {
  it.effect("memory: the journal keeps the newest events of a session, between its capacity and twice that", () =>
    Effect.gen(function*() {
      const store = yield* SessionStoreMemory.make({}, { journalCapacity: 3 })
      for (let seq = 1; seq <= 10; seq++) yield* store.journal!.append("s", [journaled(seq)])
      const kept = (yield* store.journal!.read("s", 0)).map((e) => e.seq)
      expect(kept.at(-1)).toBe(10)
      expect(kept.length).toBeGreaterThanOrEqual(3)
      expect(kept.length).toBeLessThanOrEqual(6)
      expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => 11 - kept.length + i))
      expect((yield* store.journal!.read("s", 8)).map((e) => e.seq)).toEqual([9, 10])
      expect(yield* store.journal!.last("s")).toBe(10)
    }))

  it.effect("JSON Lines: a torn last line is skipped when read, and the next append starts a new line", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const store = yield* SessionStoreJsonl.make(dir).pipe(Effect.provide(NodeServices.layer))
      yield* store.journal!.append("s", [1, 2].map(journaled))
      const file = NodePath.join(dir, fileName("s").replace(/\.jsonl$/, ".events.jsonl"))
      NodeFs.appendFileSync(file, `{"seq":3,"event":{"_ta`)
      expect(yield* store.journal!.last("s")).toBe(2)
      expect(yield* store.journal!.read("s", 1)).toEqual([journaled(2)])
      yield* store.journal!.append("s", [journaled(3)])
      expect(yield* store.journal!.read("s", 0)).toEqual([1, 2, 3].map(journaled))
      expect((NodeFs.statSync(file).mode & 0o777).toString(8)).toBe("600")
    })))

  it.effect("SQLite: a database from before the journal gains its table on open; its sessions read as before", () =>
    Effect.scoped(Effect.gen(function*() {
      const db = yield* sqlite.fresh
      const first = yield* openStore(db)
      yield* first.append("old", [Message.user("u"), Message.assistant("a")])
      // back to the schema of before: no journal table nor what came after it, their migrations not recorded
      const sql = yield* openSql(db)
      yield* sql`DROP TABLE agent_loop_events`
      yield* sql`DROP TABLE agent_loop_paused_calls`
      yield* sql`ALTER TABLE agent_loop_sessions DROP COLUMN last_append`
      yield* sql`DELETE FROM agent_loop_migrations WHERE migration_id >= 3`
      const reopened = yield* openStore(db)
      expect(yield* reopened.load("old")).toEqual([Message.user("u"), Message.assistant("a")])
      expect(yield* reopened.journal!.last("old")).toBe(0)
      yield* reopened.journal!.append("old", [journaled(1)])
      expect(yield* reopened.journal!.read("old", 0)).toEqual([journaled(1)])
    })))
})
