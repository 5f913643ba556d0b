/**
 * `SessionStore`: where each session's log lives between turns (DESIGN §8).
 *
 * The log is append-only (`SessionLog`): turns append what they produced and their outcome,
 * compaction, summaries and rewinds append a record, and nothing the loop does deletes a stored
 * message. Beside the log, a store keeps the session's event journal (`journal`).
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { InvalidRewind, type SessionFenced, type SessionStoreError } from "../domain/errors.ts"
import type { JournaledEvent } from "../domain/EventJournal.ts"
import type { TurnCheckpoint } from "../domain/Checkpoint.ts"
import type { PausedApproval, PausedCall } from "../domain/PausedTurn.ts"
import type { Message } from "../domain/Message.ts"
import { type Rewind, rewindTo, type SessionEntry } from "../domain/SessionLog.ts"
import type { TurnStatus } from "../domain/Turn.ts"
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
  /** How the session's last turn ended (its turn-outcome record); absent before its first turn ends, and for logs written before these records. */
  readonly status?: TurnStatus
  /** Why the session cannot be read; the other fields are then mostly absent. */
  readonly problem?: string
}

/**
 * A store's event journal (`EventJournal` writes and reads it): the session's events with their
 * sequence numbers, kept under the session's key beside its log, as long as the log (`remove`
 * deletes both). Written by one journal per session at a time (the loop runs a session in one
 * place; the cluster fences it).
 */
export interface EventJournalStore {
  /** Appends events whose `seq`s follow the last stored one, in one atomic write. */
  readonly append: (sessionKey: string, events: ReadonlyArray<JournaledEvent>) => Effect.Effect<void, SessionStoreError>
  /** The stored events with `seq` greater than `after`, in order, at most `limit` of them (default all). */
  readonly read: (sessionKey: string, after: number, limit?: number) => Effect.Effect<ReadonlyArray<JournaledEvent>, SessionStoreError>
  /** The last stored `seq`; 0 when the session has no journal. */
  readonly last: (sessionKey: string) => Effect.Effect<number, SessionStoreError>
}

/**
 * Where a store keeps turns paused on a call waiting for approval (`PausedTurn.ts`), beside the
 * session's log and removed with it: one record per call, by its approval's id, from the pause
 * until its turn ends.
 */
export interface PausedTurnStore {
  /** Keeps a paused call, replacing the one kept under its approval's id. */
  readonly put: (call: PausedCall) => Effect.Effect<void, SessionStoreError>
  /** Replaces a kept call's approval (its decision); nothing when it is not kept. */
  readonly decide: (approval: PausedApproval) => Effect.Effect<void, SessionStoreError>
  /** Replaces the checkpoint of every kept call of the checkpoint's turn (the turn went on past its pause). */
  readonly progress: (sessionKey: string, checkpoint: TurnCheckpoint) => Effect.Effect<void, SessionStoreError>
  /** Every kept call, of every session, oldest first. */
  readonly list: Effect.Effect<ReadonlyArray<PausedCall>, SessionStoreError>
  /** Forgets the calls of a turn that ended. */
  readonly forget: (sessionKey: string, turnId: string) => Effect.Effect<void, SessionStoreError>
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
  /** Deletes a session, its log and its event journal (a user's decision; the loop never calls it). */
  readonly remove: (sessionKey: string) => Effect.Effect<void, SessionStoreError>
  /** Set by stores that fence commits (`SessionFencing`): what a cluster runner needs for one writer per session. */
  readonly fencing?: SessionFencing
  /** The store's event journal. The built-in stores have one; without it `EventJournal` keeps events in memory only. */
  readonly journal?: EventJournalStore
  /** Turns paused on a call waiting for approval, kept to outlive the process; the SQL store has it. */
  readonly paused?: PausedTurnStore
}

/** The session store service. Layers: `SessionStoreMemory`, `SessionStoreJsonl`, `SessionStoreSql` (SQLite, Postgres). */
export class SessionStore extends Context.Service<SessionStore, SessionStoreShape>()("effect-agent-loop/SessionStore") {}

/**
 * Rewinds a session's conversation to before its `toUserMessage`-th user message (0: the first of
 * its current view): appends a rewind record (`SessionLog.Rewind`), so the next turn starts from
 * the messages before it, while every later message stays in the log as an abandoned branch.
 * Fails with `InvalidRewind`, appending nothing, when the view has no such user message. Run it
 * between turns: a turn running meanwhile commits after the rewind (its messages follow it).
 */
export const rewindSession = (
  sessionKey: string,
  toUserMessage: number
): Effect.Effect<Rewind, SessionStoreError | SessionFenced | InvalidRewind, SessionStore> =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const entries = yield* store.log(sessionKey)
    const record = rewindTo(entries, toUserMessage, yield* Clock.currentTimeMillis)
    if (record._tag === "Failure") return yield* new InvalidRewind({ sessionKey, message: record.failure })
    yield* store.append(sessionKey, [record.success])
    return record.success
  })
