/**
 * `SessionStore`: where each session's log lives between turns (DESIGN §8).
 *
 * The log is append-only (`SessionLog`): turns append what they produced, compaction and
 * summaries append a record, and nothing the loop does deletes a stored message.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { SessionFenced, SessionStoreError } from "../domain/errors.ts"
import type { Message } from "../domain/Message.ts"
import type { SessionEntry } from "../domain/SessionLog.ts"
import type { SessionFencing } from "./SessionFencing.ts"

/** A stored session as `list` describes it. */
export interface SessionInfo {
  readonly sessionKey: string
  /** When the session was last written (epoch milliseconds), when the store knows. */
  readonly updatedAt?: number
  /** How many messages the log holds (compaction records not counted). */
  readonly messages?: number
  /** How many user messages the log holds: roughly, how many turns the session had. */
  readonly turns?: number
  /** The first user message, on one line, cut short. Raw stored text: strip it before printing to a terminal. */
  readonly preview?: string
  /** The workspace the session was started in (its metadata record); absent for sessions that never recorded one. */
  readonly workspace?: string
  /** Why the session cannot be read; the other fields are then mostly absent. */
  readonly problem?: string
}

/** What every store implements. */
export interface SessionStoreShape {
  /** The context a turn starts from: `SessionLog.view` of the log; empty when the session does not exist. */
  readonly load: (sessionKey: string) => Effect.Effect<ReadonlyArray<Message>, SessionStoreError>
  /** Everything stored for the session, in order; empty when it does not exist. */
  readonly log: (sessionKey: string) => Effect.Effect<ReadonlyArray<SessionEntry>, SessionStoreError>
  /**
   * Appends entries in one atomic write (or transaction): after a crash either all of them are
   * stored or none is. A compaction record's `cut` indexes the view as folded up to it. A store
   * that fences fails a commit whose `CommitTicket` is stale with `SessionFenced`, storing nothing.
   */
  readonly append: (sessionKey: string, entries: ReadonlyArray<SessionEntry>) => Effect.Effect<void, SessionStoreError | SessionFenced>
  /** Every stored session; one that cannot be read is listed with `problem` rather than failing the list. */
  readonly list: Effect.Effect<ReadonlyArray<SessionInfo>, SessionStoreError>
  /** Deletes a session (a user's decision; the loop never calls it). */
  readonly remove: (sessionKey: string) => Effect.Effect<void, SessionStoreError>
  /** Set by stores that fence commits (`SessionFencing`): what a cluster runner needs for one writer per session. */
  readonly fencing?: SessionFencing
}

/** The session store service. Layers: `SessionStoreMemory`, `SessionStoreJsonl`, `SessionStoreSql` (SQLite, Postgres). */
export class SessionStore extends Context.Service<SessionStore, SessionStoreShape>()("effect-agent-loop/SessionStore") {}
