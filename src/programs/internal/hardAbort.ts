/**
 * The hard-abort protocol, whole: a turn's body runs in a fiber of its own, and a hard abort —
 * asked by `interruptHard` from outside or by a hook from inside — is announced once
 * (`InterruptReceived{hard}`) and interrupts that fiber. The turn then ends `aborted` with nothing
 * persisted (`turnEnd.ts`), and its critical sub-turns, which outlive a normal end, are stopped.
 *
 * This module owns the protocol's state (kept here per turn); nothing else reads or writes it.
 */
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as RunningTurn from "./runningTurn.ts"

/** A turn's hard-abort state. */
interface State {
  /** The fiber running the turn's body, once it runs. */
  fiber: Fiber.Fiber<unknown, unknown> | undefined
  /** Set once a hard abort was asked for and announced. */
  announced: boolean
  /** Critical detached sub-turns: they outlive a normal end, not a hard abort. */
  readonly critical: Set<Fiber.Fiber<unknown, unknown>>
}

const states = new WeakMap<RunningTurn.RunningTurn, State>()

/** The state of `turn`, made when first needed (most turns are never aborted and have no critical sub-turn). */
const stateOf = (turn: RunningTurn.RunningTurn): State => {
  let state = states.get(turn)
  if (state === undefined) {
    state = { fiber: undefined, announced: false, critical: new Set() }
    states.set(turn, state)
  }
  return state
}

/**
 * Announces a hard abort once (`InterruptReceived{hard}`), whoever asks first: the caller of
 * `interruptHard`, a hook, or the turn noticing its own interruption.
 */
export const announce = (turn: RunningTurn.RunningTurn, hint?: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    const state = stateOf(turn)
    if (state.announced) return Effect.void
    state.announced = true
    return RunningTurn.emit(turn, "InterruptReceived", { kind: "hard", ...(hint === undefined ? {} : { hint }) })
  })

/** A hard abort from outside (`interruptHard`): announced, then the body's fiber interrupted (its sub-turns go with it). */
export const fromOutside = (turn: RunningTurn.RunningTurn): Effect.Effect<void> =>
  Effect.andThen(announce(turn), Effect.suspend(() => {
    const fiber = states.get(turn)?.fiber
    return fiber ? Fiber.interrupt(fiber) : Effect.void
  }))

/** A hard abort from inside the body (a hook's `HardAbort`): announced, then the body interrupts itself. */
export const fromInside = (turn: RunningTurn.RunningTurn, reason: string): Effect.Effect<never> =>
  Effect.andThen(announce(turn, reason), Effect.interrupt)

/**
 * Runs the turn's body in a child fiber that a hard abort interrupts, then `settle` on how it
 * ended. If the caller's fiber is interrupted instead, the body is interrupted and awaited and
 * still settled, so the turn always ends. The body starts at once rather than being scheduled: it
 * runs on to its first real wait (a sleep, the provider) before its caller goes on, so a spawned
 * child is already waiting on the Clock when its parent does, and `TestClock.adjust` wakes every
 * sleep due in the window.
 */
export const abortable = <A, E, B>(
  turn: RunningTurn.RunningTurn,
  body: Effect.Effect<A, E>,
  settle: (exit: Exit.Exit<A, E>) => Effect.Effect<B>
): Effect.Effect<B> =>
  Effect.flatMap(Effect.forkChild(body, { startImmediately: true }), (fiber) => {
    const state = stateOf(turn)
    state.fiber = fiber
    // Asked for while the turn was being prepared: honoured now.
    const early = state.announced ? Fiber.interrupt(fiber) : Effect.void
    return Effect.andThen(
      early,
      Fiber.await(fiber).pipe(
        Effect.onInterrupt(() => Effect.flatMap(Effect.andThen(Fiber.interrupt(fiber), Fiber.await(fiber)), settle)),
        Effect.flatMap(settle)
      )
    )
  })

/** A critical detached sub-turn of `turn`: kept until it ends, stopped by a hard abort. */
export const holdCritical = (turn: RunningTurn.RunningTurn, fiber: Fiber.Fiber<unknown, unknown>): void => {
  const critical = stateOf(turn).critical
  critical.add(fiber)
  fiber.addObserver(() => critical.delete(fiber))
}

/** After a hard abort: the critical sub-turns, which outlive a normal end, are stopped too. */
export const stopCritical = (turn: RunningTurn.RunningTurn): Effect.Effect<void> =>
  Effect.suspend(() => Effect.forEach([...(states.get(turn)?.critical ?? [])], Fiber.interrupt, { discard: true, concurrency: "unbounded" }))
