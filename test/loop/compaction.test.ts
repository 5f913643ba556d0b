import { describe, expect, it } from "@effect/vitest"
import { Message } from "effect-agent-loop"
import { dropOldestHalf, fitToBudget, fitToCount, splitForSummary } from "../../src/programs/internal/compaction.ts"

/**
 * A history in short notation: `s` system, `u1` user, `a1` assistant, `c:x,y` an assistant calling
 * `f` with ids x and y, `t:x` the result of call x. Contents are the tokens themselves (runes:
 * `u1` 2, `c:x` 3 per call, `t:x` 2).
 */
const h = (notation: string): ReadonlyArray<Message.Message> =>
  notation.split(" ").filter((t) => t !== "").map((token) => {
    const [kind, ids] = token.split(":")
    if (token === "s") return Message.system("s")
    if (kind === "c") return Message.assistant("", ids!.split(",").map((id) => ({ id, name: "f", arguments: "{}" })))
    if (kind === "t") return Message.toolResult({ id: ids!, name: "f" }, `r${ids}`)
    return token.startsWith("u") ? Message.user(token) : Message.assistant(token)
  })

const show = (messages: ReadonlyArray<Message.Message>) =>
  messages.map((m) =>
    m.role === "system" ? "s" : m.role === "tool" ? `t:${m.toolCallId}` : m.role === "assistant" && m.toolCalls
      ? `c:${m.toolCalls.map((c) => c.id).join(",")}`
      : m.content
  ).join(" ")

describe("compaction", () => {
  it("dropOldestHalf drops whole units from the oldest, past half when a unit straddles it, up to a user message", () => {
    const out = dropOldestHalf(h("s u1 a1 u2 c:x,y t:x t:y a2 u3 a3 u4"))
    expect([show(out.kept), out.dropped, out.droppedAt]).toEqual(["s u3 a3 u4", 7, [1, 2, 3, 4, 5, 6, 7]])
  })

  it("dropOldestHalf never drops the newest user input nor anything after it", () => {
    const out = dropOldestHalf(h("u1 a1 u2 c:x t:x c:y t:y"))
    expect(show(out.kept)).toBe("u2 c:x t:x c:y t:y")
  })

  it("dropOldestHalf keeps a system message in the middle and drops around it", () => {
    const out = dropOldestHalf(h("u1 s a1 u2 a2 u3"))
    expect([show(out.kept), out.droppedAt]).toEqual(["s u2 a2 u3", [0, 2]])
  })

  it("dropOldestHalf drops orphan results at the front as one unit", () => {
    expect(show(dropOldestHalf(h("t:x t:y u1 a1 u2")).kept)).toBe("u1 a1 u2")
  })

  it("dropOldestHalf with nothing droppable changes nothing", () => {
    for (const history of [h(""), h("s u1"), h("s u1 c:x t:x a1")]) {
      const out = dropOldestHalf(history)
      expect([out.kept, out.dropped]).toEqual([history, 0])
    }
  })

  it("dropOldestHalf without any user message protects only system messages", () => {
    expect(show(dropOldestHalf(h("s a1 a2 c:x t:x")).kept)).toBe("s c:x t:x")
  })

  it("fitToBudget drops the oldest units until the runes fit, never half a call", () => {
    const history = h("s u1 a1 c:x t:x u2")
    expect(fitToBudget(history, 12).kept).toBe(history)
    expect(show(fitToBudget(history, 11).kept)).toBe("s u2")
    const twoTurns = h("s u1 a1 u3 c:x t:x u2")
    expect(show(fitToBudget(twoTurns, 11).kept)).toBe("s u3 c:x t:x u2")
    const tight = fitToBudget(history, 6)
    expect([show(tight.kept), tight.dropped]).toEqual(["s u2", 4])
    expect(show(fitToBudget(history, 0).kept)).toBe("s u2")
  })

  it("fitToCount drops whole units, so it may end below the count", () => {
    const history = h("s u1 a1 c:x,y t:x t:y u2")
    expect(fitToCount(history, 7).kept).toBe(history)
    expect(show(fitToCount(history, 6).kept)).toBe("s u2")
    expect(show(fitToCount(h("s u1 a1 u3 a3 u2"), 5).kept)).toBe("s u3 a3 u2")
    expect(show(fitToCount(history, 4).kept)).toBe("s u2")
  })

  it("splitForSummary keeps at least `keep` messages and never separates a call from its results", () => {
    const history = h("u1 a1 c:x,y t:x t:y a2")
    const split = (keep: number) => {
      const { newer, older } = splitForSummary(history, keep)
      return [show(older), show(newer)]
    }
    expect(split(3)).toEqual(["u1 a1", "c:x,y t:x t:y a2"])
    expect(split(1)).toEqual(["u1 a1 c:x,y t:x t:y", "a2"])
    expect(split(6)).toEqual(["", "u1 a1 c:x,y t:x t:y a2"])
    expect(split(50)).toEqual(["", "u1 a1 c:x,y t:x t:y a2"])
    const { newer, older } = splitForSummary(h("c:x t:x"), 1)
    expect([older, show(newer)]).toEqual([[], "c:x t:x"])
  })
})
