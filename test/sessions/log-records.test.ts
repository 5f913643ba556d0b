/**
 * The session log's turn-outcome and rewind records: `view` skips outcomes and folds rewinds (also
 * with compaction records around them), nothing is deleted, `describe` reports the last status,
 * `rewindTo` refuses what the view does not hold, and logs written before the records read as before.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { InvalidRewind, Message, rewindSession, SessionLog, SessionStore, SessionStoreMemory } from "effect-agent-loop"

const outcome = (turnId: string, status: SessionLog.TurnOutcome["status"], extra: Partial<SessionLog.TurnOutcome> = {}): SessionLog.TurnOutcome => ({
  role: "outcome",
  turnId,
  status,
  startedAt: 1,
  endedAt: 2,
  iterations: 1,
  usage: { inputTokens: 10, outputTokens: 5 },
  ...extra
})

const u = Message.user
/** The record `rewindTo` made, or `undefined` when it refused. */
const ok = (result: ReturnType<typeof SessionLog.rewindTo>) => result._tag === "Success" ? result.success : undefined
const a = (text: string) => Message.assistant(text)

describe("turn-outcome records", () => {
  it("are skipped by the view and reported by describe", () => {
    const log: ReadonlyArray<SessionLog.SessionEntry> = [
      u("u1"), a("a1"), outcome("t1", "completed"),
      outcome("t2", "failed", { error: { _tag: "ProviderRejected", message: "400: bad request" } })
    ]
    expect(SessionLog.view(log)).toEqual([u("u1"), a("a1")])
    expect(SessionLog.describe(log)).toEqual({ messages: 2, turns: 1, preview: "u1", status: "failed" })
    expect(SessionLog.outcomes(log).map((o) => o.turnId)).toEqual(["t1", "t2"])
  })

  it("end a turn's row for describe: a failed turn that kept only its input counts as a turn of its own", () => {
    const log: ReadonlyArray<SessionLog.SessionEntry> = [u("u1"), outcome("t1", "failed"), u("u2"), a("a2"), outcome("t2", "completed")]
    expect(SessionLog.describe(log)).toEqual({ messages: 3, turns: 2, preview: "u1", status: "completed" })
  })

  it("round-trip through the entry Schema; logs without them decode and describe as before", () => {
    const json = Schema.fromJsonString(SessionLog.SessionEntry)
    const record = outcome("t", "failed", { model: "m", error: { _tag: "RateLimited", message: "429" }, usage: { inputTokens: 1, outputTokens: 2, costUsd: 0.5 } })
    expect(Schema.decodeUnknownSync(json)(Schema.encodeSync(json)(record))).toEqual(record)
    const old = ['{"role":"user","content":"u1"}', '{"role":"assistant","content":"a1"}', '{"role":"compaction","reason":"budget","cut":1}']
      .map((line) => Schema.decodeUnknownSync(json)(line))
    expect(SessionLog.view(old)).toEqual([a("a1")])
    expect(SessionLog.describe(old)).toEqual({ messages: 2, turns: 1, preview: "u1" })
  })
})

describe("rewind records", () => {
  const log: ReadonlyArray<SessionLog.SessionEntry> = [u("u1"), a("a1"), u("u2"), a("a2"), u("u3"), a("a3")]

  it("make the view continue from before the chosen user message; the branch stays in the log", () => {
    const rewound = [...log, { role: "rewind", cut: 2 } as const, u("u2'"), a("a2'")]
    expect(SessionLog.view(rewound)).toEqual([u("u1"), a("a1"), u("u2'"), a("a2'")])
    // nothing is deleted: the abandoned branch is counted among the stored messages
    expect(SessionLog.describe(rewound).messages).toBe(8)
  })

  it("rewindTo indexes the user messages of the current view and refuses others", () => {
    expect(ok(SessionLog.rewindTo(log, 0))).toEqual({ role: "rewind", cut: 0 })
    const second = ok(SessionLog.rewindTo(log, 1, 7))
    expect(second).toEqual({ role: "rewind", cut: 2, at: 7 })
    expect(SessionLog.view([...log, second!])).toEqual([u("u1"), a("a1")])
    const none = SessionLog.rewindTo(log, 3)
    expect(none._tag).toBe("Failure")
  })

  it("fold with compaction records before and after them", () => {
    // compaction first: the view is [u2 a2 u3 a3]; rewinding to its 2nd user message (u3) keeps [u2 a2]
    const compacted = [...log, { role: "compaction", reason: "budget", cut: 2 } as const]
    expect(ok(SessionLog.rewindTo(compacted, 1))).toEqual({ role: "rewind", cut: 2 })
    const after = [...compacted, { role: "rewind", cut: 2 } as const, u("u3'")]
    expect(SessionLog.view(after)).toEqual([u("u2"), a("a2"), u("u3'")])
    // then a compaction indexing the rewound view
    const again = [...after, a("a3'"), { role: "compaction", reason: "overflow", cut: 2 } as const]
    expect(SessionLog.view(again)).toEqual([u("u3'"), a("a3'")])
    // a summary before a rewind: the summary message is part of the view, and kept
    const summarized = [...log, { role: "compaction", reason: "summary", cut: 4, summary: "s" } as const, { role: "rewind", cut: 1 } as const]
    expect(SessionLog.view(summarized)).toEqual([Message.system(`${SessionLog.SUMMARY_PREFIX}\ns`)])
  })

  it("rewinding into a tool exchange keeps it closed (repaired)", () => {
    const call = { id: "c1", name: "read_file", arguments: "{}" }
    const torn = [u("u1"), Message.assistant("", [call]), u("u2"), { role: "rewind", cut: 2 } as const]
    const view = SessionLog.view(torn)
    expect(view.map((m) => m.role)).toEqual(["user", "assistant", "tool"])
  })

  it("rebase treats a rewind like a compaction: kept within the base, dropped after a foreign record", () => {
    const batch = [{ role: "rewind", cut: 5 } as const]
    expect(SessionLog.rebase(batch, 3, [u("x")])).toEqual([{ role: "rewind", cut: 3 }])
    expect(SessionLog.rebase(batch, 3, [{ role: "compaction", reason: "budget", cut: 1 }])).toEqual([])
  })

  it.effect("rewindSession appends the record, or fails with InvalidRewind appending nothing", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      yield* store.append("s", log)
      const record = yield* rewindSession("s", 2)
      expect(record.cut).toBe(4)
      expect(yield* store.load("s")).toEqual(log.slice(0, 4))
      const failed = yield* Effect.flip(rewindSession("s", 5))
      expect(failed).toBeInstanceOf(InvalidRewind)
      expect(failed.message).toContain("holds 2 user messages")
      expect((yield* store.log("s")).length).toBe(7)
    }).pipe(Effect.provide(SessionStoreMemory.layer())))
})
