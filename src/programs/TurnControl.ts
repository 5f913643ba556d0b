/**
 * The control block of a running turn: what the outside (steering, follow-ups, interrupts,
 * sub-turn results) hands to the inside, and what `activeTurn` shows.
 *
 * The queues are plain arrays mutated in `Effect.sync`: fibers interleave only at yield points,
 * so each operation is atomic, and the turn reads them only at its checkpoints.
 */
import { Deferred, Effect, Exit, Fiber, Option, Scope } from "effect"
import { NoActiveTurn, SteeringQueueFull } from "../domain/errors.ts"
import type { EventBase } from "../domain/Event.ts"
import type { HookContext } from "../domain/Hook.ts"
import type { ModelOptions } from "../domain/ModelOptions.ts"
import type { TurnInfo, TurnPhase } from "../domain/Turn.ts"

/** An async sub-turn result waiting for the parent's next provider call. */
export interface PendingResult {
  readonly childTurnId: string
  readonly content: string
}

/** A running turn's shared state. */
export interface TurnControl extends ControlOptions {
  iteration: number
  phase: TurnPhase
  readonly steering: Array<string>
  readonly followUps: Array<string>
  /** Steering already drained into the conversation; handed back as follow-ups if the turn is rolled back. */
  readonly steered: Array<string>
  /** Completed with the caller's hint by `interruptGraceful`. */
  readonly graceful: Deferred.Deferred<string | undefined>
  readonly pending: Array<PendingResult>
  readonly children: Map<string, TurnControl>
  /** The fiber running the turn's body, interrupted by a hard abort. */
  fiber: Fiber.Fiber<unknown, unknown> | undefined
  /** Owns the turn's detached sub-turns; closed when the turn ends, which stops them. */
  scope: Scope.Closeable | undefined
  /** Critical detached sub-turns: they outlive a normal end, not a hard abort. */
  readonly critical: Set<Fiber.Fiber<unknown, unknown>>
  /** Set once the turn stopped taking input (results after this are orphans). */
  closed: boolean
  /** Set once a hard abort was requested and announced (`InterruptReceived{hard}`, published once). */
  hardAbortAnnounced: boolean
}

/** What a new control block needs. */
export interface ControlOptions {
  readonly turnId: string
  readonly sessionKey: string
  readonly depth: number
  readonly parentTurnId: string | undefined
  readonly startedAt: number
  readonly steeringCapacity: number
  readonly pendingCapacity: number
  /** The tools the turn may use (`undefined`: all); inherited by sub-turns that name none. */
  readonly toolNames?: ReadonlyArray<string> | undefined
  /** The model the turn talks to; the default for its sub-turns. */
  readonly model: string
  /** The turn's model options (the config's under its own); the default for its sub-turns. */
  readonly modelOptions?: ModelOptions | undefined
}

/** A fresh control block, made synchronously so that routing can check-and-start atomically. */
export const makeUnsafe = (options: ControlOptions): TurnControl => ({
  ...options,
  iteration: 0,
  phase: "starting",
  steering: [],
  followUps: [],
  steered: [],
  graceful: Deferred.makeUnsafe<string | undefined>(),
  pending: [],
  children: new Map(),
  fiber: undefined,
  scope: undefined,
  critical: new Set(),
  closed: false,
  hardAbortAnnounced: false
})

/** Queues steering; fails when the queue is full, or when the turn no longer takes input. */
export const steer = (control: TurnControl, message: string): Effect.Effect<void, SteeringQueueFull | NoActiveTurn> =>
  Effect.suspend((): Effect.Effect<void, SteeringQueueFull | NoActiveTurn> => {
    if (control.closed) return Effect.fail(new NoActiveTurn({ sessionKey: control.sessionKey }))
    if (control.steering.length >= control.steeringCapacity) {
      return Effect.fail(new SteeringQueueFull({ sessionKey: control.sessionKey, capacity: control.steeringCapacity }))
    }
    control.steering.push(message)
    return Effect.void
  })

/** Takes every queued steering message at once. */
export const drainSteering = (control: TurnControl): Effect.Effect<ReadonlyArray<string>> =>
  Effect.sync(() => {
    const drained = control.steering.splice(0, control.steering.length)
    control.steered.push(...drained)
    return drained
  })

/** Takes every pending sub-turn result at once. */
export const drainPending = (control: TurnControl): Effect.Effect<ReadonlyArray<PendingResult>> =>
  Effect.sync(() => control.pending.splice(0, control.pending.length))

/** Offers a sub-turn result; says why when it cannot be delivered. */
export const offerPending = (control: TurnControl, result: PendingResult): Effect.Effect<"delivered" | "parent_ended" | "queue_full"> =>
  Effect.sync(() => {
    if (control.closed) return "parent_ended"
    if (control.pending.length >= control.pendingCapacity) return "queue_full"
    control.pending.push(result)
    return "delivered"
  })

/** Whether a graceful interrupt was requested, without its hint: a plain check for the hot path. */
export const gracefulAsked = (control: TurnControl): boolean => Deferred.isDoneUnsafe(control.graceful)

/** Whether a graceful interrupt was requested, and its hint. */
export const gracefulRequested = (control: TurnControl): Effect.Effect<{ readonly hint: string | undefined } | undefined> =>
  Effect.flatMap(Deferred.poll(control.graceful), Option.match({
    onNone: () => Effect.succeed(undefined),
    onSome: (hint) => Effect.map(hint, (value) => ({ hint: value }))
  }))

/** The fields of every event of this turn, but `at` (two literals: built per tool call, a spread costs more than the object). */
export const eventBase = (control: TurnControl): Omit<EventBase, "at"> =>
  control.parentTurnId === undefined
    ? { turnId: control.turnId, sessionKey: control.sessionKey, iteration: control.iteration, depth: control.depth }
    : {
      turnId: control.turnId,
      sessionKey: control.sessionKey,
      iteration: control.iteration,
      depth: control.depth,
      parentTurnId: control.parentTurnId
    }

/** Where hooks run. */
export const hookContext = (control: TurnControl): HookContext => eventBase(control)

/** The public view of a turn. */
export const info = (control: TurnControl): TurnInfo => ({
  turnId: control.turnId,
  sessionKey: control.sessionKey,
  iteration: control.iteration,
  startedAt: control.startedAt,
  ...(control.parentTurnId === undefined ? {} : { parentTurnId: control.parentTurnId }),
  childTurnIds: [...control.children.keys()],
  phase: control.phase,
  depth: control.depth
})

/**
 * Releases the turn's detached sub-turns when it ends: closing its scope stops the non-critical
 * ones; after a hard abort the critical ones are interrupted too.
 */
export const releaseChildren = (control: TurnControl, aborted: boolean): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (control.scope) yield* Scope.close(control.scope, Exit.void)
    if (aborted) yield* Effect.forEach([...control.critical], Fiber.interrupt, { discard: true, concurrency: "unbounded" })
  })
