/**
 * The inspector's memory of the events it saw: a numbered replay buffer (so that a page that lost
 * its connection gets what it missed, by `Last-Event-ID`) and the events of recent turns (for their
 * timelines), both bounded, plus the listeners of the live pages.
 *
 * One lossless subscription to the bus numbers every event in the order the bus delivered it;
 * each page listens to the recorder, not to the bus, so the numbers are the same for every page.
 */
import type { AgentEvent } from "../domain/Event.ts"
import * as Model from "./model.ts"

/** An event and its number (the SSE `id`). */
export interface Numbered {
  readonly id: number
  readonly event: AgentEvent
}

/** How much the recorder keeps. */
export interface RecorderLimits {
  /** Events kept for reconnecting pages (deltas included). */
  readonly replay: number
  /** Turns whose events are kept for their timelines (sub-turns count as turns). */
  readonly turns: number
}

/** What a page that reconnects after `lastId` gets: the events after it, and whether some were lost. */
export interface Replay {
  readonly events: ReadonlyArray<Numbered>
  /** Events after `lastId` had already left the buffer: the page must reload what it shows. */
  readonly gap: boolean
}

/** The recorder. Every method is synchronous: it runs on the fiber that feeds it or serves a page. */
export class Recorder {
  private next = 1
  private readonly ring: Array<Numbered> = []
  private readonly turns = new Map<string, Array<AgentEvent>>()
  private readonly listeners = new Set<(item: Numbered) => void>()

  readonly limits: RecorderLimits

  constructor(limits: RecorderLimits) {
    this.limits = limits
  }

  /** Numbers `event`, keeps it, and hands it to every listener. */
  record(event: AgentEvent): void {
    const item: Numbered = { id: this.next++, event }
    this.ring.push(item)
    if (this.ring.length > this.limits.replay) this.ring.splice(0, this.ring.length - this.limits.replay)
    if (event._tag !== "LLMDelta") this.keep(event)
    for (const listener of this.listeners) listener(item)
  }

  /** Keeps a turn's event; past the limit the oldest turn is forgotten. */
  private keep(event: AgentEvent): void {
    const list = this.turns.get(event.turnId)
    if (list !== undefined) {
      list.push(event)
      return
    }
    this.turns.set(event.turnId, [event])
    if (this.turns.size > this.limits.turns) this.turns.delete(this.turns.keys().next().value!)
  }

  /** The number of the last event recorded (0 before any). */
  get lastId(): number {
    return this.next - 1
  }

  /** The buffered events after `lastId`; `gap` when the buffer no longer reaches back to it. */
  since(lastId: number): Replay {
    const oldest = this.ring[0]?.id ?? this.next
    const events = this.ring.filter((item) => item.id > lastId)
    return { events, gap: lastId + 1 < oldest && lastId < this.lastId }
  }

  /** Calls `listener` with every event recorded from now on; returns the function that stops it. */
  listen(listener: (item: Numbered) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** The events of every kept turn, by turn id. */
  byTurn(): ReadonlyMap<string, ReadonlyArray<AgentEvent>> {
    return this.turns
  }

  /** The kept top-level turns of a session, oldest first. */
  sessionTurns(sessionKey: string): Array<Model.TurnRef> {
    const refs: Array<Model.TurnRef> = []
    for (const [id, events] of this.turns) {
      const first = events[0]!
      if (first.sessionKey !== sessionKey || first.depth !== 0) continue
      const start = events.find((e) => e._tag === "TurnStart")
      const end = events.find((e) => e._tag === "TurnEnd")
      refs.push({
        id,
        label: start === undefined ? id : Model.turnLabel(start.input),
        at: first.at,
        ...(end === undefined ? { status: "running" } : { status: end.status }),
        source: "events"
      })
    }
    return refs
  }

  /**
   * `rows` (the store's sessions) with what the recorder saw: a session whose top-level turn is
   * running is marked `running` (and moved to when it last did something), and a session the
   * store does not list yet (its first turn is still running: nothing is written before it ends) is
   * added with its first prompt, so a running session is in the list at once.
   */
  withLive(rows: ReadonlyArray<Model.SessionRow>): Array<Model.SessionRow> {
    const live = new Map<string, { running: boolean; at: number; preview: string; turns: number }>()
    for (const events of this.turns.values()) {
      const first = events[0]!
      if (first.depth !== 0) continue
      const start = events.find((e) => e._tag === "TurnStart")
      const running = !events.some((e) => e._tag === "TurnEnd")
      const seen = live.get(first.sessionKey)
      const at = events.at(-1)!.at
      live.set(first.sessionKey, {
        running: running || (seen?.running ?? false),
        at: Math.max(at, seen?.at ?? 0),
        preview: seen?.preview ?? (start === undefined ? "" : Model.turnLabel(start.input)),
        turns: (seen?.turns ?? 0) + 1
      })
    }
    const out = rows.map((row) => {
      const seen = live.get(row.sessionKey)
      live.delete(row.sessionKey)
      return seen?.running === true ? { ...row, status: "running" as const, updatedAt: Math.max(seen.at, row.updatedAt ?? 0) } : row
    })
    for (const [sessionKey, seen] of live) {
      if (!seen.running) continue
      out.push({ sessionKey, updatedAt: seen.at, status: "running", turns: seen.turns, ...(seen.preview === "" ? {} : { preview: seen.preview }) })
    }
    return out
  }

  /** Tokens and cost of the kept top-level turns that ended, by session. */
  usageBySession(): Map<string, Model.SessionRow["usage"] & {}> {
    const out = new Map<string, Model.SessionRow["usage"] & {}>()
    for (const events of this.turns.values()) {
      for (const event of events) {
        if (event._tag !== "TurnEnd" || event.depth !== 0) continue
        const before = out.get(event.sessionKey)
        out.set(event.sessionKey, before === undefined ? event.usage : addUsage(before, event.usage))
      }
    }
    return out
  }
}

const addUsage = (a: NonNullable<Model.SessionRow["usage"]>, b: NonNullable<Model.SessionRow["usage"]>) => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  ...(a.costUsd === undefined && b.costUsd === undefined ? {} : { costUsd: (a.costUsd ?? 0) + (b.costUsd ?? 0) })
})
