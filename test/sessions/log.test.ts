/**
 * The session log's fold (DESIGN §8): compaction records, repair of unanswered tool calls,
 * rebasing a writer's records onto another writer's entries, and how `list` describes a log.
 */
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { Message, SessionLog } from "effect-agent-loop"

const call = (id: string) => ({ id, name: "f", arguments: "{}" })
const overflow = (cut: number): SessionLog.Compaction => ({ role: "compaction", reason: "overflow", cut })
const interrupted = (id: string) => Message.toolResult(call(id), SessionLog.INTERRUPTED_RESULT, true)

describe("SessionLog.view", () => {
  it("without records the view is the messages", () => {
    const log = [Message.system("s"), Message.user("u1"), Message.assistant("a1")]
    expect(SessionLog.view(log)).toEqual(log)
    expect(SessionLog.view([])).toEqual([])
  })

  it("overflow and budget keep the system messages before the cut and everything from it", () => {
    const log = [Message.system("s1"), Message.user("u1"), Message.system("s2"), Message.assistant("a1"), Message.user("u2"), Message.assistant("a2")]
    for (const reason of ["overflow", "budget"] as const) {
      expect(SessionLog.view([...log, { role: "compaction", reason, cut: 4 }])).toEqual([
        Message.system("s1"),
        Message.system("s2"),
        Message.user("u2"),
        Message.assistant("a2")
      ])
    }
    expect(SessionLog.view([...log, overflow(0)])).toEqual(log)
    expect(SessionLog.view([...log, overflow(6)])).toEqual([Message.system("s1"), Message.system("s2")])
  })

  it("a cut past the end counts as the end", () => {
    expect(SessionLog.view([Message.system("s"), Message.user("u"), overflow(99)])).toEqual([Message.system("s")])
  })

  it("summary replaces everything before the cut, system messages included, with one system message", () => {
    const log = [Message.system("s"), Message.user("u1"), Message.assistant("a1"), Message.user("u2")]
    expect(SessionLog.view([...log, { role: "compaction", reason: "summary", cut: 3, summary: "they met" }])).toEqual([
      Message.system(`${SessionLog.SUMMARY_PREFIX}\nthey met`),
      Message.user("u2")
    ])
  })

  it("each record indexes the view folded up to it, and messages after it follow", () => {
    const log: ReadonlyArray<SessionLog.SessionEntry> = [
      Message.user("u1"),
      Message.assistant("a1"),
      Message.user("u2"),
      overflow(2), // view: u2
      Message.assistant("a2"),
      Message.user("u3"),
      { role: "compaction", reason: "summary", cut: 2, summary: "u2 and a2" }, // view: summary, u3
      Message.assistant("a3")
    ]
    expect(SessionLog.view(log)).toEqual([Message.system(`${SessionLog.SUMMARY_PREFIX}\nu2 and a2`), Message.user("u3"), Message.assistant("a3")])
  })

  it("repair: a call without a result gets an error result right after the message's existing results", () => {
    const log = [
      Message.user("u"),
      Message.assistant("", [call("x"), call("y"), call("z")]),
      Message.toolResult(call("y"), "ry"),
      Message.user("next")
    ]
    expect(SessionLog.view(log)).toEqual([
      Message.user("u"),
      Message.assistant("", [call("x"), call("y"), call("z")]),
      Message.toolResult(call("y"), "ry"),
      interrupted("x"),
      interrupted("z"),
      Message.user("next")
    ])
  })

  it("repair: a torn log ending right after the call; complete calls and results from other messages do not count", () => {
    expect(SessionLog.view([Message.user("u"), Message.assistant("", [call("x")])])).toEqual([
      Message.user("u"),
      Message.assistant("", [call("x")]),
      interrupted("x")
    ])
    // a stray result with the same id before the call does not answer it
    expect(SessionLog.view([Message.toolResult(call("x"), "stale"), Message.assistant("", [call("x")]), Message.assistant("a")])).toEqual([
      Message.toolResult(call("x"), "stale"),
      Message.assistant("", [call("x")]),
      interrupted("x"),
      Message.assistant("a")
    ])
    const whole = [Message.assistant("", [call("x")]), Message.toolResult(call("x"), "r"), Message.assistant("done")]
    expect(SessionLog.view(whole)).toEqual(whole)
  })

  it("a record's cut counts the repaired results before it", () => {
    const log = [Message.user("u1"), Message.assistant("", [call("x")]), Message.user("u2"), Message.assistant("a2"), overflow(3)]
    // view before the record: u1, call x, (interrupted x), u2, a2 — the cut at 3 starts at u2
    expect(SessionLog.view(log)).toEqual([Message.user("u2"), Message.assistant("a2")])
  })

  it("the log's entries round-trip through their Schema, compaction records included", () => {
    const log: ReadonlyArray<SessionLog.SessionEntry> = [
      Message.user("u"),
      Message.assistant("", [call("x")], { reasoning: "r" }),
      Message.toolResult(call("x"), "r", true),
      overflow(1),
      { role: "compaction", reason: "summary", cut: 0, summary: "s" }
    ]
    const codec = Schema.Array(SessionLog.SessionEntry)
    expect(Schema.decodeUnknownSync(codec)(Schema.encodeSync(codec)(log))).toEqual(log)
    expect(() => Schema.decodeUnknownSync(SessionLog.SessionEntry)({ role: "compaction", reason: "overflow", cut: -1 })).toThrow()
    expect(() => Schema.decodeUnknownSync(SessionLog.SessionEntry)({ role: "compaction", reason: "whim", cut: 1 })).toThrow()
  })
})

