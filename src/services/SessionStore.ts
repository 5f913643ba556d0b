/**
 * `SessionStore`: where each session's history lives between turns.
 */
import { Context, Effect } from "effect"
import type { SessionStoreError } from "../domain/errors.ts"
import type { Message } from "../domain/Message.ts"

/** What every store implements. */
export interface SessionStoreShape {
  /** The history of a session; empty when it does not exist. */
  readonly load: (sessionKey: string) => Effect.Effect<ReadonlyArray<Message>, SessionStoreError>
  /** Appends messages (once per turn, at its end). */
  readonly append: (sessionKey: string, messages: ReadonlyArray<Message>) => Effect.Effect<void, SessionStoreError>
  /** Replaces the whole history (compaction, summaries). */
  readonly replace: (sessionKey: string, messages: ReadonlyArray<Message>) => Effect.Effect<void, SessionStoreError>
  /** Every session key. */
  readonly list: Effect.Effect<ReadonlyArray<string>, SessionStoreError>
  /** Deletes a session. */
  readonly remove: (sessionKey: string) => Effect.Effect<void, SessionStoreError>
}

/** The session store service. Layers: `SessionStoreMemory`, `SessionStoreJsonl`. */
export class SessionStore extends Context.Service<SessionStore, SessionStoreShape>()("effect-agent-loop/SessionStore") {}
