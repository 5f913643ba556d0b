/**
 * A session's journal followed from the store rather than from this process's own events: for a
 * server whose sessions run in other processes (a cluster's runners, where a session runs on
 * whichever runner has it now). The journal the session's runner writes is read every `interval`
 * from the `seq` the client last got, so any runner serves any session's stream with the same ids,
 * a client that reconnects to another runner with `Last-Event-ID` gets exactly what it missed, and
 * a turn that ends on another runner than the one it started on is seen to end.
 *
 * The cost is a read of the store per connected client per interval; the events come as the
 * session's runner writes them (at each step boundary: a turn's start, each model reply, its end).
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { SessionStoreError } from "../domain/errors.ts"
import type { JournaledEvent } from "../domain/EventJournal.ts"
import type { EventJournalStore } from "../services/SessionStore.ts"

/** How many events one read takes at most. */
const PAGE = 500

/** The session's stored events after `after`, then every one stored later, read every `interval`; never ends by itself. */
export const pollJournal = (
  journal: EventJournalStore,
  sessionKey: string,
  after: number,
  interval: Duration.Duration
): Stream.Stream<JournaledEvent, SessionStoreError> =>
  Stream.suspend(() => {
    let cursor = after
    // suspended: each read starts from the cursor as it is then
    const next: Effect.Effect<ReadonlyArray<JournaledEvent>, SessionStoreError> = Effect.suspend(() =>
      Effect.flatMap(journal.read(sessionKey, cursor, PAGE), (events) => {
        if (events.length === 0) return Effect.andThen(Effect.sleep(interval), next)
        cursor = events.at(-1)!.seq
        return Effect.succeed(events)
      })
    )
    return Stream.flattenIterable(Stream.fromEffectRepeat(next))
  })
