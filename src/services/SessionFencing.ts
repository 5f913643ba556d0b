/**
 * Fencing of session commits: one writer per session across processes.
 *
 * A cluster runner takes a session's ownership epoch when it starts hosting the session
 * (`SessionFencing.acquire`); every commit of a turn it runs carries that epoch and the request it
 * answers (`CommitTicket`). A store that fences (`SessionStoreShape.fencing`, the SQL store) checks
 * the epoch in the commit's own transaction and rejects a stale one (`SessionFenced`), and records
 * which request the committed entries belong to, so "was this request's turn committed?" is one
 * query (`committed`). Stores without `fencing` (memory, JSON Lines) ignore tickets.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { SessionStoreError } from "../domain/errors.ts"
import type { SessionEntry } from "../domain/SessionLog.ts"

/** What the commits of the current fiber carry: the owner's epoch, and the request the turn answers. */
export interface CommitTicketShape {
  /** The session's ownership epoch the committing runner holds. */
  readonly epoch: number
  /** The cluster request the turn answers; its commits are recorded under it. */
  readonly requestId?: string | undefined
}

/**
 * The ticket of the current fiber's commits; none by default (commits are not fenced). Set by the
 * cluster's session entity around the turns it runs.
 */
export class CommitTicket extends Context.Reference<CommitTicketShape | undefined>("effect-agent-loop/CommitTicket", {
  defaultValue: () => undefined
}) {}

/** A turn's committed entries, as recorded under its request. */
export interface CommittedTurn {
  readonly sessionKey: string
  /** The entries the request's commits appended, in order. */
  readonly entries: ReadonlyArray<SessionEntry>
}

/** What a store that fences offers its cluster runners. */
export interface SessionFencing {
  /**
   * Takes the session for `owner` (a runner's id, unique per process): its epoch, increased unless
   * `owner` already held the session, so a runner's commits from before another took it fail.
   */
  readonly acquire: (sessionKey: string, owner: string) => Effect.Effect<number, SessionStoreError>
  /** The entries committed under the request; none when its turn committed nothing. */
  readonly committed: (requestId: string) => Effect.Effect<Option.Option<CommittedTurn>, SessionStoreError>
  /** Forgets the commit records older than `before` (epoch milliseconds); the entries stay. */
  readonly forget: (before: number) => Effect.Effect<void, SessionStoreError>
}
