/**
 * Every way a turn ends (DESIGN §6 step 7), in one place.
 *
 * - Normally: persist what it produced (and how it compacted), `TurnEnd`, `afterTurn` hooks.
 * - A hook stops it: `TurnAborted` (status `failed`, with an `Error` event naming the hook), or a
 *   hard abort (`stopFor`).
 * - A hard abort, by a hook or by `interruptHard`: `InterruptReceived{hard}` announced once, then
 *   the turn's fiber is interrupted; the turn ends `aborted` and nothing is persisted.
 * - A failure or defect of the body: status `failed`, keeping what was completed.
 */
import { Cause, Clock, Data, Effect, Exit, Fiber } from "effect"
import { readCause, tagged } from "../domain/causeMessage.ts"
import type { AbortTurn, HardAbort } from "../domain/Hook.ts"
import * as Message from "../domain/Message.ts"
import type { TurnResult, TurnStatus } from "../domain/Turn.ts"
import type { Named } from "../services/Hooks.ts"
import type { Env } from "./Env.ts"
import { added, append, type Emit, type TurnContext } from "./TurnContext.ts"
import { hookContext, type TurnControl } from "./TurnControl.ts"

/** A hook (or the compactor) ended the turn: status `failed`, with an `Error` event naming it. */
export class TurnAborted extends Data.TaggedError("TurnAborted")<{
  readonly stage: string
  readonly reason: string
  readonly hook?: string
}> {}

/**
 * Announces a hard abort once (`InterruptReceived{hard}`), whoever asks first: the caller of
 * `interruptHard`, a hook, or the turn noticing its own interruption.
 */
export const announceHardAbort = (control: TurnControl, emit: Emit, hint?: string) =>
  Effect.suspend(() => {
    if (control.hardAbortAnnounced) return Effect.void
    control.hardAbortAnnounced = true
    return emit("InterruptReceived", { kind: "hard", ...(hint === undefined ? {} : { hint }) })
  })

/** Hard abort from outside (`interruptHard`): announce once, then interrupt the turn's fiber (its sub-turns go with it). */
export const abortFromOutside = (control: TurnControl, emit: Emit): Effect.Effect<void> =>
  Effect.andThen(
    announceHardAbort(control, emit),
    Effect.suspend(() => control.fiber ? Fiber.interrupt(control.fiber) : Effect.void)
  )

/** Ends the turn from inside as `interruptHard` would from outside. */
export const hardAbort = (context: TurnContext, reason: string): Effect.Effect<never> =>
  Effect.andThen(announceHardAbort(context.control, context.emit, reason), Effect.interrupt)

/** Ends the turn as a hook decided: `failed` for an abort, rolled back for a hard abort. */
export const stopFor = (context: TurnContext, stage: string, decision: Named<AbortTurn> | Named<HardAbort>) =>
  decision._tag === "HardAbort"
    ? hardAbort(context, decision.reason)
    : Effect.fail(new TurnAborted({ stage, reason: decision.reason, hook: decision.hook }))

/** The two ways the engine ends a turn, over its hooks. */
export const make = (env: Env) => {
  const { hooks } = env

  /**
   * What every way of ending shares: steering that came too late — or that a rollback took out of
   * the history — becomes follow-ups (never lost), then the result, `TurnEnd` and `afterTurn`.
   */
  const finish = (
    context: TurnContext,
    status: TurnStatus,
    extra: {
      readonly finalMessage?: Message.AssistantMessage | undefined
      readonly error?: string | undefined
      readonly output?: unknown
      readonly persisted: boolean
    }
  ) =>
    Effect.gen(function*() {
      const control = context.control
      control.closed = true
      control.phase = "finishing"
      const rolledBack = extra.persisted ? [] : control.steered
      for (const message of [...rolledBack, ...control.steering.splice(0)]) {
        control.followUps.push(message)
        yield* context.emit("FollowUpQueued", { content: message })
      }
      const messages = extra.persisted ? added(context) : []
      let error = extra.error
      if (extra.persisted) {
        yield* context.spec.session.commit(context.compaction ? [...messages, context.compaction] : messages).pipe(
          Effect.catch((e) =>
            Effect.andThen(
              Effect.sync(() => (error = error ?? e.message)),
              context.emit("Error", { stage: "commit", message: e.message })
            )
          )
        )
      }
      const now = yield* Clock.currentTimeMillis
      const result: TurnResult = {
        turnId: control.turnId,
        sessionKey: control.sessionKey,
        status,
        ...(extra.finalMessage ? { finalMessage: extra.finalMessage } : {}),
        messages,
        followUps: [...control.followUps],
        iterations: context.iterations,
        usage: context.usage,
        ...(error === undefined ? {} : { error }),
        ...(extra.output === undefined ? {} : { output: extra.output })
      }
      yield* context.emit("TurnEnd", {
        status,
        iterations: context.iterations,
        durationMs: now - control.startedAt,
        usage: context.usage,
        ...(error === undefined ? {} : { error }),
        ...(extra.output === undefined ? {} : { output: extra.output })
      })
      yield* Effect.annotateCurrentSpan({ "agent.turn.status": status, "agent.turn.iterations": context.iterations })
      if (hooks.handles("afterTurn")) yield* hooks.afterTurn({ context: hookContext(control), result })
      return result
    }).pipe(Effect.uninterruptible)

  /** Ends the turn normally: its messages are persisted (but for a blocked turn). */
  const endTurn = (
    context: TurnContext,
    status: TurnStatus,
    extra: {
      readonly finalMessage?: Message.AssistantMessage | undefined
      readonly error?: string | undefined
      readonly output?: unknown
    } = {}
  ) => finish(context, status, { ...extra, persisted: status !== "blocked" })

  /**
   * Turns the exit of a turn's body into its result: a success is the result; an interruption
   * (hard abort) rolls back — nothing persisted — and ends `aborted`; a failure or defect ends
   * `failed`, keeping the messages completed so far and any text that arrived before the provider
   * failed (as a `partial` assistant message).
   */
  const endFromExit = (context: TurnContext, exit: Exit.Exit<TurnResult, unknown>): Effect.Effect<TurnResult> => {
    if (Exit.isSuccess(exit)) return Effect.succeed(exit.value)
    if (Cause.hasInterruptsOnly(exit.cause)) {
      return Effect.andThen(announceHardAbort(context.control, context.emit), finish(context, "aborted", { persisted: false }))
    }
    const reading = readCause(exit.cause)
    const error = reading._tag === "Error" ? reading.error : reading._tag === "Defect" ? reading.defect : Cause.squash(exit.cause)
    const aborted = error instanceof TurnAborted ? error : undefined
    const message = aborted
      ? `${aborted.hook ? `Hook "${aborted.hook}"` : "The loop"} aborted the turn at ${aborted.stage}: ${aborted.reason}`
      : tagged(error)
    if (context.partial.content !== "") append(context, Message.assistant(context.partial.content, [], { partial: true }))
    return Effect.andThen(
      context.emit("Error", {
        stage: aborted?.stage ?? "turn",
        message,
        ...(aborted?.hook === undefined ? {} : { hook: aborted.hook })
      }),
      finish(context, "failed", { error: message, persisted: true })
    )
  }

  return { endTurn, endFromExit }
}
