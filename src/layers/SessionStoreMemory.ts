/**
 * `SessionStore` in memory: for tests, sub-turns and programs that keep nothing.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SessionLog from "../domain/SessionLog.ts"
import { type SessionInfo, SessionStore, type SessionStoreShape } from "../services/SessionStore.ts"

interface Stored {
  readonly entries: Array<SessionLog.SessionEntry>
  updatedAt: number | undefined
}

/** A memory store, optionally seeded with logs (messages and compaction records). */
export const make = (
  seed: Readonly<Record<string, ReadonlyArray<SessionLog.SessionEntry>>> = {}
): Effect.Effect<SessionStoreShape> =>
  Effect.sync(() => {
    const sessions = new Map<string, Stored>(
      Object.entries(seed).map(([key, entries]) => [key, { entries: [...entries], updatedAt: undefined }])
    )
    const info = (sessionKey: string, stored: Stored): SessionInfo => ({
      sessionKey,
      ...(stored.updatedAt === undefined ? {} : { updatedAt: stored.updatedAt }),
      ...SessionLog.describe(stored.entries)
    })
    return {
      load: (key) => Effect.sync(() => SessionLog.view(sessions.get(key)?.entries ?? [])),
      log: (key) => Effect.sync(() => [...(sessions.get(key)?.entries ?? [])]),
      append: (key, entries) =>
        Effect.clockWith((clock) =>
          Effect.sync(() => {
            if (entries.length === 0) return
            const stored = sessions.get(key) ?? { entries: [], updatedAt: undefined }
            stored.entries.push(...entries)
            stored.updatedAt = clock.currentTimeMillisUnsafe()
            sessions.set(key, stored)
          })
        ),
      list: Effect.sync(() => [...sessions].map(([key, stored]) => info(key, stored))),
      remove: (key) => Effect.sync(() => void sessions.delete(key))
    }
  })

/** The memory store as a layer. */
export const layer = (
  seed: Readonly<Record<string, ReadonlyArray<SessionLog.SessionEntry>>> = {}
): Layer.Layer<SessionStore> => Layer.effect(SessionStore, make(seed))
