/**
 * Ctrl-C during a turn: the first press interrupts gracefully (the model sums up), a second one
 * within 2 seconds aborts. Either way an open approval prompt is answered "no" at once: the turn
 * is stopping, so it must not wait for an answer (up to `approvalTimeout`) nor obey a late `y`.
 * A press after the window, while the model is still summing up, says how to abort instead.
 * With no turn running, the command decides (`run` exits, `chat` quits on a second press). The
 * window is measured on the Effect Clock.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import { AgentLoop } from "../../services/AgentLoop.ts"
import { Screen } from "./screen.ts"

/** How close two presses must be to count as "again". */
export const DOUBLE_PRESS_MS = 2000

/** What Ctrl-C acts on. */
export interface CtrlCOptions {
  /** The session pressed on, or how to read it when it changes (`chat`'s `/clear` and `/resume`). */
  readonly sessionKey: string | (() => string)
  /** A press while the session has no running turn; `repeated` when it follows one within the window. */
  readonly onIdle: (repeated: boolean) => Effect.Effect<void>
  /** Answers the open questions "no" (`LineInput.cancelQuestions`); absent when nothing can ask. */
  readonly cancelQuestions?: Effect.Effect<void> | undefined
  /** A press that hard-aborts the running turn (`run` then exits within the signal deadline). */
  readonly onHardAbort?: Effect.Effect<void> | undefined
}

/** Said when a press comes too late to abort a turn that is already summing up. */
export const ABORT_HINT = `(press Ctrl-C again within ${DOUBLE_PRESS_MS / 1000} s to abort)`

/** The reaction to one press. */
export const controller = (options: CtrlCOptions) =>
  Effect.gen(function*() {
    const loop = yield* AgentLoop
    const screen = yield* Screen
    let last: { readonly at: number; readonly turnId: string | undefined } | undefined
    const current = options.sessionKey
    return Effect.gen(function*() {
      const sessionKey = typeof current === "string" ? current : current()
      const now = yield* Clock.currentTimeMillis
      const active = yield* loop.activeTurn(sessionKey)
      const turnId = active?.turnId
      const sameTurn = last !== undefined && last.turnId === turnId
      const repeated = last !== undefined && sameTurn && now - last.at <= DOUBLE_PRESS_MS
      last = { at: now, turnId }
      if (active === undefined) return yield* options.onIdle(repeated)
      if (repeated) {
        if (options.onHardAbort !== undefined) yield* options.onHardAbort
        yield* Effect.catchTag(loop.interruptHard(sessionKey), "NoActiveTurn", () => options.onIdle(false))
      }
      // A graceful interrupt was already asked for and asking again does nothing: say how to abort.
      else if (sameTurn) yield* screen.line(screen.err.dim(ABORT_HINT))
      else yield* Effect.catchTag(loop.interruptGraceful(sessionKey), "NoActiveTurn", () => options.onIdle(false))
      if (options.cancelQuestions !== undefined) yield* options.cancelQuestions
    })
  }) satisfies Effect.Effect<Effect.Effect<void>, never, AgentLoop | Screen>

/** Takes over SIGINT for the life of the scope and reacts to each press in order. */
export const install = (options: CtrlCOptions) =>
  Effect.gen(function*() {
    const press = yield* controller(options)
    const presses = yield* Queue.unbounded<void>()
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        const listener = () => {
          Queue.offerUnsafe(presses, undefined)
        }
        process.on("SIGINT", listener)
        return listener
      }),
      (listener) => Effect.sync(() => process.off("SIGINT", listener))
    )
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Queue.take(presses), press)))
  }) satisfies Effect.Effect<void, never, AgentLoop | Screen | Scope.Scope>
