/**
 * The `EventJournal` layer: numbers every event in the bus's publish path and keeps the session's
 * events in the `SessionStore`'s journal (`SessionStore.journal`), beside its log.
 *
 * - Recording is a plain function the bus calls for every event it publishes (`observe`, given to
 *   `EventBusLive.make`): no subscriber buffer, so nothing is lost to one, and the numbers follow
 *   the publish order. A session's first event in this process waits (in memory, unnumbered) for
 *   the store's last `seq`, read once; every later one is numbered at once.
 * - One worker fiber, owned by the layer's scope, does the store's work in order: those first
 *   reads, and the writes the step boundaries (`flushKinds`) ask for, each session's pending events
 *   in one append. A write is retried while the store's failure is transient; one that still fails
 *   is logged and given up (its events are served from memory while they are among the recent
 *   ones, and missing from the store after). Closing the scope writes what is pending.
 * - Memory holds a session's events not yet written plus at least the last `RETAIN` written ones
 *   (at most twice that: trimmed in steps, so a follower just behind reads from memory); a session whose root turn ended, with everything
 *   written and nobody following, is forgotten (its next event reads its last `seq` again).
 * - Followers are cursors (`read` after the last `seq` they got, then wait for the next event),
 *   woken on their own fiber's scheduler, never on the publisher's stack.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Pull from "effect/Pull"
import * as Queue from "effect/Queue"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import type * as Arr from "effect/Array"
import { retryTransient } from "../domain/connectionFailure.ts"
import type { SessionStoreError } from "../domain/errors.ts"
import type { AgentEvent, EventKind } from "../domain/Event.ts"
import { flushKinds, type JournaledEvent } from "../domain/EventJournal.ts"
import { EventBus } from "../services/EventBus.ts"
import { EventJournal, type EventJournalShape } from "../services/EventJournal.ts"
import { LoopConfig } from "../services/LoopConfig.ts"
import { SessionStore, type SessionStoreShape } from "../services/SessionStore.ts"
import * as EventBusLive from "./EventBus.ts"

/** Written events kept in memory per session, for followers just behind. */
export const RETAIN = 1024

const flushing: Readonly<Partial<Record<EventKind, true>>> = Object.fromEntries(flushKinds.map((k) => [k, true]))

/** A session's journal in memory. */
interface Held {
  /** The last `seq` given; `undefined` until the store's last one is read. */
  last: number | undefined
  /** Events recorded before `last` was known, in order. */
  readonly waiting: Array<AgentEvent>
  /**
   * Numbered events, the last one numbered `last` and each one before it one less (no wrapper per
   * event on the publish path): every one not yet written, and recent written ones before them.
   */
  events: Array<AgentEvent>
  /** The last `seq` in the store. */
  stored: number
  /** The last event was the end of a root turn: the session may be forgotten once written. */
  ended: boolean
}

/** The `seq` of a session's first held event. */
const firstSeq = (held: Held): number => held.last! + 1 - held.events.length

/** Held events from index `from` on, with their `seq`s (the first held one's is `first`). */
const numbered = (events: ReadonlyArray<AgentEvent>, from: number, first: number): Array<JournaledEvent> => {
  const out: Array<JournaledEvent> = new Array(Math.max(0, events.length - from))
  for (let i = from; i < events.length; i++) out[i - from] = { seq: first + i, event: events[i]! }
  return out
}

/** Followers of a session: a version bumped at every new event, and the wake-ups of those waiting. */
interface Watch {
  version: number
  waiters: Array<() => void>
  followers: number
}

/** The journal and the function the bus calls for each event it publishes. */
export interface Recording {
  readonly journal: EventJournalShape
  readonly observe: (event: AgentEvent) => void
}

