/**
 * A lost request's outcome rebuilt from the session log (`outcome.ts`, internal): committed entries
 * ending on a final answer are a completed turn with that answer; ending on a partial answer or an
 * unanswered tool call, a failed one that keeps what it completed; no commit, aborted with nothing.
 */
import { describe, expect, it } from "vitest"
import { Message } from "effect-agent-loop"
import * as Outcome from "../../src/cluster/outcome.ts"

describe("a lost request's outcome from the log", () => {
  it("a commit ending on a final answer is a completed turn with that answer; compaction records are not messages", () => {
    const entries = [
      Message.user("list files"),
      Message.assistant("", [{ id: "c1", name: "list_dir", arguments: "{}" }]),
      Message.toolResult({ id: "c1", name: "list_dir" }, "a.txt"),
      Message.assistant("One file: a.txt"),
      { role: "compaction" as const, reason: "overflow" as const, cut: 1 }
    ]
    const result = Outcome.committed("r1", { sessionKey: "s", entries })
    expect(result).toMatchObject({ sessionKey: "s", status: "completed", iterations: 2, finalMessage: Message.assistant("One file: a.txt") })
    expect(result.messages).toEqual(entries.slice(0, 4))
    expect(result.error).toBeUndefined()
  })

  it("a commit ending on a partial answer or a tool call is a failed turn that keeps what it completed", () => {
    const partial = Outcome.committed("r2", { sessionKey: "s", entries: [Message.user("hi"), Message.assistant("half", [], { partial: true })] })
    expect([partial.status, partial.finalMessage, partial.error]).toEqual(["failed", undefined, Outcome.FAILED_ELSEWHERE])
    expect(partial.messages).toHaveLength(2)
    const calling = Outcome.committed("r3", {
      sessionKey: "s",
      entries: [Message.user("hi"), Message.assistant("", [{ id: "c1", name: "exec", arguments: "{}" }])]
    })
    expect(calling.status).toBe("failed")
  })

  it("no commit: aborted, nothing saved", () => {
    expect(Outcome.aborted("r4", "s")).toMatchObject({ status: "aborted", messages: [], error: Outcome.LOST_TURN_ERROR })
  })
})
