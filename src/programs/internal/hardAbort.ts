/**
 * The protocol of the two stops that interrupt a turn's body, whole: the body runs in a fiber of
 * its own, and a stop is announced once (`InterruptReceived`) and interrupts that fiber.
 *
 * - A hard abort, asked by `interruptHard` from outside or by a hook from inside: the turn ends
 *   `aborted` with nothing persisted (`turnEnd.ts`).
 * - Stop now, asked by `interruptNow`: the in-flight model call and tools are cancelled (their
 *   finalizers run), and the turn ends `interrupted` keeping what it did (`turnEnd.ts`).
 *
 * Either way its critical sub-turns, which outlive a normal end, are stopped. The first stop asked
 * for is the one the turn ends by.
 *
 * This module owns the protocol's state (kept here per turn); nothing else reads or writes it.
 */
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as RunningTurn from "./runningTurn.ts"

/** Which stop a turn's body got: none yet, a hard abort (rolled back), or stop now (kept). */
export type Stop = "none" | "hard" | "now"

/** A turn's stop state. */
interface State {
  /** The fiber running the turn's body, once it runs. */
  fiber: Fiber.Fiber<unknown, unknown> | undefined
  /** Set once a stop was asked for and announced. */
  stop: Stop
  /** Critical detached sub-turns: they outlive a normal end, not a hard abort. */
  readonly critical: Set<Fiber.Fiber<unknown, unknown>>
}

const states = new WeakMap<RunningTurn.RunningTurn, State>()

/** The state of `turn`, made when first needed (most turns are never aborted and have no critical sub-turn). */
const stateOf = (turn: RunningTurn.RunningTurn): State => {
  let state = states.get(turn)
  if (state === undefined) {
    state = { fiber: undefined, stop: "none", critical: new Set() }
    states.set(turn, state)
  }
  return state
}

/**
 * Announces a stop once (`InterruptReceived` of its kind), whoever asks first: the caller of
 * `interruptHard` or `interruptNow`, a hook, or the turn noticing its own interruption (hard).
 */
export const announce = (turn: RunningTurn.RunningTurn, hint?: string, kind: "hard" | "now" = "hard"): Effect.Effect<void> =>
  Effect.suspend(() => {
    const state = stateOf(turn)
    if (state.stop !== "none") return Effect.void
    state.stop = kind
    return RunningTurn.emit(turn, "InterruptReceived", { kind, ...(hint === undefined ? {} : { hint }) })
  })

/** The stop the turn's body got, if any. */
export const stopOf = (turn: RunningTurn.RunningTurn): Stop => states.get(turn)?.stop ?? "none"

/**
 * A stop from outside (`interruptHard`, `interruptNow`): announced, then the body's fiber
 * interrupted (its sub-turns go with it); returns once the body has stopped (its finalizers ran).
 */
export const fromOutside = (turn: RunningTurn.RunningTurn, kind: "hard" | "now" = "hard"): Effect.Effect<void> =>
  Effect.andThen(announce(turn, undefined, kind), Effect.suspend(() => {
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
    const early = state.stop !== "none" ? Fiber.interrupt(fiber) : Effect.void
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

/** After a stop: the critical sub-turns, which outlive a normal end, are stopped too. */
export const stopCritical = (turn: RunningTurn.RunningTurn): Effect.Effect<void> =>
  Effect.suspend(() => Effect.forEach([...(states.get(turn)?.critical ?? [])], Fiber.interrupt, { discard: true, concurrency: "unbounded" }))
