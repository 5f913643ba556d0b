/**
 * What an ACP client is shown (`session/update`): the loop's events of a turn, and a stored
 * conversation replayed by `session/load`, as ACP session updates — text and thoughts as chunks,
 * tool calls with their kind, title, status, locations and content (an edit as a diff), the todo
 * list (`todo_write`) as the plan.
 *
 * Pure: the connection (`agent.ts`) sends what these return.
 */
import type * as Acp from "@agentclientprotocol/sdk"
import type { AgentEvent } from "../../domain/Event.ts"
import * as Message from "../../domain/Message.ts"

/** The ACP kind of a tool, by its name (an unknown or MCP tool is `other`). */
export const kindOf = (toolName: string): Acp.ToolKind => {
  switch (toolName) {
    case "read_file":
    case "list_dir":
      return "read"
    case "write_file":
    case "edit_file":
      return "edit"
    case "glob":
    case "grep":
      return "search"
    case "exec":
    case "exec_output":
    case "exec_kill":
      return "execute"
    case "web_fetch":
      return "fetch"
    case "subagent":
    case "spawn":
    case "todo_write":
      return "think"
    default:
      return "other"
  }
}

/** Arguments as an object, whatever the model sent (text that is not JSON is kept as `{ text }`). */
const argsOf = (json: string): Record<string, unknown> => {
  try {
    const parsed: unknown = JSON.parse(json)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed as Record<string, unknown> : { value: parsed }
  } catch {
    return { text: json }
  }
}

const stringField = (args: Record<string, unknown>, name: string): string | undefined =>
  typeof args[name] === "string" ? args[name] as string : undefined

/** A short title: the tool and what it acts on (its path, command, pattern or URL). */
export const titleOf = (toolName: string, args: Record<string, unknown>): string => {
  const what = stringField(args, "path") ?? stringField(args, "command") ?? stringField(args, "pattern") ?? stringField(args, "url")
  const short = what === undefined ? "" : ` ${what.length > 80 ? `${what.slice(0, 77)}…` : what}`
  return `${toolName}${short}`
}

/** The files a call touches, for the client to follow (relative paths are under `cwd`). */
const locationsOf = (args: Record<string, unknown>, cwd: string): Array<Acp.ToolCallLocation> => {
  const path = stringField(args, "path")
  if (path === undefined) return []
  return [{ path: path.startsWith("/") ? path : `${cwd.replace(/\/$/, "")}/${path}` }]
}

/** An edit as a diff (the client renders it): `edit_file`'s old and new text, `write_file`'s new content. */
const diffOf = (toolName: string, args: Record<string, unknown>, cwd: string): Acp.ToolCallContent | undefined => {
  const path = locationsOf(args, cwd)[0]?.path
  if (path === undefined) return undefined
  if (toolName === "edit_file") {
    const oldText = stringField(args, "old_text")
    const newText = stringField(args, "new_text")
    return oldText === undefined || newText === undefined ? undefined : { type: "diff", path, oldText, newText }
  }
  if (toolName === "write_file") {
    const content = stringField(args, "content")
    return content === undefined ? undefined : { type: "diff", path, oldText: null, newText: content }
  }
  return undefined
}

const text = (value: string): Acp.ContentBlock => ({ type: "text", text: value })

/** A todo list (`todo_write`, `TodoUpdated`) as the plan: the whole list each time, as ACP wants; the loop has no priorities. */
export const planOf = (todos: ReadonlyArray<{ readonly content: string; readonly status: string }>): Acp.SessionUpdate => ({
  sessionUpdate: "plan",
  entries: todos.map((todo) => ({
    content: todo.content,
    status: todo.status === "in_progress" || todo.status === "completed" ? todo.status : "pending",
    priority: "medium"
  }))
})

/** The todos of a stored `todo_write` call's arguments, if they are a list of them. */
const todosOf = (args: Record<string, unknown>): ReadonlyArray<{ content: string; status: string }> | undefined => {
  const todos = args["todos"]
  if (!Array.isArray(todos)) return undefined
  return todos.flatMap((todo: unknown) => {
    const item = typeof todo === "object" && todo !== null ? todo as Record<string, unknown> : {}
    return typeof item["content"] === "string" ? [{ content: item["content"], status: String(item["status"]) }] : []
  })
}

