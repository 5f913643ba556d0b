/**
 * The session runner: one model of a session, whichever door drives it (DESIGN §5) — the loop's
 * `turn` and router (`AgentLoopProgram.ts`), the cluster's session entity, `chat`.
 *
 * - Per-session order: a session's turns and summaries take its lock in turn, first come, first served.
 * - Drains (`drain`): the one way turns follow each other — a turn, then the follow-ups it leaves
 *   and the messages that waited behind it, one turn at a time, each door replying as it likes.
 * - Idle release: a session no turn, summary or drain holds is ended (`sessionEnd`) and forgotten
 *   once it has been idle for `sessionIdleTimeout`, so a loop serving many keys holds only the
 *   recent ones; a later turn on the key begins it again on its stored history.
 *
 * The state and every change to it are `sessionState.ts`; this module carries the changes out.
 */
import type * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"
import type { Content } from "../../domain/Message.ts"
import type { TurnResult } from "../../domain/Turn.ts"
import type { TurnOptions } from "../../services/AgentLoop.ts"
import {
  type Action,
  advance,
  currentTurn,
  type Drain,
  type Early,
  type Event,
  type Idle,
  queue,
  type Queued,
  type Running,
  type State,
  type Step,
  startDrain,
  transition
} from "./sessionState.ts"
import type * as RunningTurn from "./runningTurn.ts"

export type { Queued, Step } from "./sessionState.ts"

/** Where a drain's waiting messages are kept, and how it learns its next step. */
export interface Line {
  /** After a turn: the next step (the follow-ups it left first, then what waited), or none: the drain is over. */
  readonly next: (followUps: ReadonlyArray<string>) => Effect.Effect<Step | undefined>
  /** The drain stopped before its end: what waited behind it is dropped. */
  readonly stop: Effect.Effect<void>
}

/**
 * A drain: runs `first`, then the follow-ups each turn leaves and the messages that waited behind
 * it (`line`), one at a time, until none is left. `each` runs one step's turn with what its door
 * adds (the router's reply, a cluster request's checkpoint and fence, chat's images) and gives its
 * result, or `undefined` when it dropped the step. Interrupted, it stops at the step it was running.
 */
export const drain = <E, R>(first: Step, line: Line, each: (step: Step) => Effect.Effect<TurnResult | undefined, E, R>): Effect.Effect<void, E, R> =>
  // interruptible only inside a step: a drain whose line says it is over has ended, whatever comes next
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      let step: Step | undefined = first
      while (step !== undefined) {
        const exit: Exit.Exit<TurnResult | undefined, E> = yield* Effect.exit(restore(each(step)))
        if (Exit.isFailure(exit)) return yield* Effect.andThen(line.stop, exit)
        step = yield* line.next(exit.value?.followUps ?? [])
      }
    })
  )

/** A line a door keeps itself (chat's typed lines, a cluster request's follow-ups), drained by one drain at a time. */
export interface OwnLine extends Line {
  /** A message: the first step of a new drain, which the caller runs (`drain`), or `undefined` when it waits behind the running one. */
  readonly offer: (message: Queued) => Step | undefined
  /** Whether a drain runs on the line. */
  readonly busy: () => boolean
}

const noEarlyTurns: Early = () => undefined

/** A line of a door's own; its turns are made as they start. */
export const makeLine = (): OwnLine => {
  let current: Drain | undefined
  return {
    offer: (message) => {
      if (current !== undefined) {
        current = queue(current, message)
        return undefined
      }
      const started = startDrain(message, noEarlyTurns)
      current = started.drain
      return started.step
    },
    next: (followUps) =>
      Effect.sync(() => {
        if (current === undefined) return undefined
        const { drain, step } = advance(current, followUps, noEarlyTurns)
        current = drain
        return step
      }),
    stop: Effect.sync(() => {
      current = undefined
    }),
    busy: () => current !== undefined
  }
}

