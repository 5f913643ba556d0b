/**
 * Where each call of a timeline is in the session's log, and how each tool call of the log was
 * run: what the page needs to open a call's details (its request is the log up to its reply, its
 * response the reply itself) and to pair a tool result with its call (id, duration, its bar, and
 * the sub-turn it spawned).
 */
import type { AgentEvent } from "../domain/Event.ts"
import { textOf } from "../domain/Message.ts"
import type { SessionEntry } from "../domain/SessionLog.ts"
import type { Timeline } from "./model.ts"

/** A timeline row with its place in the log. */
export interface Located {
  /** The log entry of the call's answer: the reply of a model call, the result of a tool call. */
  readonly logIndex?: number
  /** The log entry of the reply that asked for a tool call. */
  readonly callIndex?: number
}

/** How a tool call of the log was run, by its id. */
export interface CallInfo {
  readonly name: string
  /** The log entry of the reply that made the call, and of its result. */
  readonly callIndex: number
  readonly resultIndex?: number
  /** The timeline the call's bar is in, and the bar's row id. */
  readonly turnId: string
  readonly rowId: string
  readonly durationMs?: number
  readonly isError?: boolean
  /** The sub-turn the call spawned (a timeline of its own), when its events were recorded. */
  readonly subTurnId?: string
}

const sameCalls = (a: ReadonlyArray<{ readonly id: string }>, b: ReadonlyArray<{ readonly id: string }>): boolean =>
  a.length === b.length && a.every((call, i) => call.id === b[i]!.id)

/**
 * The timeline with each row of its own turn (not of its sub-turns, which have no log entries
 * here) given the log entries of its call: a model call's reply is matched by its tool call ids,
 * or by its text when it made none, searching forward from the previous match.
 */
export const locate = (timeline: Timeline, entries: ReadonlyArray<SessionEntry>): Timeline => {
  // a log timeline's rows are built from the log and know their entries already
  if (timeline.source === "log") return timeline
  const responses = new Map<string, AgentEvent & { readonly _tag: "LLMResponse" }>()
  for (const event of timeline.events) {
    if (event._tag === "LLMResponse" && event.turnId === timeline.turnId) responses.set(`${event.iteration}`, event)
  }
  let from = opening(timeline, entries)
  const replies = new Map<string, number>()
  const results = new Map<string, number>()
  entries.forEach((entry, i) => {
    if (entry.role === "tool") results.set(entry.toolCallId, i)
  })
  const rows = timeline.rows.map((row) => {
    if (row.turnId !== timeline.turnId || row.kind === "turn") return row
    if (row.kind === "model") {
      const response = responses.get(`${row.iteration}`)
      if (response === undefined) return row
      for (let i = from; i < entries.length; i++) {
        const entry = entries[i]!
        if (entry.role !== "assistant") continue
        const calls = entry.toolCalls ?? []
        if (response.toolCalls.length > 0 ? sameCalls(calls, response.toolCalls) : calls.length === 0 && entry.content === response.content) {
          from = i + 1
          for (const call of calls) replies.set(call.id, i)
          return { ...row, logIndex: i }
        }
      }
      return row
    }
    const id = row.callId
    if (row.kind !== "tool" || id === undefined) return row
    const resultIndex = results.get(id)
    const callIndex = replies.get(id)
    return { ...row, ...(resultIndex === undefined ? {} : { logIndex: resultIndex }), ...(callIndex === undefined ? {} : { callIndex }) }
  })
  return { ...timeline, rows }
}

/**
 * Where the turn's replies are looked for from: just after the last user message with the turn's
 * prompt (a prompt sent again in a later turn is more likely the one still recorded), so a reply
 * whose text an earlier turn also gave is not taken for it; the start of the log when none has it.
 */
