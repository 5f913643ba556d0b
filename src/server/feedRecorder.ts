/**
 * Records the loop's events into the server's feed, and keeps the server's own approval events in
 * their place among them.
 *
 * The loop publishes to the bus synchronously, but the feed reads its subscription on a fiber of
 * its own, so when a tool call asks for approval, events the turn published just before (the
 * response with the call, another call of the batch starting) may still wait in the
 * subscription. An approval recorded at once would come before them in the feed, and a reader
 * (the chat stream above all) would see the request before the call it is about. `caughtUp`
 * waits until the feed has recorded every event published so far: the approval hook waits for it
 * before the request is recorded. What was published is counted by a second subscription, drained
 * as it is counted, so it holds nothing for long.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { EventBusShape } from "../services/EventBus.ts"
import type { EventFeed } from "./eventFeed.ts"

/** The recorder of one server. */
export interface FeedRecorder {
  /** Succeeds once the feed has recorded every event published before this call. */
  readonly caughtUp: Effect.Effect<void>
}

/** Starts recording the bus into the feed, for the scope. */
export const start = (bus: EventBusShape, feed: EventFeed): Effect.Effect<FeedRecorder, never, Scope.Scope> =>
  Effect.gen(function*() {
    const subscription = yield* bus.subscribe({ strategy: "lossless" })
    const probe = yield* bus.subscribe({ strategy: "lossless" })
    let published = 0
    let recorded = 0
    let waiters: Array<{ readonly target: number; readonly done: () => void }> = []
    const count = () => {
      published += Effect.runSync(probe.takeAll).length
    }
    yield* subscription.stream.pipe(
      Stream.runForEachArray((events) =>
        Effect.sync(() => {
          for (const event of events) feed.record(event)
          recorded += events.length
          count()
          if (waiters.length === 0) return
          const ready = waiters.filter((w) => w.target <= recorded)
          waiters = waiters.filter((w) => w.target > recorded)
          for (const waiter of ready) waiter.done()
        })
      ),
      Effect.forkScoped
    )
    const caughtUp = Effect.suspend(() => {
      count()
      if (recorded >= published) return Effect.void
      const target = published
      return Effect.callback<void>((resume) => {
        const waiter = { target, done: () => resume(Effect.void) }
        waiters.push(waiter)
        return Effect.sync(() => {
          waiters = waiters.filter((w) => w !== waiter)
        })
      })
    })
    return { caughtUp }
  })
