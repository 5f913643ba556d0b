/**
 * What the inspector page shows, computed from a session's log and the events recorded for its
 * turns: the session rows, a page of the conversation, and a turn's timeline.
 *
 * A turn's timeline comes from its events when they were recorded (the inspector saw the turn run,
 * or an events file was given): model calls, tool calls, the wait before a tool started (hooks and
 * approval), sub-turns nested under the tool call that spawned them, retries, interrupts and
 * compactions marked, tokens and cost per call. A turn of the log alone (an older session) has no
 * times: its timeline keeps the order of the model calls and tool calls, one step each, and says so.
 */
import type { AgentEvent, EventOf } from "../domain/Event.ts"
import type { Content, Message, ToolCall } from "../domain/Message.ts"
import { textOf } from "../domain/Message.ts"
import type { SessionEntry, TurnOutcome } from "../domain/SessionLog.ts"
import * as Usage from "../domain/Usage.ts"
import type { SessionInfo } from "../services/SessionStore.ts"

/** A row of the session list. */
export interface SessionRow extends Omit<SessionInfo, "status"> {
  /** How its last turn ended, or `running` while the inspector sees one of its turns run. */
  readonly status?: SessionInfo["status"] | "running"
  /** Tokens and cost of the turns whose events were recorded (absent when none were). */
  readonly usage?: Usage.Usage
}

/** A page of rows and the number of rows matching. */
export interface Page<A> {
  readonly total: number
  readonly offset: number
  readonly items: ReadonlyArray<A>
}

/** Rows whose key, workspace or first prompt contains `query` (case-insensitive), newest first, one page of them. */
export const sessionPage = (
  rows: ReadonlyArray<SessionRow>,
  query: string,
  offset: number,
  limit: number
): Page<SessionRow> => {
  const needle = query.trim().toLowerCase()
  const matching = rows
    .filter((row) =>
      needle === "" ||
      [row.sessionKey, row.workspace ?? "", row.preview ?? ""].some((text) => text.toLowerCase().includes(needle))
    )
    .toSorted((a, b) => (b.updatedAt ?? -Infinity) - (a.updatedAt ?? -Infinity) || a.sessionKey.localeCompare(b.sessionKey))
  return { total: matching.length, offset, items: matching.slice(offset, offset + limit) }
}

/** A stored entry with its place in the log. */
export interface Numbered {
  readonly index: number
  readonly entry: SessionEntry
}

/** A turn of the session: its timeline's id, where it starts in the log, and how it is known. */
export interface TurnRef {
  readonly id: string
  readonly label: string
  /** Index in the log of the user message that started it (log turns). */
  readonly index?: number
  readonly at?: number
  readonly status?: string
  readonly source: "events" | "log"
}

/** One page of a session's conversation, with the turns of the session. */
export interface Conversation extends Page<Numbered> {
  readonly sessionKey: string
  readonly turns: ReadonlyArray<TurnRef>
}

const LABEL_LENGTH = 80

const short = (text: string, length = LABEL_LENGTH): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat
}

/** The id of the timeline of the log turn that starts at `index`. */
const logTurnId = (index: number): string => `log-${index}`

/** Where the log turn of timeline `id` starts (see `logTurnId`); `undefined` for any other id. */
export const logTurnIndex = (id: string): number | undefined => {
  const match = /^log-(\d+)$/.exec(id)
  return match === null ? undefined : Number(match[1])
}

/** A turn's label: its opening message on one line, cut to a length a list shows. */
export const turnLabel = (content: Content): string => short(textOf(content))

/**
 * The turn-outcome record of the log turn that starts at `index`: the first one before the next
 * turn's opening user messages (logs from before these records have none).
 */
export const outcomeOf = (entries: ReadonlyArray<SessionEntry>, index: number): TurnOutcome | undefined => {
  for (let i = index + 1; i < entries.length; i++) {
    const entry = entries[i]!
    if (entry.role === "outcome") return entry
    // after an answer without tool calls a user message opens the next turn (steering comes only
    // after tool calls): that turn's record is not this one's
    const before = entries[i - 1]!
    if (entry.role === "user" && before.role === "assistant" && (before.toolCalls ?? []).length === 0) return undefined
  }
  return undefined
}

