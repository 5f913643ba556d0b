/**
 * The in-memory `EventBus`: one `Mailbox` per subscriber, filled on the publisher's fiber.
 *
 * Publishing is a plain loop over an array of subscribers (replaced, never mutated, when one
 * joins or leaves): no fiber, no lock, no effect per subscriber. A subscriber whose consumer is
 * waiting gets a wake-up task on that consumer's scheduler (never run inline, see `whenReady`);
 * a full mailbox loses an event by the rule in `internal/eventMailbox.ts` and the loss is counted under
 * that event's kind, for the subscriber and for the bus.
 *
 * `stream(...)` registers its subscriber at the call. The first run of the stream takes that
 * subscriber over and removes it when the run ends; later runs subscribe anew. If the stream is
 * never run, a `FinalizationRegistry` removes the subscriber once nothing can run the stream any
 * more (its channel, which every stream derived from it holds, has been garbage-collected).
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type * as Arr from "effect/Array"
import type * as Pull from "effect/Pull"
import { type AgentEvent, type EventKind, kinds as eventKinds } from "../domain/Event.ts"
import {
  EventBus,
  type DropCounts,
  type EventBusShape,
  isLifecycle,
  type SubscribeOptions,
  type Subscription
} from "../services/EventBus.ts"
import { LoopConfig } from "../services/LoopConfig.ts"
import { Mailbox } from "./internal/eventMailbox.ts"

type Counts = Partial<Record<EventKind, number>>

/** A counter per kind, every kind present from the start (one object shape: the design doc's "Performance"). */
const zeroCounts = (): Record<EventKind, number> =>
  Object.fromEntries(eventKinds.map((kind) => [kind, 0])) as Record<EventKind, number>

/** Adds `from` into `into`, leaving out the kinds with no loss. */
const addCounts = (into: Counts, from: DropCounts): Counts => {
  for (const [kind, n] of Object.entries(from) as Array<[EventKind, number]>) if (n > 0) into[kind] = (into[kind] ?? 0) + n
  return into
}

const total = (counts: DropCounts): number => Object.values(counts).reduce((a, b) => a + (b ?? 0), 0)

/** One subscription's state: its mailbox, its losses and the consumers waiting for an event. */
class Subscriber {
  readonly mailbox: Mailbox<AgentEvent>
  readonly kinds: ReadonlySet<EventKind> | undefined
  readonly dropped = zeroCounts()
  /** Wake-ups of the consumers waiting for an event (see `ready`). */
  waiters: Array<() => void> = []
  ended = false
  /** Completes when an event is buffered or the subscription has ended. */
  readonly ready: Effect.Effect<void> = whenReady(this)

  constructor(options: SubscribeOptions, defaultCapacity: number) {
    const strategy = options.strategy ?? "dropping"
    const asked = Number.isNaN(options.capacity) ? defaultCapacity : options.capacity ?? defaultCapacity
    const capacity = strategy === "lossless" ? Infinity : Math.max(1, Math.floor(asked))
    this.mailbox = new Mailbox(capacity, strategy === "sliding" ? "sliding" : "dropping", isLifecycle)
    this.kinds = options.kinds === undefined ? undefined : new Set(options.kinds)
  }

  deliver(event: AgentEvent, lifecycle: boolean): void {
    if (this.kinds !== undefined && !this.kinds.has(event._tag)) return
    const lost = this.mailbox.offer(event, lifecycle)
    if (lost !== undefined) this.dropped[lost._tag]++
    if (this.waiters.length > 0) this.wake()
  }

  /** Ends the subscription: nothing more is delivered; waiting consumers see the end. */
  end(): void {
    this.ended = true
    this.wake()
  }

  private wake(): void {
    const waiters = this.waiters
    this.waiters = []
    for (const waiter of waiters) waiter()
  }
}

/**
 * Waits until `sub` has an event or has ended. The wake-up is a task on the waiting fiber's own
 * scheduler, as `Queue` does it: resuming the fiber directly would run the consumer on the
 * publisher's stack, inside `publish`, so a slow consumer would slow the loop, and a consumer that
 * publishes would deliver its event to later subscribers before the one it reacts to.
 */
const whenReady = (sub: Subscriber): Effect.Effect<void> =>
  Effect.withFiber((fiber) =>
    Effect.callback<void>((resume) => {
      if (sub.mailbox.size > 0 || sub.ended) return resume(Effect.void)
      const waiter = () => fiber.currentDispatcher.scheduleTask(() => resume(Effect.void), 0)
      sub.waiters.push(waiter)
      return Effect.sync(() => {
        sub.waiters = sub.waiters.filter((w) => w !== waiter)
      })
    })
  )

