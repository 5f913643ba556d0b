/**
 * The event journal's records: every `AgentEvent` of a session with its per-session sequence
 * number, as stored beside the session's log (`SessionStore.journal`) and served to clients that
 * reconnect "after N" (`EventJournal`).
 *
 * `seq` counts from 1 within a session and never repeats while the session's log exists: a
 * client that saw `seq` N and asks for what came after gets N+1, N+2, … with nothing missed and
 * nothing twice. The event itself is unchanged (no id inside it): the number travels beside it.
 */
import * as Schema from "effect/Schema"
import { AgentEvent, type EventKind } from "./Event.ts"

/** One journaled event: its sequence number in its session, and the event. */
export const JournaledEvent = Schema.Struct({
  /** 1, 2, 3, … within the session. */
  seq: Schema.Int,
  event: AgentEvent
})
export type JournaledEvent = typeof JournaledEvent.Type

/**
 * The kinds after which the journal writes what it holds of a session to the store: a turn's
 * start, each model reply (a step's boundary: the step's tool events go with the next one) and
 * the turn's end. Streamed deltas and tool events between them are served from memory and stored
 * with the next of these, so a turn costs one write per iteration, not one per event.
 */
export const flushKinds: ReadonlyArray<EventKind> = ["TurnStart", "LLMResponse", "TurnEnd"]