/** The turns of the log that start in `[from, to)`: one per user message, with its stored status. */
export const logTurns = (entries: ReadonlyArray<SessionEntry>, from = 0, to = entries.length): Array<TurnRef> => {
  const turns: Array<TurnRef> = []
  for (let index = Math.max(0, from); index < Math.min(to, entries.length); index++) {
    const entry = entries[index]!
    if (entry.role !== "user") continue
    const outcome = outcomeOf(entries, index)
    turns.push({
      id: logTurnId(index),
      index,
      label: turnLabel(entry.content),
      ...(outcome === undefined ? {} : { status: outcome.status, at: outcome.startedAt }),
      source: "log"
    })
  }
  return turns
}

/**
 * A page of the conversation (`offset` past the end gives an empty page), the recorded turns, and
 * the log turns that start on the page (so a page of a long session stays small).
 */
export const conversation = (
  sessionKey: string,
  entries: ReadonlyArray<SessionEntry>,
  recorded: ReadonlyArray<TurnRef>,
  offset: number,
  limit: number
): Conversation => ({
  sessionKey,
  total: entries.length,
  offset,
  items: entries.slice(offset, offset + limit).map((entry, i) => ({ index: offset + i, entry })),
  turns: [...recorded, ...unrecorded(logTurns(entries, offset, offset + limit), recorded)]
})

/**
 * The log turns no recorded turn stands for: recorded turns are matched to log turns in order, by
 * their first prompt, so a turn seen live is listed once (with its times).
 */
const unrecorded = (log: ReadonlyArray<TurnRef>, recorded: ReadonlyArray<TurnRef>): Array<TurnRef> => {
  const matched = new Set<number>()
  let from = 0
  for (const turn of recorded) {
    const at = log.findIndex((candidate, i) => i >= from && candidate.label === turn.label)
    if (at < 0) continue
    matched.add(at)
    from = at + 1
  }
  return log.filter((_, i) => !matched.has(i))
}

/** A bar of the timeline. `end` is absent while it runs. */
export interface Span {
  readonly id: string
  readonly kind: "turn" | "model" | "tool"
  label: string
  /** Nesting: 0 for the turn, 1 for its calls, 2 for a sub-turn under its tool call, and so on. */
  readonly level: number
  readonly start: number
  end?: number
  /** Before a tool started: from the model's answer to the start (hooks, approval). */
  waitFrom?: number
  iteration?: number
  usage?: Usage.Usage
  status?: string
  error?: boolean
  detail?: string
  /** The turn the row belongs to (a sub-turn's rows name the sub-turn). */
  readonly turnId?: string
  /** A tool call's id. */
  readonly callId?: string
  /** Where the call is in the log (`calls.ts`: `locate`): its answer, and the reply that asked for a tool call. */
  logIndex?: number
  callIndex?: number
  readonly marks: Array<{ readonly at: number; readonly kind: string; readonly label: string }>
  readonly children: Array<Span>
}

/** A turn's timeline, flattened into rows in display order. */
export interface Timeline {
  readonly turnId: string
  readonly sessionKey: string
  /** `events`: real times in milliseconds; `log`: the order only, one step per call. */
  readonly source: "events" | "log"
  readonly start: number
  readonly end: number
  readonly status?: string
  readonly usage?: Usage.Usage
  /** Why the turn did not complete (its outcome record; log timelines). */
  readonly error?: { readonly _tag: string; readonly message: string } | undefined
  /** The model it ran with (its outcome record; log timelines). */
  readonly model?: string | undefined
  readonly rows: ReadonlyArray<Omit<Span, "children">>
  /** Input tokens of each model call of the turn itself: the context size over the iterations. */
  readonly context: ReadonlyArray<{ readonly iteration: number; readonly tokens: number }>
  /** The events, deltas left out, oldest first. */
  readonly events: ReadonlyArray<AgentEvent>
}

const span = (fields: Omit<Span, "marks" | "children">): Span => ({ ...fields, marks: [], children: [] })