/** The next event; after the end, once empty, waits forever (as a closed subscription has nothing more). */
const takeFrom = (sub: Subscriber): Effect.Effect<AgentEvent> => {
  const take: Effect.Effect<AgentEvent> = Effect.suspend(() => {
    const event = sub.mailbox.shift()
    if (event !== undefined) return Effect.succeed(event)
    return sub.ended ? Effect.never : Effect.andThen(sub.ready, take)
  })
  return take
}

/** Everything buffered, as one batch; waits for at least one event; ends after the end. */
const pullFrom = (sub: Subscriber): Pull.Pull<Arr.NonEmptyReadonlyArray<AgentEvent>> => {
  const pull: Pull.Pull<Arr.NonEmptyReadonlyArray<AgentEvent>> = Effect.suspend(() => {
    if (sub.mailbox.size > 0) return Effect.succeed(sub.mailbox.drain() as unknown as Arr.NonEmptyReadonlyArray<AgentEvent>)
    return sub.ended ? Cause.done() : Effect.andThen(sub.ready, pull)
  })
  return pull
}

const streamFrom = (sub: Subscriber): Stream.Stream<AgentEvent> => Stream.fromPull(Effect.succeed(pullFrom(sub)))

/** Removes never-run streams' subscribers once their streams are unreachable. */
const abandoned = new FinalizationRegistry<() => void>((release) => release())

/**
 * Builds a bus whose subscribers default to `defaultCapacity`. `observe`, when given, sees every
 * published event first, on the publisher's fiber, subscribers or not (the event journal numbers
 * events there); it must be quick and must not throw.
 */
export const make = (defaultCapacity = 16, observe?: (event: AgentEvent) => void): Effect.Effect<EventBusShape> =>
  Effect.sync(() => {
    let subscribers: ReadonlyArray<Subscriber> = []
    // Losses of subscribers that have left; the live ones' are summed when asked for.
    const retiredDropped: Counts = {}

    const add = (options: SubscribeOptions = {}): Subscriber => {
      const sub = new Subscriber(options, defaultCapacity)
      subscribers = [...subscribers, sub]
      return sub
    }
    const remove = (sub: Subscriber): void => {
      if (sub.ended) return
      subscribers = subscribers.filter((s) => s !== sub)
      addCounts(retiredDropped, sub.dropped)
      sub.end()
    }

    const publishUnsafe = (event: AgentEvent): void => {
      if (observe !== undefined) observe(event)
      const current = subscribers
      if (current.length === 0) return
      const lifecycle = isLifecycle(event)
      for (let i = 0; i < current.length; i++) current[i]!.deliver(event, lifecycle)
    }

    const subscribe = (options?: SubscribeOptions) =>
      Effect.map(
        Effect.acquireRelease(Effect.sync(() => add(options)), (sub) => Effect.sync(() => remove(sub))),
        (sub): Subscription => {
          const dropped = Effect.sync((): DropCounts => addCounts({}, sub.dropped))
          return {
            take: takeFrom(sub),
            takeAll: Effect.sync((): ReadonlyArray<AgentEvent> => sub.mailbox.drain()),
            stream: streamFrom(sub),
            dropped,
            droppedTotal: Effect.map(dropped, total)
          }
        }
      )

    const stream = (options?: SubscribeOptions): Stream.Stream<AgentEvent> => {
      // Holds the eager subscriber until a run claims it; the registry's callback must not reach the stream.
      const pending: { sub: Subscriber | undefined } = { sub: add(options) }
      const claim = Effect.sync(() => {
        const sub = pending.sub ?? add(options)
        pending.sub = undefined
        return sub
      })
      const result = Stream.unwrap(Effect.map(Effect.acquireRelease(claim, (sub) => Effect.sync(() => remove(sub))), streamFrom))
      abandoned.register(result.channel, () => {
        if (pending.sub !== undefined) remove(pending.sub)
      })
      return result
    }

    return {
      publish: (event) => Effect.sync(() => publishUnsafe(event)),
      publishUnsafe,
      subscribe,
      stream,
      dropped: Effect.sync((): DropCounts => subscribers.reduce((sum, sub) => addCounts(sum, sub.dropped), { ...retiredDropped })),
      subscribers: Effect.sync(() => subscribers.length)
    } satisfies EventBusShape
  })

/** The bus, with the default capacity taken from `eventBufferCapacity`. */
export const layer: Layer.Layer<EventBus, never, LoopConfig> = Layer.effect(
  EventBus,
  Effect.flatMap(LoopConfig, (config) => make(config.eventBufferCapacity))
)

/** The bus with a fixed default capacity, for use without a `LoopConfig`. */
export const layerCapacity = (capacity = 16): Layer.Layer<EventBus> => Layer.effect(EventBus, make(capacity))
