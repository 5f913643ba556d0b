/**
 * Where a timeline's calls are in the log (for their details) and how each tool call of a page of
 * the log ran (for pairing a result with its call): from recorded events, and from the log alone.
 */
import { describe, expect, it } from "vitest"
import { AgentEvent, Message } from "effect-agent-loop"
import type { SessionLog } from "effect-agent-loop"
import * as Calls from "../../src/inspector/calls.ts"
import * as Model from "../../src/inspector/model.ts"

const place = (turnId: string, iteration = 1, depth = 0) => ({ turnId, sessionKey: "s", iteration, depth })
const usage = { inputTokens: 10, outputTokens: 2 }
const call = { id: "c1", name: "subagent", arguments: "{\"task\":\"x\"}" }

// an earlier turn answered "ok" too: the match must not stop at it
const log: Array<SessionLog.SessionEntry> = [
  Message.user("before"),
  Message.assistant("ok"),
  Message.user("go"),
  Message.assistant("", [call]),
  Message.toolResult(call, "3 files"),
  Message.assistant("ok")
]
const events: Array<AgentEvent.AgentEvent> = [
  AgentEvent.make("TurnStart", place("t", 0), 0, { input: "go" }),
  AgentEvent.make("LLMRequest", place("t", 1), 1, { model: "m", messageCount: 3, toolCount: 1 }),
  AgentEvent.make("LLMResponse", place("t", 1), 5, { model: "m", content: "", toolCalls: [call], finishReason: "tool_calls", usage, durationMs: 4 }),
  AgentEvent.make("ToolExecStart", place("t", 1), 6, { toolCallId: "c1", toolName: "subagent", arguments: call.arguments }),
  AgentEvent.make("SubTurnSpawn", place("t", 1), 7, { childTurnId: "child", model: "m", async: false, critical: false }),
  AgentEvent.make("TurnStart", place("child", 0, 1), 7, { input: "x" }),
  AgentEvent.make("TurnEnd", place("child", 1, 1), 9, { status: "completed", iterations: 1, durationMs: 2, usage }),
  AgentEvent.make("ToolExecEnd", place("t", 1), 10, { toolCallId: "c1", toolName: "subagent", durationMs: 4, isError: false, result: "3 files" }),
  AgentEvent.make("LLMRequest", place("t", 2), 11, { model: "m", messageCount: 5, toolCount: 1 }),
  AgentEvent.make("LLMResponse", place("t", 2), 15, { model: "m", content: "ok", toolCalls: [], finishReason: "stop", usage, durationMs: 4 }),
  AgentEvent.make("TurnEnd", place("t", 2), 16, { status: "completed", iterations: 2, durationMs: 16, usage })
]

describe("calls in the log", () => {
  it("a recorded turn's model calls find their replies (by tool call ids, or by text after the previous one) and its tool call its result", () => {
    const byTurn = Model.groupByTurn(events)
    const rows = Calls.locate(Model.timelineOfEvents("t", byTurn)!, log).rows
    const own = rows.filter((r) => r.turnId === "t" && r.kind !== "turn")
    expect(own.map((r) => [r.kind, r.logIndex, r.callIndex])).toEqual([["model", 3, undefined], ["tool", 4, 3], ["model", 5, undefined]])
    // the sub-turn's rows are not in this session's log
    expect(rows.filter((r) => r.turnId === "child").every((r) => r.logIndex === undefined)).toBe(true)
  })

  it("a reply with the same text as an earlier turn's is found after its own turn's prompt", () => {
    const twice: Array<SessionLog.SessionEntry> = [Message.user("first"), Message.assistant("same"), Message.user("second"), Message.assistant("same")]
    const turn = [
      AgentEvent.make("TurnStart", place("u", 0), 0, { input: "second" }),
      AgentEvent.make("LLMRequest", place("u", 1), 1, { model: "m", messageCount: 3, toolCount: 0 }),
      AgentEvent.make("LLMResponse", place("u", 1), 2, { model: "m", content: "same", toolCalls: [], finishReason: "stop", usage, durationMs: 1 }),
      AgentEvent.make("TurnEnd", place("u", 1), 3, { status: "completed", iterations: 1, durationMs: 3, usage })
    ]
    const rows = Calls.locate(Model.timelineOfEvents("u", Model.groupByTurn(turn))!, twice).rows
    expect(rows.find((r) => r.kind === "model")!.logIndex).toBe(3)
  })

  it("a page's tool calls and results are paired, with their run from the events and the sub-turn they spawned", () => {
    const byTurn = Model.groupByTurn(events)
    // the page holds the result only: its call is on the page before
    expect(Calls.callsOn(log, 4, 6, byTurn, "s")).toEqual({
      c1: { name: "subagent", callIndex: 3, resultIndex: 4, isError: false, turnId: "t", rowId: "t/tc1", durationMs: 4, subTurnId: "child" }
    })
  })

  it("without events, a tool call points at the bar of its log turn", () => {
    expect(Calls.callsOn(log, 0, 6, new Map(), "s")).toEqual({
      c1: { name: "subagent", callIndex: 3, resultIndex: 4, isError: false, turnId: "log-2", rowId: "log-2/tc1" }
    })
    const timeline = Model.timelineOfLog("s", log, 2)!
    expect(timeline.rows.find((r) => r.id === "log-2/tc1")).toMatchObject({ callId: "c1", callIndex: 3, logIndex: 4 })
  })
})