/** What the runner needs of its loop. */
export interface Loop {
  /** Makes a turn of the session: early for a routed message, or as a turn takes the lock. */
  readonly makeTurn: (sessionKey: string, clock: Clock.Clock, options: TurnOptions) => RunningTurn.RunningTurn
  /** Runs a turn that holds the session's lock; `first`: the first of this life of the session (`sessionStart` runs). */
  readonly runTurn: (turn: RunningTurn.RunningTurn, input: Content, options: TurnOptions, first: boolean) => Effect.Effect<TurnResult>
  /** What runs after a turn, under the session's lock (its summary), if anything. */
  readonly afterTurn: (turn: RunningTurn.RunningTurn, result: TurnResult) => Effect.Effect<void> | undefined
  /** Ends a session that started (`sessionEnd`). */
  readonly endSession: (sessionKey: string) => Effect.Effect<void>
  /** How long a session stays idle before it is released. */
  readonly idleTimeout: Duration.Duration
}

/** Where a routed message went. */
export type Routed =
  /** The session has a turn taking input: the caller steers it (or, when it cannot, routes again). */
  | { readonly _tag: "Open"; readonly turn: RunningTurn.RunningTurn }
  | { readonly _tag: "Queued" }
  /** It starts a drain: the caller runs `drain` where it likes (the router: in a worker). */
  | { readonly _tag: "Started"; readonly drain: Effect.Effect<void> }

/** The sessions of one loop. */
export interface SessionRunner {
  /** One turn of the session, after those before it (first come, first served). */
  readonly turn: (sessionKey: string, input: Content, options: TurnOptions) => Effect.Effect<TurnResult>
  /**
   * A message for the session (the router's `send`, `steer`): names its open turn (running, or
   * decided on next) for the caller to steer, waits behind its drain, or starts one whose turns each `reply`.
   */
  readonly route: (sessionKey: string, text: string, reply: (result: TurnResult) => Effect.Effect<void>) => Effect.Effect<Routed>
  /** `effect` holding the session's lock, after the turns before it (a compaction). */
  readonly exclusive: <A, E, R>(sessionKey: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The session's turn: the one running while it takes input, else the one its drain decided on next, else the one ending. */
  readonly active: (sessionKey: string) => RunningTurn.RunningTurn | undefined
  /** How many sessions the loop holds state for. */
  readonly held: () => number
}

const queued: Routed = { _tag: "Queued" }

/** The options of a queued message's turn. */
const optionsOf = (message: Queued): TurnOptions => ({
  ...(message.model === undefined ? {} : { model: message.model }),
  ...(message.tools === undefined ? {} : { tools: message.tools })
})

/** Builds the runner of a loop; the sessions that started end (`sessionEnd`) when the scope closes. */
export const make = (loop: Loop): Effect.Effect<SessionRunner, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const sessions = new Map<string, State>()
    // an idle session's release, sleeping out the idle time; cancelled when the session is used again
    const timers = new WeakMap<Idle, Fiber.Fiber<void>>()

    yield* Effect.addFinalizer(() =>
      Effect.forEach([...sessions].filter(([, s]) => s._tag !== "Releasing" && s.started), ([key]) => loop.endSession(key), { discard: true })
    )

    /** Applies `event` to the session's state; what entering and leaving `Idle` asks for happens here. */
    const apply = (key: string, event: Event): Effect.Effect<Action> =>
      Effect.suspend(() => {
        const before = sessions.get(key)
        const [after, action] = transition(before, event)
        if (after === before) return Effect.succeed(action)
        if (after === undefined) sessions.delete(key)
        else sessions.set(key, after)
        if (before?._tag === "Idle") {
          timers.get(before)?.interruptUnsafe()
          timers.delete(before)
        }
        return after?._tag === "Idle" ? Effect.as(arm(key, after), action) : Effect.succeed(action)
      })

    /** Releases the session once it has been idle for the idle time, unless it is used again. */
    const arm = (key: string, idle: Idle) =>
      Effect.map(Effect.forkIn(release(key, idle), scope, { startImmediately: true }), (fiber) => {
        if (!fiber.pollUnsafe()) timers.set(idle, fiber)
      })

