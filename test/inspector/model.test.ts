/**
 * The inspector's internal pieces: a timeline's marks and waits from events, the recorder's bound
 * on kept turns, and the scrubbing of every string it serves.
 */
import { describe, expect, it } from "vitest"
import { AgentEvent, Message, SessionLog } from "effect-agent-loop"
import * as Model from "../../src/inspector/model.ts"
import { Recorder } from "../../src/inspector/recorder.ts"
import { deepScrub } from "../../src/inspector/scrub.ts"

const place = (turnId: string, iteration = 1) => ({ turnId, sessionKey: "s", iteration, depth: 0 })
const usage = { inputTokens: 10, outputTokens: 2, costUsd: 0.5 }

const turnEvents = (turnId: string): Array<AgentEvent.AgentEvent> => [
  AgentEvent.make("TurnStart", place(turnId, 0), 0, { input: "go" }),
  AgentEvent.make("LLMRequest", place(turnId), 10, { model: "m", messageCount: 1, toolCount: 1 }),
  AgentEvent.make("LLMRetry", place(turnId), 20, { attempt: 1, reason: "rate limited", delayMs: 5 }),
  AgentEvent.make("LLMResponse", place(turnId), 40, { model: "m", content: "", toolCalls: [{ id: "c", name: "exec", arguments: "{}" }], finishReason: "tool_calls", usage, durationMs: 30 }),
  // approved at 90: the tool starts then
  AgentEvent.make("ToolExecStart", place(turnId), 90, { toolCallId: "c", toolName: "exec", arguments: "{}" }),
  AgentEvent.make("InterruptReceived", place(turnId), 95, { kind: "graceful" }),
  AgentEvent.make("ToolExecEnd", place(turnId), 100, { toolCallId: "c", toolName: "exec", durationMs: 10, isError: true, result: "boom" }),
  AgentEvent.make("TurnEnd", place(turnId), 120, { status: "interrupted", iterations: 1, durationMs: 120, usage })
]

describe("timelines from events", () => {
  it("mark retries on their model call and interrupts on the turn, and show the wait before a tool started", () => {
    const timeline = Model.timelineOfEvents("t", Model.groupByTurn(turnEvents("t")))!
    const [turn, model, tool] = timeline.rows
    expect(turn).toMatchObject({ kind: "turn", start: 0, end: 120, status: "interrupted", error: true })
    expect(turn!.marks).toEqual([{ at: 95, kind: "interrupt", label: "interrupt (graceful)" }])
    expect(model).toMatchObject({ kind: "model", start: 10, end: 40, usage })
    expect(model!.marks.map((m) => m.kind)).toEqual(["retry"])
    expect(tool).toMatchObject({ kind: "tool", start: 90, end: 100, waitFrom: 40, error: true, detail: "boom" })
    expect(timeline.context).toEqual([{ iteration: 1, tokens: 10 }])
  })

  it("leaves a running call open", () => {
    const timeline = Model.timelineOfEvents("t", Model.groupByTurn(turnEvents("t").slice(0, 5)))!
    expect(timeline.rows.at(-1)).toMatchObject({ kind: "tool", start: 90 })
    expect(timeline.rows.at(-1)!.end).toBeUndefined()
    expect(timeline.rows[0]!.end).toBeUndefined()
  })
})

describe("the recorder", () => {
  it("keeps the events of at most `turns` turns, forgetting the oldest", () => {
    const recorder = new Recorder({ replay: 100, turns: 2 })
    for (const id of ["a", "b", "c"]) for (const event of turnEvents(id)) recorder.record(event)
    expect([...recorder.byTurn().keys()]).toEqual(["b", "c"])
    expect(recorder.sessionTurns("s").map((t) => t.id)).toEqual(["b", "c"])
    expect(recorder.lastId).toBe(24)
    expect(recorder.since(0).events).toHaveLength(24)
  })

  it("labels a recorded turn as the log labels it: its input on one line, cut; running until its end", () => {
    const recorder = new Recorder({ replay: 100, turns: 10 })
    const input = `count\n  the files ${"x".repeat(100)}`
    recorder.record(AgentEvent.make("TurnStart", place("t", 0), 0, { input }))
    const [turn] = recorder.sessionTurns("s")
    expect(turn).toMatchObject({ id: "t", status: "running", source: "events" })
    expect(turn!.label).toBe(Model.logTurns([{ role: "user", content: input }])[0]!.label)
    expect(turn!.label).toMatch(/^count the files x+…$/)
    expect(turn!.label).toHaveLength(80)
  })
})

describe("deepScrub", () => {
  it("scrubs every string at any depth, keys included, and keeps other values", () => {
    const scrub = (text: string) => text.replaceAll("s3cret-value", "<redacted>")
    expect(deepScrub({ a: ["x s3cret-value", 1, null, { "s3cret-value": true }] }, scrub)).toEqual({ a: ["x <redacted>", 1, null, { "<redacted>": true }] })
  })
})

describe("log turns and their outcome records", () => {
  const call = { id: "c1", name: "read_file", arguments: "{}" }
  const failed: SessionLog.TurnOutcome = {
    role: "outcome", turnId: "t2", status: "failed", model: "m", startedAt: 5, endedAt: 9, iterations: 1,
    usage: { inputTokens: 7, outputTokens: 0, costUsd: 2.05 },
    error: { _tag: "ProviderRejected", message: "ProviderRejected: 400 bad request" }
  }
  const completed: SessionLog.TurnOutcome = { role: "outcome", turnId: "t1", status: "completed", startedAt: 1, endedAt: 4, iterations: 2, usage: { inputTokens: 3, outputTokens: 1 } }
  const log: ReadonlyArray<SessionLog.SessionEntry> = [
    Message.user("first"), Message.assistant("", [call]), Message.toolResult(call, "text"), Message.user("steer"), Message.assistant("done"), completed,
    Message.user("second"), failed,
    Message.user("old-style turn"), Message.assistant("no record"), Message.user("next")
  ]

  it("a turn's status comes from its outcome record; steering stays in its turn; turns without a record have none", () => {
    expect(Model.logTurns(log).map((t) => [t.label, t.status])).toEqual([
      ["first", "completed"], ["steer", "completed"], ["second", "failed"], ["old-style turn", undefined], ["next", undefined]
    ])
  })

  it("a log timeline shows the failed turn's status, error, tokens, cost and model though no event was recorded", () => {
    const timeline = Model.timelineOfLog("s", log, 6)!
    expect(timeline).toMatchObject({ source: "log", status: "failed", model: "m", usage: failed.usage, error: failed.error })
    expect(timeline.rows[0]).toMatchObject({ kind: "turn", status: "failed", error: true, detail: "ProviderRejected: ProviderRejected: 400 bad request" })
    expect(Model.timelineOfLog("s", log, 8)!.status).toBeUndefined()
  })
})
