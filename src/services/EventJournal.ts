/**
 * `EventJournal`: every event of a session, numbered, kept beside the session's log, so that a
 * client that was cut off can ask for exactly what it missed (an SSE `Last-Event-ID`).
 *
 * - Every `AgentEvent` published on the bus gets the next `seq` of its session (1, 2, 3, …; a
 *   sub-turn's events are its parent session's). The journal takes them from a lossless
 *   subscription it owns, so it never loses one to a bounded buffer.
 * - Streamed deltas are held in memory and written to the store with the next step boundary
 *   (`flushKinds`: a model reply, a tool's end, the turn's start and end), as one append; reads
 *   serve both, so what was written and what is still in memory read as one sequence.
 * - `read` and `follow` are cursors over `seq`, not buffers: a follower that falls behind reads
 *   on from the store, so it is never cut off, never slows a turn, and nothing reaches it twice.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { EventJournal } from "effect-agent-loop"
 *
 * // what a reconnecting client missed after seq 41, then everything new, as one stream
 * const resume = Effect.gen(function*() {
 *   const journal = yield* EventJournal
 *   return journal.follow("session-1", 41)
 * })
 * ```
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { SessionStoreError } from "../domain/errors.ts"
import type { JournaledEvent } from "../domain/EventJournal.ts"

/** The journal. */
export interface EventJournalShape {
  /** The session's events after `seq` `after` (default 0: all), stored or still in memory, in order. */
  readonly read: (sessionKey: string, after?: number) => Effect.Effect<ReadonlyArray<JournaledEvent>, SessionStoreError>
  /**
   * The session's events after `after` (default 0), then every new one as it is journaled: one
   * stream with no gap and no repeat. It never ends by itself; stop it by interrupting its run.
   */
  readonly follow: (sessionKey: string, after?: number) => Stream.Stream<JournaledEvent, SessionStoreError>
  /** The session's last `seq` (0 before its first event). */
  readonly last: (sessionKey: string) => Effect.Effect<number, SessionStoreError>
  /** Waits until every event journaled so far is in the store. */
  readonly flush: Effect.Effect<void, SessionStoreError>
}

/** The event journal service. Layer: `EventJournalLive.layer`, included in `AgentLoopLive.layer`. */
export class EventJournal extends Context.Service<EventJournal, EventJournalShape>()("effect-agent-loop/EventJournal") {}
