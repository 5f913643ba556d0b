/**
 * A session as one self-contained HTML file: the inspector's page with the conversation and the
 * timelines of its turns embedded as JSON, the page's script and style inline and allowed by hash,
 * and a Content-Security-Policy that allows nothing else (no network, no other script). Known
 * secrets are scrubbed from every string before anything is written.
 */
import type { AgentEvent } from "../domain/Event.ts"
import * as SessionLog from "../domain/SessionLog.ts"
import * as Calls from "./calls.ts"
import { summaryOf } from "./exportMarkdown.ts"
import * as Model from "./model.ts"
import * as Page from "./page.ts"
import { deepScrub } from "./scrub.ts"

/** What `exportHtml` takes besides the log. */
export interface ExportOptions {
  /** Removes known secrets from a text (`Secrets.scrub`). */
  readonly scrub: (text: string) => string
  /** Recorded events of the session's turns (an events file), for timelines with times. */
  readonly events?: ReadonlyArray<AgentEvent>
  /** When the session was last written, for the header row. */
  readonly updatedAt?: number
}

/** The HTML file of session `sessionKey` whose stored log is `entries`. */
export const exportHtml = (sessionKey: string, entries: ReadonlyArray<SessionLog.SessionEntry>, options: ExportOptions): string => {
  const byTurn = Model.groupByTurn((options.events ?? []).filter((e) => e.sessionKey === sessionKey))
  const recorded: Array<Model.TurnRef> = []
  const timelines: Record<string, Model.Timeline> = {}
  for (const [turnId, events] of byTurn) {
    const timeline = Model.timelineOfEvents(turnId, byTurn)
    if (timeline === undefined) continue
    // sub-turns too: a tool call's sub-turn conversation is read from its own timeline
    timelines[turnId] = Calls.locate(timeline, entries)
    if (events[0]!.depth !== 0) continue
    // labelled as the log's turns are (the whole prompt, not the bar's shorter label), so that each turn is listed once
    const start = events.find((e) => e._tag === "TurnStart")
    const label = start === undefined ? (timeline.rows[0]?.label ?? turnId) : Model.turnLabel(start.input)
    recorded.push({ id: turnId, label, at: timeline.start, ...(timeline.status === undefined ? {} : { status: timeline.status }), source: "events" })
  }
  const session = { ...Model.conversation(sessionKey, entries, recorded, 0, entries.length), calls: Calls.callsOn(entries, 0, entries.length, byTurn, sessionKey) }
  for (const turn of session.turns) {
    if (turn.source !== "log" || turn.index === undefined) continue
    const timeline = Model.timelineOfLog(sessionKey, entries, turn.index)
    if (timeline !== undefined) timelines[turn.id] = timeline
  }
  const row: Model.SessionRow = {
    sessionKey,
    ...SessionLog.describe(entries),
    ...(options.updatedAt === undefined ? {} : { updatedAt: options.updatedAt })
  }
  const data = deepScrub({ row, session, timelines }, options.scrub)
  const summary = summaryOf(entries, options.updatedAt).map(([name, value]) => [name, options.scrub(value)] as const)
  return Page.html({ title: `agent-loop session ${options.scrub(sessionKey)}`, data, summary })
}