const opening = (timeline: Timeline, entries: ReadonlyArray<SessionEntry>): number => {
  const start = timeline.events.find((e) => e._tag === "TurnStart" && e.turnId === timeline.turnId)
  if (start === undefined || start._tag !== "TurnStart") return 0
  const prompt = textOf(start.input)
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!
    if (entry.role === "user" && textOf(entry.content) === prompt) return i + 1
  }
  return 0
}

/**
 * The tool calls made by the replies in `[from, to)` of the log, with where their results are and
 * how they ran: from the recorded events of their turn when there are any (`byTurn`), else from
 * the log turn they belong to (its timeline `log-N`, no times).
 */
export const callsOn = (
  entries: ReadonlyArray<SessionEntry>,
  from: number,
  to: number,
  byTurn: ReadonlyMap<string, ReadonlyArray<AgentEvent>>,
  sessionKey: string
): Record<string, CallInfo> => {
  const wanted = new Map<string, { name: string; callIndex: number }>()
  const needed = new Set<string>()
  for (let i = Math.max(0, from); i < Math.min(to, entries.length); i++) {
    const entry = entries[i]!
    if (entry.role === "assistant") for (const call of entry.toolCalls ?? []) wanted.set(call.id, { name: call.name, callIndex: i })
    if (entry.role === "tool") needed.add(entry.toolCallId)
  }
  // results on the page whose calls are on an earlier page
  if (needed.size > 0) {
    for (let i = Math.min(from, entries.length) - 1; i >= 0 && [...needed].some((id) => !wanted.has(id)); i--) {
      const entry = entries[i]!
      if (entry.role === "assistant") for (const call of entry.toolCalls ?? []) if (needed.has(call.id)) wanted.set(call.id, { name: call.name, callIndex: i })
    }
  }
  if (wanted.size === 0) return {}
  const out: Record<string, CallInfo> = {}
  const results = new Map<string, { index: number; isError: boolean }>()
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!
    if (entry.role === "tool" && wanted.has(entry.toolCallId)) results.set(entry.toolCallId, { index: i, isError: entry.isError === true })
  }
  // the recorded runs of these calls: their end, and a sub-turn spawned while they ran
  const recorded = new Map<string, { turnId: string; durationMs?: number; subTurnId?: string }>()
  for (const [turnId, events] of byTurn) {
    if (events[0]?.sessionKey !== sessionKey || events[0].depth !== 0) continue
    let running: string | undefined
    for (const event of events) {
      if (event._tag === "ToolExecStart" && wanted.has(event.toolCallId)) {
        running = event.toolCallId
        recorded.set(event.toolCallId, { turnId })
      } else if (event._tag === "ToolExecEnd" && recorded.has(event.toolCallId)) {
        recorded.set(event.toolCallId, { ...recorded.get(event.toolCallId)!, durationMs: event.durationMs })
        if (running === event.toolCallId) running = undefined
      } else if (event._tag === "SubTurnSpawn" && running !== undefined) {
        recorded.set(running, { ...recorded.get(running)!, subTurnId: event.childTurnId })
      }
    }
  }
  for (const [id, call] of wanted) {
    const result = results.get(id)
    const run = recorded.get(id)
    const logTurn = run === undefined ? turnOf(entries, call.callIndex) : undefined
    const turnId = run?.turnId ?? (logTurn === undefined ? "" : `log-${logTurn}`)
    if (turnId === "") continue
    out[id] = {
      name: call.name,
      callIndex: call.callIndex,
      ...(result === undefined ? {} : { resultIndex: result.index, isError: result.isError }),
      turnId,
      rowId: `${turnId}/t${id}`,
      ...(run?.durationMs === undefined ? {} : { durationMs: run.durationMs }),
      ...(run?.subTurnId === undefined ? {} : { subTurnId: run.subTurnId })
    }
  }
  return out
}

/** The log turn (its user message's index) that entry `index` belongs to. */
const turnOf = (entries: ReadonlyArray<SessionEntry>, index: number): number | undefined => {
  for (let i = index; i >= 0; i--) if (entries[i]!.role === "user") return i
  return undefined
}