    const release = (key: string, idle: Idle): Effect.Effect<void> =>
      Effect.suspend(() => {
        timers.delete(idle)
        return Effect.flatMap(apply(key, { _tag: "Expire", idle }), (action) =>
          action._tag === "End"
            ? Effect.andThen(
              action.started ? loop.endSession(key) : Effect.void,
              Effect.andThen(apply(key, { _tag: "Released", releasing: action.releasing }), Deferred.succeed(action.releasing.ended, undefined))
            )
            : Effect.void)
      }).pipe(Effect.uninterruptible, Effect.delay(loop.idleTimeout))

    /** Runs `effect` holding the session: it is not released meanwhile. */
    const hold = <A, E, R>(key: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.uninterruptibleMask((restore) => Effect.andThen(enter(key, restore), Effect.ensuring(restore(effect), apply(key, { _tag: "Leave" }))))

    /** Takes a hold on the session, once it has ended if it is ending (waiting may be interrupted: then nothing is held). */
    const enter = (key: string, restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>): Effect.Effect<void> =>
      Effect.flatMap(apply(key, { _tag: "Hold" }), (action) =>
        action._tag === "Wait" ? Effect.andThen(restore(Deferred.await(action.ended)), enter(key, restore)) : Effect.void)

    /** The lock of a session something holds. */
    const lockOf = (key: string) => (sessions.get(key) as Running).lock

    /** One turn under the session's lock, which something holds; `prepared`: the turn made early for it. */
    const locked = (key: string, prepared: RunningTurn.RunningTurn | undefined, input: Content, options: TurnOptions): Effect.Effect<TurnResult> =>
      Effect.clockWith((clock) =>
        lockOf(key).withPermits(1)(Effect.gen(function*() {
          const turn = prepared ?? loop.makeTurn(key, clock, options)
          const begun = yield* apply(key, { _tag: "Begin", turn })
          const result = yield* Effect.ensuring(
            loop.runTurn(turn, input, options, begun._tag === "Begun" && begun.first),
            apply(key, { _tag: "End", turn })
          )
          const after = loop.afterTurn(turn, result)
          // started at once, so the session is held before this turn lets go of it
          if (after !== undefined) yield* Effect.forkIn(exclusive(key, after), scope, { startImmediately: true })
          return result
        }))
      )

    const exclusive = <A, E, R>(key: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      hold(key, Effect.suspend(() => lockOf(key).withPermits(1)(effect)))

    /** The line of the session's router drain: its waiting messages are in the session's state. */
    const sessionLine = (key: string, early: Early): Line => ({
      next: (followUps) => Effect.map(apply(key, { _tag: "Next", followUps, early }), (action) => action._tag === "Run" ? action.step : undefined),
      stop: Effect.asVoid(apply(key, { _tag: "Stop" }))
    })

    return {
      turn: (key, input, options) => hold(key, locked(key, undefined, input, options)),
      route: function route(key, text, reply): Effect.Effect<Routed> {
        return Effect.clockWith((clock) => {
          const early: Early = (message) => loop.makeTurn(key, clock, optionsOf(message))
          return Effect.flatMap(apply(key, { _tag: "Route", message: { text }, early }), (action): Effect.Effect<Routed> => {
            switch (action._tag) {
              case "Wait":
                return Effect.andThen(Deferred.await(action.ended), route(key, text, reply))
              case "Steer":
                return Effect.succeed({ _tag: "Open", turn: action.turn })
              case "Run": {
                const run = drain(action.step, sessionLine(key, early), (step) =>
                  Effect.tap(locked(key, step.turn, step.message.text, optionsOf(step.message)), reply))
                return Effect.succeed({ _tag: "Started", drain: run })
              }
              default:
                return Effect.succeed(queued)
            }
          })
        })
      },
      exclusive,
      active: (key) => currentTurn(sessions.get(key)),
      held: () => sessions.size
    }
  })