/** A tool call as the client first sees it: pending (asked about) or in progress (running). */
export const toolCall = (
  call: { readonly id: string; readonly name: string; readonly arguments: string },
  status: Acp.ToolCallStatus,
  cwd: string
): Acp.ToolCall => {
  const args = argsOf(call.arguments)
  const diff = diffOf(call.name, args, cwd)
  return {
    toolCallId: call.id,
    title: titleOf(call.name, args),
    kind: kindOf(call.name),
    status,
    locations: locationsOf(args, cwd),
    rawInput: args,
    ...(diff === undefined ? {} : { content: [diff] })
  }
}

/** The updates one event of a session's root turn makes (sub-turns' events are their tool call's business). */
export const fromEvent = (event: AgentEvent, cwd: string): ReadonlyArray<Acp.SessionUpdate> => {
  if (event.depth !== 0) return []
  switch (event._tag) {
    case "LLMDelta":
      if (event.kind === "text") return [{ sessionUpdate: "agent_message_chunk", content: text(event.text) }]
      if (event.kind === "reasoning") return [{ sessionUpdate: "agent_thought_chunk", content: text(event.text) }]
      return []
    case "ToolExecStart":
      return [{
        sessionUpdate: "tool_call",
        ...toolCall({ id: event.toolCallId, name: event.toolName, arguments: event.arguments }, "in_progress", cwd)
      }]
    case "ToolExecEnd":
      return [{
        sessionUpdate: "tool_call_update",
        toolCallId: event.toolCallId,
        status: event.isError ? "failed" : "completed",
        content: [{ type: "content", content: text(event.result) }],
        rawOutput: { result: event.result, isError: event.isError }
      }]
    case "TodoUpdated":
      return [planOf(event.todos)]
    case "ToolExecSkipped":
      return [{
        sessionUpdate: "tool_call_update",
        toolCallId: event.toolCallId,
        title: event.toolName,
        kind: kindOf(event.toolName),
        status: "failed",
        content: [{ type: "content", content: text(event.reason) }]
      }]
    default:
      return []
  }
}

/**
 * A stored conversation as updates, for `session/load`: user and assistant text as their chunks,
 * reasoning as thoughts, each tool call with its final status and result, the todo list as it was
 * last written (`todo_write`) as the plan. System messages (the
 * prompt, summaries) are the agent's own and are not shown.
 */
export const fromHistory = (messages: ReadonlyArray<Message.Message>, cwd: string): ReadonlyArray<Acp.SessionUpdate> => {
  const results = new Map<string, Message.ToolResultMessage>()
  for (const message of messages) if (message.role === "tool") results.set(message.toolCallId, message)
  const updates: Array<Acp.SessionUpdate> = []
  for (const message of messages) {
    if (message.role === "user") updates.push({ sessionUpdate: "user_message_chunk", content: text(Message.textOf(message.content)) })
    if (message.role !== "assistant") continue
    if (message.reasoning !== undefined && message.reasoning !== "") updates.push({ sessionUpdate: "agent_thought_chunk", content: text(message.reasoning) })
    if (message.content !== "") updates.push({ sessionUpdate: "agent_message_chunk", content: text(message.content) })
    for (const call of message.toolCalls ?? []) {
      const result = results.get(call.id)
      const ended = result === undefined ? "failed" : result.isError === true ? "failed" : "completed"
      updates.push({
        sessionUpdate: "tool_call",
        ...toolCall(call, ended, cwd),
        ...(result === undefined ? {} : { rawOutput: { result: Message.textOf(result.content) } })
      })
      if (result !== undefined) {
        updates.push({ sessionUpdate: "tool_call_update", toolCallId: call.id, content: [{ type: "content", content: text(Message.textOf(result.content)) }] })
      }
      const todos = call.name === "todo_write" && result?.isError !== true ? todosOf(argsOf(call.arguments)) : undefined
      if (todos !== undefined) updates.push(planOf(todos))
    }
  }
  return updates
}