/** The spans of one turn and, nested, of its sub-turns (`byTurn` holds every turn's events in order). */
const turnSpan = (turnId: string, byTurn: ReadonlyMap<string, ReadonlyArray<AgentEvent>>, level: number, seen: Set<string>): Span | undefined => {
  const events = byTurn.get(turnId)
  if (events === undefined || events.length === 0 || seen.has(turnId)) return undefined
  seen.add(turnId)
  const first = events[0]!
  const start = events.find((e) => e._tag === "TurnStart")
  const root = span({
    id: turnId,
    turnId,
    kind: "turn",
    label: start === undefined ? "turn" : short(textOf(start.input), 60) || "turn",
    level,
    start: first.at
  })
  let model: Span | undefined
  let answeredAt: number | undefined
  const tools = new Map<string, Span>()
  let usage = Usage.empty
  let counted = false
  for (const event of events) {
    switch (event._tag) {
      case "LLMRequest":
        model = span({ id: `${turnId}/m${root.children.length}`, turnId, kind: "model", label: event.model, level: level + 1, start: event.at, iteration: event.iteration })
        root.children.push(model)
        break
      case "LLMResponse":
        if (model !== undefined) {
          model.end = event.at
          model.usage = event.usage
          model.detail = `${event.finishReason}${event.toolCalls.length > 0 ? `, ${event.toolCalls.length} tool call(s)` : ""}`
        }
        usage = Usage.add(usage, event.usage)
        counted = true
        answeredAt = event.at
        break
      case "LLMRetry":
        ;(model ?? root).marks.push({ at: event.at, kind: "retry", label: `retry ${event.attempt}: ${short(event.reason)}` })
        break
      case "ToolExecStart": {
        const tool = span({ id: `${turnId}/t${event.toolCallId}`, turnId, callId: event.toolCallId, kind: "tool", label: event.toolName, level: level + 1, start: event.at, iteration: event.iteration, detail: short(event.arguments, 200) })
        if (answeredAt !== undefined && answeredAt < event.at) tool.waitFrom = answeredAt
        tools.set(event.toolCallId, tool)
        root.children.push(tool)
        break
      }
      case "ToolExecEnd": {
        const tool = tools.get(event.toolCallId)
        if (tool !== undefined) {
          tool.end = event.at
          tool.error = event.isError
          tool.detail = short(event.result, 200)
        }
        break
      }
      case "ToolExecSkipped":
        root.children.push(span({ id: `${turnId}/s${event.toolCallId}`, turnId, callId: event.toolCallId, kind: "tool", label: `${event.toolName} (not run)`, level: level + 1, start: event.at, end: event.at, error: true, detail: short(event.reason, 200) }))
        break
      case "SubTurnSpawn": {
        const child = turnSpan(event.childTurnId, byTurn, level + 2, seen)
        if (child === undefined) break
        child.label = `sub-turn (${event.model}${event.async ? ", async" : ""}): ${child.label}`
        // the tool call that was running when the sub-turn began spawned it
        const parent = [...tools.values()].reverse().find((t) => t.start <= event.at && (t.end === undefined || t.end >= event.at))
        if (parent === undefined) reindent(child, level + 1)
        ;(parent ?? root).children.push(child)
        break
      }
      case "InterruptReceived":
        root.marks.push({ at: event.at, kind: "interrupt", label: `interrupt (${event.kind})${event.hint === undefined ? "" : `: ${short(event.hint)}`}` })
        break
      case "ContextCompress":
        root.marks.push({ at: event.at, kind: "compaction", label: `context ${event.reason}: ${event.dropped} dropped` })
        break
      case "SessionSummarize":
        root.marks.push({ at: event.at, kind: "compaction", label: `summarised ${event.summarized} messages` })
        break
      case "SteeringInjected":
        root.marks.push({ at: event.at, kind: "steering", label: `${event.count} steering message(s)` })
        break
      case "Error":
        root.marks.push({ at: event.at, kind: "error", label: `${event.stage}: ${short(event.message)}` })
        break
      case "TurnEnd":
        root.end = event.at
        root.status = event.status
        root.usage = event.usage
        root.error = event.status !== "completed"
        break
    }
  }
  if (root.usage === undefined && counted) root.usage = usage
  return root
}

const reindent = (s: Span, level: number): void => {
  ;(s as { level: number }).level = level
  for (const child of s.children) reindent(child, child.kind === "turn" ? level + 2 : level + 1)
}

const flatten = (s: Span, out: Array<Omit<Span, "children">>): void => {
  const { children, ...row } = s
  out.push(row)
  for (const child of children) flatten(child, out)
}

/** The events of a turn and of its sub-turns, by turn id. */
export const groupByTurn = (events: Iterable<AgentEvent>): Map<string, Array<AgentEvent>> => {
  const byTurn = new Map<string, Array<AgentEvent>>()
  for (const event of events) {
    if (event._tag === "LLMDelta") continue
    const list = byTurn.get(event.turnId)
    if (list === undefined) byTurn.set(event.turnId, [event])
    else list.push(event)
  }
  return byTurn
}

