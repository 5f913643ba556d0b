/**
 * `SessionStore` in memory: for tests, sub-turns and programs that keep nothing.
 */
import { Effect, Layer } from "effect"
import type { Message } from "../domain/Message.ts"
import { SessionStore, type SessionStoreShape } from "../services/SessionStore.ts"

/** A memory store, optionally seeded with histories. */
export const make = (seed: Readonly<Record<string, ReadonlyArray<Message>>> = {}): Effect.Effect<SessionStoreShape> =>
  Effect.sync(() => {
    const sessions = new Map<string, ReadonlyArray<Message>>(Object.entries(seed))
    return {
      load: (key) => Effect.sync(() => sessions.get(key) ?? []),
      append: (key, messages) => Effect.sync(() => void sessions.set(key, [...(sessions.get(key) ?? []), ...messages])),
      replace: (key, messages) => Effect.sync(() => void sessions.set(key, [...messages])),
      list: Effect.sync(() => [...sessions.keys()]),
      remove: (key) => Effect.sync(() => void sessions.delete(key))
    }
  })

/** The memory store as a layer. */
export const layer = (seed: Readonly<Record<string, ReadonlyArray<Message>>> = {}): Layer.Layer<SessionStore> =>
  Layer.effect(SessionStore, make(seed))
