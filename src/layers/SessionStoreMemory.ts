/**
 * `SessionStore` in memory: for tests, sub-turns and programs that keep nothing. Its event
 * journal is kept per session beside the log and removed with it, bounded: the newest
 * `journalCapacity` events of each session (default `JOURNAL_CAPACITY`), since a journal holds
 * every streamed delta and memory is all this store has. A reader asking for older ones gets the
 * oldest kept onwards.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { JournaledEvent } from "../domain/EventJournal.ts"
import * as SessionLog from "../domain/SessionLog.ts"
import { type SessionInfo, SessionStore, type SessionStoreShape } from "../services/SessionStore.ts"

interface Stored {
  readonly entries: Array<SessionLog.SessionEntry>
  updatedAt: number | undefined
}

/** The events of a session the memory store's journal keeps by default (the newest). */
export const JOURNAL_CAPACITY = 10_000

/** A memory store, optionally seeded with logs (messages and compaction records). */
export const make = (
  seed: Readonly<Record<string, ReadonlyArray<SessionLog.SessionEntry>>> = {},
  options: { readonly journalCapacity?: number } = {}
): Effect.Effect<SessionStoreShape> =>
  Effect.sync(() => {
    const sessions = new Map<string, Stored>(
      Object.entries(seed).map(([key, entries]) => [key, { entries: [...entries], updatedAt: undefined }])
    )
    const journals = new Map<string, Array<JournaledEvent>>()
    const capacity = Math.max(1, options.journalCapacity ?? JOURNAL_CAPACITY)
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
      remove: (key) =>
        Effect.sync(() => {
          sessions.delete(key)
          journals.delete(key)
        }),
      journal: {
        append: (key, events) =>
          Effect.sync(() => {
            if (events.length === 0) return
            let journal = journals.get(key) ?? []
            for (const event of events) journal.push(event)
            // trimmed in steps (at twice the capacity), so an append does not copy it each time
            if (journal.length > 2 * capacity) journal = journal.slice(journal.length - capacity)
            journals.set(key, journal)
          }),
        read: (key, after, limit = Infinity) =>
          Effect.sync(() => {
            const journal = journals.get(key) ?? []
            // seqs are consecutive from 1, so `after` is an index; a journal that starts later is searched
            const from = journal[0] === undefined ? 0 : Math.max(0, after + 1 - journal[0].seq)
            return journal.slice(from, from + limit).filter((event) => event.seq > after)
          }),
        last: (key) => Effect.sync(() => journals.get(key)?.at(-1)?.seq ?? 0)
      }
    }
  })

/** The memory store as a layer. */
export const layer = (
  seed: Readonly<Record<string, ReadonlyArray<SessionLog.SessionEntry>>> = {},
  options: { readonly journalCapacity?: number } = {}
): Layer.Layer<SessionStore> => Layer.effect(SessionStore, make(seed, options))
