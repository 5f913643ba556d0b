/**
 * The server's numbered event feed: every event the loop publishes (and the server's own approval
 * events), each given the next number, kept in a bounded replay buffer, and handed to the
 * connected clients. The number is the SSE `id:`; a client that reconnects with `Last-Event-ID`
 * gets the buffered events after it, and nothing twice.
 *
 * Each client has a bounded buffer of its own: a client that stops reading never slows a turn or
 * another client. Past its bound its events are counted, not kept, and the next thing it reads is
 * a `gap` event with the count, after which it resyncs (from the session's history, or by
 * reconnecting with its last id while the replay buffer still reaches back).
 */
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../domain/Event.ts"
import type { Approval } from "./Api.ts"

/** The server's own events: an approval requested, and how it ended. */
export type ApprovalEvent =
  | { readonly _tag: "ApprovalRequested"; readonly sessionKey: string; readonly turnId: string; readonly approval: Approval }
  | { readonly _tag: "ApprovalResolved"; readonly sessionKey: string; readonly turnId: string; readonly approval: Approval }

/** What the feed carries. */
export type FeedEvent = AgentEvent | ApprovalEvent

/** An event and its number (the SSE `id`). */
export interface Numbered {
  readonly id: number
  readonly event: FeedEvent
}

/** A frame of the stream, as the client reads it. */
export type Frame =
  | { readonly _tag: "Event"; readonly item: Numbered }
  /** Events this client missed: past its buffer (`overflow`), or gone from the replay buffer (`replay`). */
  | { readonly _tag: "Gap"; readonly missed: number; readonly cause: "overflow" | "replay" }

/** The feed; synchronous, fed by one fiber. */
export class EventFeed {
  private next = 1
  private readonly ring: Array<Numbered> = []
  private readonly listeners = new Set<(item: Numbered) => void>()
  readonly replay: number

  constructor(replay: number) {
    this.replay = Math.max(1, replay)
  }

  /** Numbers `event`, keeps it, and hands it to every listener. */
  record(event: FeedEvent): void {
    const item: Numbered = { id: this.next++, event }
    this.ring.push(item)
    if (this.ring.length > this.replay) this.ring.splice(0, this.ring.length - this.replay)
    for (const listener of this.listeners) listener(item)
  }

  /** The number of the last event (0 before any). */
  get lastId(): number {
    return this.next - 1
  }

  /** The buffered events after `lastId`, and how many after it left the buffer already. */
  since(lastId: number): { readonly items: ReadonlyArray<Numbered>; readonly lost: number } {
    const oldest = this.ring[0]?.id ?? this.next
    const start = this.ring.findIndex((item) => item.id > lastId)
    return { items: start < 0 ? [] : this.ring.slice(start), lost: Math.max(0, oldest - lastId - 1) }
  }

  /** Calls `listener` with every event recorded from now on; returns the function that stops it. */
  listen(listener: (item: Numbered) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Clients connected now. */
  get clients(): number {
    return this.listeners.size
  }

  /**
   * A client's frames: after `lastId` (replayed, then live), or only what happens from now on;
   * only the events `filter` keeps. Its buffer holds `buffer` frames.
   */
  frames(options: { readonly lastId: number | undefined; readonly buffer: number; readonly filter: (event: FeedEvent) => boolean }): Stream.Stream<Frame> {
    return Stream.callback<Frame>((queue) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          // an id past the last one is from an earlier server: start from now, with the gap unknown
          const stale = options.lastId !== undefined && options.lastId > this.lastId
          let sent = options.lastId === undefined || stale ? this.lastId : options.lastId
          let missed = 0
          const offer = (frame: Frame) => Queue.offerUnsafe(queue, frame)
          const send = (item: Numbered) => {
            // listening starts before the replay: ids drop what both deliver
            if (item.id <= sent) return
            sent = item.id
            if (!options.filter(item.event)) return
            if (missed > 0) {
              if (!offer({ _tag: "Gap", missed, cause: "overflow" })) {
                missed++
                return
              }
              missed = 0
            }
            if (!offer({ _tag: "Event", item })) missed++
          }
          const stop = this.listen(send)
          if (options.lastId !== undefined && !stale) {
            const replay = this.since(options.lastId)
            if (replay.lost > 0) offer({ _tag: "Gap", missed: replay.lost, cause: "replay" })
            for (const item of replay.items) send(item)
          }
          return stop
        }),
        (stop) => Effect.sync(stop)
      ), { bufferSize: Math.max(2, options.buffer), strategy: "dropping" })
  }
}
