/**
 * Effects that are already done. An `Exit` is an effect (what `Effect.succeed`, `Effect.fail`
 * and the eager combinators over them return): a hot path that meets one may go on in the same
 * step instead of scheduling another (see the design doc's "Performance" section).
 */
import type * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/** The outcome of `effect` if it is already done, else `undefined`. */
export const doneNow = <A, E, R>(effect: Effect.Effect<A, E, R>): Exit.Exit<A, E> | undefined =>
  Exit.isExit(effect) ? effect as Exit.Exit<A, E> : undefined
