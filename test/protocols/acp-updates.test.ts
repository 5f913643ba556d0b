/**
 * What an ACP client is shown of the loop's events and of a stored conversation (`updates.ts`).
 */
import { describe, expect, it } from "@effect/vitest"
import type { AgentEvent, Message } from "effect-agent-loop"
import { fromEvent, fromHistory, kindOf } from "../../src/protocols/acp/updates.ts"

const base = { turnId: "t1", sessionKey: "s", iteration: 1, at: 0, depth: 0 }

describe("ACP updates", () => {
  it("deltas are message and thought chunks; a sub-turn's events are not shown", () => {
    expect(fromEvent({ ...base, _tag: "LLMDelta", kind: "text", text: "Hi" } as AgentEvent.AgentEvent, "/ws"))
      .toEqual([{ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Hi" } }])
    expect(fromEvent({ ...base, _tag: "LLMDelta", kind: "reasoning", text: "hm" } as AgentEvent.AgentEvent, "/ws"))
      .toEqual([{ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "hm" } }])
    expect(fromEvent({ ...base, depth: 1, _tag: "LLMDelta", kind: "text", text: "child" } as AgentEvent.AgentEvent, "/ws")).toEqual([])
  })

  it("a tool call: kind, title, location, an edit as a diff; its end with the result; a skipped call failed", () => {
    const start = fromEvent({
      ...base,
      _tag: "ToolExecStart",
      toolCallId: "c1",
      toolName: "edit_file",
      arguments: JSON.stringify({ path: "src/a.ts", old_text: "x", new_text: "y" })
    } as AgentEvent.AgentEvent, "/ws")
    expect(start).toEqual([{
      sessionUpdate: "tool_call",
      toolCallId: "c1",
      title: "edit_file src/a.ts",
      kind: "edit",
      status: "in_progress",
      locations: [{ path: "/ws/src/a.ts" }],
      rawInput: { path: "src/a.ts", old_text: "x", new_text: "y" },
      content: [{ type: "diff", path: "/ws/src/a.ts", oldText: "x", newText: "y" }]
    }])
    expect(fromEvent({ ...base, _tag: "ToolExecEnd", toolCallId: "c1", toolName: "edit_file", durationMs: 1, isError: false, result: "ok" } as AgentEvent.AgentEvent, "/ws"))
      .toMatchObject([{ sessionUpdate: "tool_call_update", toolCallId: "c1", status: "completed", content: [{ type: "content", content: { type: "text", text: "ok" } }] }])
    expect(fromEvent({ ...base, _tag: "ToolExecSkipped", toolCallId: "c2", toolName: "exec", reason: "stopped" } as AgentEvent.AgentEvent, "/ws"))
      .toMatchObject([{ sessionUpdate: "tool_call_update", toolCallId: "c2", status: "failed", kind: "execute" }])
    // arguments that are not JSON are still shown
    expect(fromEvent({ ...base, _tag: "ToolExecStart", toolCallId: "c3", toolName: "mcp__x", arguments: "{oops" } as AgentEvent.AgentEvent, "/ws"))
      .toMatchObject([{ kind: "other", rawInput: { text: "{oops" }, locations: [] }])
    expect(kindOf("grep")).toBe("search")
  })

  it("a stored conversation replays as updates; system messages are not shown; a call without a result failed", () => {
    const history: ReadonlyArray<Message.Message> = [
      { role: "system", content: "[Summary of the earlier conversation]\n…" },
      { role: "user", content: "read it" },
      { role: "assistant", content: "Reading.", reasoning: "first the file", toolCalls: [{ id: "c1", name: "read_file", arguments: "{\"path\":\"a.txt\"}" }] },
      { role: "tool", toolCallId: "c1", toolName: "read_file", content: "contents" },
      { role: "assistant", content: "", toolCalls: [{ id: "c2", name: "exec", arguments: "{\"command\":\"ls\"}" }] }
    ]
    const updates = fromHistory(history, "/ws")
    expect(updates.map((u) => [u.sessionUpdate, "status" in u ? u.status : undefined])).toEqual([
      ["user_message_chunk", undefined],
      ["agent_thought_chunk", undefined],
      ["agent_message_chunk", undefined],
      ["tool_call", "completed"],
      ["tool_call_update", undefined],
      ["tool_call", "failed"]
    ])
  })

  it("a todo list is the plan: every entry each time, with its status; a stored todo_write replays it", () => {
    const todos = [
      { content: "Read the code", status: "completed" },
      { content: "Fix the bug", status: "in_progress", activeForm: "Fixing the bug" },
      { content: "Run the tests", status: "pending" }
    ] as const
    const plan = {
      sessionUpdate: "plan",
      entries: [
        { content: "Read the code", status: "completed", priority: "medium" },
        { content: "Fix the bug", status: "in_progress", priority: "medium" },
        { content: "Run the tests", status: "pending", priority: "medium" }
      ]
    }
    expect(fromEvent({ ...base, _tag: "TodoUpdated", toolCallId: "c1", todos } as AgentEvent.AgentEvent, "/ws")).toEqual([plan])
    const history: ReadonlyArray<Message.Message> = [
      { role: "user", content: "plan it" },
      { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "todo_write", arguments: JSON.stringify({ todos }) }] },
      { role: "tool", toolCallId: "c1", toolName: "todo_write", content: "Todo list updated." }
    ]
    expect(fromHistory(history, "/ws").at(-1)).toEqual(plan)
    expect(kindOf("todo_write")).toBe("think")
  })
})