/** A journal over `store` (memory only when it has no `journal`); its worker lives in the scope. */
export const make = (store: SessionStoreShape) =>
  Effect.gen(function*() {
    const stored = store.journal
    const sessions = new Map<string, Held>()
    const watches = new Map<string, Watch>()
    const work = yield* Queue.unbounded<string>()
    // sessions the worker has been asked to write and has not started on: asked once until then
    const asked = new Set<string>()
    const lock = yield* Semaphore.make(1)

    const notify = (key: string) => {
      const watch = watches.get(key)
      if (watch === undefined) return
      watch.version++
      const waiters = watch.waiters
      watch.waiters = []
      for (const waiter of waiters) waiter()
    }

    const number = (key: string, held: Held, event: AgentEvent) => {
      const seq = held.last! + 1
      held.last = seq
      held.events.push(event)
      held.ended = event._tag === "TurnEnd" && event.depth === 0
      if (flushing[event._tag] === true && !asked.has(key)) {
        asked.add(key)
        Queue.offerUnsafe(work, key)
      }
    }

    const observe = (event: AgentEvent): void => {
      const key = event.sessionKey
      let held = sessions.get(key)
      if (held === undefined) {
        held = { last: stored === undefined ? 0 : undefined, waiting: [], events: [], stored: 0, ended: false }
        sessions.set(key, held)
        if (held.last === undefined) Queue.offerUnsafe(work, key)
      }
      if (held.last === undefined) held.waiting.push(event)
      else number(key, held, event)
      notify(key)
    }

    /** Reads the store's last `seq` for a session still waiting for it, and numbers what waited. */
    const start = (key: string, held: Held) =>
      Effect.gen(function*() {
        if (held.last !== undefined || stored === undefined) return
        const last = yield* retryTransient(stored.last(key)).pipe(
          Effect.catch((e) => Effect.as(Effect.logWarning(`event journal of ${JSON.stringify(key)}: ${e.message}; numbering from 1`), 0))
        )
        held.last = last
        held.stored = last
        for (const event of held.waiting.splice(0)) number(key, held, event)
        notify(key)
      })

    /** Writes a session's pending events in one append, keeps `RETAIN` written ones, forgets an ended session. */
    const write = (key: string, held: Held) =>
      Effect.gen(function*() {
        // seqs are consecutive: the unwritten ones are a suffix, found by index
        const first = firstSeq(held)
        const from = Math.max(0, held.stored + 1 - first)
        const pending = numbered(held.events, from, first)
        if (pending.length > 0 && stored !== undefined) {
          // given up after the transient retries: not retried with every later boundary (a store
          // that refuses these rows, say another writer's seqs, would refuse them forever)
          yield* retryTransient(stored.append(key, pending)).pipe(
            Effect.catch((e) =>
              Effect.logWarning(
                `event journal of ${JSON.stringify(key)}: events ${pending[0]!.seq} to ${pending.at(-1)!.seq} not stored (kept in memory while recent): ${e.message}`
              )
            )
          )
        }
        held.stored = pending.at(-1)?.seq ?? held.stored
        // trimmed when twice over, so a turn's boundaries do not each copy the retained events
        const written = held.stored + 1 - first
        if (written > 2 * RETAIN) held.events = held.events.slice(written - RETAIN)
        if (held.ended && held.last === held.stored && stored !== undefined && (watches.get(key)?.followers ?? 0) === 0) {
          sessions.delete(key)
        }
      })

    /** Does what a session needs: its first read, then its write. */
    const settle = (key: string) =>
      lock.withPermits(1)(Effect.suspend(() => {
        asked.delete(key)
        const held = sessions.get(key)
        if (held === undefined) return Effect.void
        return held.last === undefined ? Effect.andThen(start(key, held), write(key, held)) : write(key, held)
      }))

    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.takeAll(work), (keys) => Effect.forEach(new Set(keys), settle, { discard: true }))))

    const flush: Effect.Effect<void> = Effect.suspend(() => Effect.forEach([...sessions.keys()], settle, { discard: true }))
    yield* Effect.addFinalizer(() => flush)

    const read = (key: string, after = 0): Effect.Effect<ReadonlyArray<JournaledEvent>, SessionStoreError> =>
      Effect.suspend(() => {
        const fromMemory = held(key, after)
        if (fromMemory !== undefined || stored === undefined) return Effect.succeed(fromMemory ?? [])
        return Effect.map(stored.read(key, after), (fromStore) => {
          // what was written while the store was read is still held (`RETAIN`): joined where it follows on
          const next = (fromStore.at(-1)?.seq ?? after) + 1
          const more = held(key, next - 1)
          return more === undefined || more.length === 0 ? fromStore : [...fromStore, ...more]
        })
      })

    /** The held events after `after`, when memory holds the one right after it (else `undefined`). */
    const held = (key: string, after: number): ReadonlyArray<JournaledEvent> | undefined => {
      const h = sessions.get(key)
      if (h === undefined || h.last === undefined) return undefined
      if (after >= h.last) return []
      const first = firstSeq(h)
      if (h.events.length === 0 || first > after + 1) return stored === undefined ? numbered(h.events, 0, first) : undefined
      return numbered(h.events, after + 1 - first, first)
    }

    const last = (key: string): Effect.Effect<number, SessionStoreError> =>
      Effect.suspend(() => {
        const known = sessions.get(key)?.last
        if (known !== undefined) return Effect.succeed(known)
        return stored === undefined ? Effect.succeed(0) : stored.last(key)
      })

    const follow = (key: string, after = 0): Stream.Stream<JournaledEvent, SessionStoreError> => {
      const register = Effect.sync(() => {
        const watch = watches.get(key) ?? { version: 0, waiters: [], followers: 0 }
        watch.followers++
        watches.set(key, watch)
        return watch
      })
      const unregister = (watch: Watch) =>
        Effect.sync(() => {
          if (--watch.followers === 0) watches.delete(key)
        })
      return Stream.unwrap(Effect.map(Effect.acquireRelease(register, unregister), (watch) => {
        let cursor = after
        const pull: Pull.Pull<Arr.NonEmptyReadonlyArray<JournaledEvent>, SessionStoreError> = Effect.suspend(() => {
          const seen = watch.version
          return Effect.flatMap(read(key, cursor), (events) => {
            if (events.length === 0) return Effect.andThen(changed(watch, seen), pull)
            cursor = events.at(-1)!.seq
            return Effect.succeed(events as Arr.NonEmptyReadonlyArray<JournaledEvent>)
          })
        })
        return Stream.fromPull(Effect.succeed(pull))
      }))
    }

    return {
      journal: { read, follow, last, flush } satisfies EventJournalShape,
      observe
    } satisfies Recording
  })

/** Waits until `watch` has moved past `seen`; the wake-up is a task on the waiting fiber's scheduler. */
const changed = (watch: Watch, seen: number): Effect.Effect<void> =>
  Effect.withFiber((fiber) =>
    Effect.callback<void>((resume) => {
      if (watch.version !== seen) return resume(Effect.void)
      const waiter = () => fiber.currentDispatcher.scheduleTask(() => resume(Effect.void), 0)
      watch.waiters.push(waiter)
      return Effect.sync(() => {
        watch.waiters = watch.waiters.filter((w) => w !== waiter)
      })
    })
  )

/**
 * The bus and the journal together: a bus (`EventBusLive`) whose every published event is
 * journaled, over the `SessionStore` in context. `AgentLoopLive.layer` uses it in place of the
 * bus alone.
 */
export const layer: Layer.Layer<EventBus | EventJournal, never, LoopConfig | SessionStore> = Layer.effectContext(
  Effect.gen(function*() {
    const config = yield* LoopConfig
    const recording = yield* make(yield* SessionStore)
    const bus = yield* EventBusLive.make(config.eventBufferCapacity, recording.observe)
    return Context.add(Context.make(EventBus, bus), EventJournal, recording.journal)
  })
)