describe("SessionLog.rebase", () => {
  const batch = [Message.user("mine"), Message.assistant("reply"), overflow(5)]

  it("nothing foreign, or no record: the entries themselves", () => {
    expect(SessionLog.rebase(batch, 4, [])).toBe(batch)
    const plain = [Message.user("mine")]
    expect(SessionLog.rebase(plain, undefined, [overflow(1)])).toBe(plain)
  })

  it("foreign messages: the cut stays within the base, so they stay in the view", () => {
    expect(SessionLog.rebase(batch, 8, [Message.user("theirs")])).toEqual(batch)
    expect(SessionLog.rebase(batch, 3, [Message.user("theirs")])).toEqual([...batch.slice(0, 2), overflow(3)])
    expect(SessionLog.rebase([...batch, overflow(1)], 8, [Message.user("theirs")])).toEqual(batch)
  })

  it("a foreign record or an unknown base drops the batch's records, never a message", () => {
    expect(SessionLog.rebase(batch, 8, [Message.user("theirs"), overflow(1)])).toEqual(batch.slice(0, 2))
    expect(SessionLog.rebase(batch, undefined, [])).toEqual(batch.slice(0, 2))
  })
})

describe("SessionLog.describe", () => {
  it("counts messages, not records, and previews the first user message on one line", () => {
    expect(SessionLog.describe([])).toEqual({ messages: 0, turns: 0 })
    const long = `first\n\tquestion ${"x".repeat(200)}`
    const described = SessionLog.describe([Message.system("s"), Message.user(long), Message.assistant("a"), overflow(1), Message.user("later")])
    expect(described.messages).toBe(4)
    expect(described.preview).toHaveLength(120)
    expect(described.preview).toMatch(/^first question x+…$/)
    expect(described.turns).toBe(2)
    expect(described.workspace).toBeUndefined()
  })

  it("context a beforeTurn hook added before the prompt is neither the preview nor a turn of its own", () => {
    const added = Message.user("<user-prompt-submit-hook>\nbranch main\n</user-prompt-submit-hook>")
    const log: ReadonlyArray<SessionLog.SessionEntry> = [
      added,
      { role: "meta", workspace: "/w" },
      Message.user("what changed?"),
      Message.assistant("a"),
      added,
      Message.user("and then?"),
      Message.assistant("b")
    ]
    expect(SessionLog.describe(log)).toEqual({ messages: 6, turns: 2, preview: "what changed?", workspace: "/w" })
  })

  it("a metadata record names the workspace, counts as no message and leaves the view alone", () => {
    const log: ReadonlyArray<SessionLog.SessionEntry> = [
      { role: "meta", workspace: "/home/me/project" },
      Message.user("q"),
      Message.assistant("a"),
      { role: "meta", workspace: "/elsewhere" }
    ]
    expect(SessionLog.describe(log)).toEqual({ messages: 2, turns: 1, preview: "q", workspace: "/home/me/project" })
    expect(SessionLog.view(log)).toEqual([Message.user("q"), Message.assistant("a")])
    expect(SessionLog.view([...log, overflow(1)])).toEqual([Message.assistant("a")])
  })
})