/** Every turn id under `turnId` (itself included), following `SubTurnSpawn`. */
const descendants = (turnId: string, byTurn: ReadonlyMap<string, ReadonlyArray<AgentEvent>>): Array<string> => {
  const out: Array<string> = []
  const walk = (id: string) => {
    if (out.includes(id)) return
    out.push(id)
    for (const e of byTurn.get(id) ?? []) if (e._tag === "SubTurnSpawn") walk(e.childTurnId)
  }
  walk(turnId)
  return out
}

/** The timeline of a recorded turn; `undefined` when none of its events were recorded. */
export const timelineOfEvents = (turnId: string, byTurn: ReadonlyMap<string, ReadonlyArray<AgentEvent>>): Timeline | undefined => {
  const root = turnSpan(turnId, byTurn, 0, new Set())
  if (root === undefined) return undefined
  const rows: Array<Omit<Span, "children">> = []
  flatten(root, rows)
  const own = byTurn.get(turnId)!
  const events = descendants(turnId, byTurn).flatMap((id) => byTurn.get(id) ?? []).toSorted((a, b) => a.at - b.at)
  const last = Math.max(...rows.map((r) => r.end ?? r.start), ...events.map((e) => e.at))
  return {
    turnId,
    sessionKey: own[0]!.sessionKey,
    source: "events",
    start: root.start,
    end: last,
    ...(root.status === undefined ? {} : { status: root.status }),
    ...(root.usage === undefined ? {} : { usage: root.usage }),
    rows,
    context: own.filter((e): e is EventOf<"LLMResponse"> => e._tag === "LLMResponse").map((e) => ({ iteration: e.iteration, tokens: e.usage.inputTokens })),
    events
  }
}

/**
 * The timeline of the log turn that starts at `index` (a user message): its model calls (one per
 * reply) and tool calls in order, one step each, since the log keeps no times.
 */
export const timelineOfLog = (sessionKey: string, entries: ReadonlyArray<SessionEntry>, index: number): Timeline | undefined => {
  const first = entries[index]
  if (first === undefined || first.role !== "user") return undefined
  const id = logTurnId(index)
  const root = span({ id, turnId: id, kind: "turn", label: short(textOf(first.content), 60) || "turn", level: 0, start: 0 })
  let step = 0
  let iteration = 0
  const tools = new Map<string, Span>()
  for (let i = index + 1; i < entries.length; i++) {
    const entry = entries[i]!
    if (entry.role === "user" || entry.role === "outcome") break
    if (entry.role === "compaction") root.marks.push({ at: step, kind: "compaction", label: `compaction (${entry.reason})` })
    if (entry.role !== "assistant" && entry.role !== "tool") continue
    if (entry.role === "assistant") {
      iteration++
      root.children.push(span({ id: `${id}/m${i}`, turnId: id, logIndex: i, kind: "model", label: "model", level: 1, start: step, end: step + 1, iteration, detail: short(entry.content, 200) }))
      step++
      for (const call of entry.toolCalls ?? ([] as ReadonlyArray<ToolCall>)) {
        const tool = span({ id: `${id}/t${call.id}`, turnId: id, callId: call.id, callIndex: i, kind: "tool", label: call.name, level: 1, start: step, end: step + 1, iteration, detail: short(call.arguments, 200) })
        tools.set(call.id, tool)
        root.children.push(tool)
      }
      if ((entry.toolCalls ?? []).length > 0) step++
    } else {
      const tool = tools.get(entry.toolCallId)
      if (tool !== undefined) {
        tool.logIndex = i
        tool.error = entry.isError === true
        tool.detail = short(textOf((entry as Message & { role: "tool" }).content), 200)
      }
    }
  }
  root.end = Math.max(step, 1)
  // how the turn ended, from its outcome record: also for a turn whose events were never recorded
  const outcome = outcomeOf(entries, index)
  if (outcome !== undefined) {
    root.status = outcome.status
    root.error = outcome.status !== "completed"
    root.usage = outcome.usage
    if (outcome.error !== undefined) root.detail = `${outcome.error._tag}: ${outcome.error.message}`
  }
  const rows: Array<Omit<Span, "children">> = []
  flatten(root, rows)
  return {
    turnId: id,
    sessionKey,
    source: "log",
    start: 0,
    end: root.end,
    ...(outcome === undefined ? {} : { status: outcome.status, usage: outcome.usage, error: outcome.error, model: outcome.model }),
    rows,
    context: [],
    events: []
  }
}
