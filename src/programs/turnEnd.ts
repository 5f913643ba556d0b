/**
 * How a turn ends (DESIGN §6 step 7): persist what it produced (and how it compacted), `TurnEnd`,
 * `afterTurn` hooks.
 * Also the two ways a hook or a caller stops a turn early: `TurnAborted` (status `failed`) and a
 * hard abort (fiber interruption, status `aborted`, nothing persisted).
 */
import { Cause, Clock, Data, Effect, Exit } from "effect"
import * as Message from "../domain/Message.ts"
import type { TurnResult, TurnStatus } from "../domain/Turn.ts"
import { added, append, type TurnContext } from "./TurnContext.ts"
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
export const announceHardAbort = (control: TurnControl, emit: TurnContext["emit"], hint?: string) =>
  Effect.suspend(() => {
    if (control.hardAbortAnnounced) return Effect.void
    control.hardAbortAnnounced = true
    return emit("InterruptReceived", { kind: "hard", ...(hint === undefined ? {} : { hint }) })
  })

/** Ends the turn from inside as `interruptHard` would from outside. */
export const hardAbort = (context: TurnContext, reason: string): Effect.Effect<never> =>
  Effect.andThen(announceHardAbort(context.control, context.emit, reason), Effect.interrupt)

/**
 * What every way of ending shares: steering that came too late — or that a rollback took out of
 * the history — becomes follow-ups (never lost), then the result, `TurnEnd` and `afterTurn`.
 */
const finish = (
  context: TurnContext,
  status: TurnStatus,
  extra: { readonly finalMessage?: Message.AssistantMessage | undefined; readonly error?: string | undefined; readonly persisted: boolean }
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
      yield* context.spec.commit(context.compaction ? [...messages, context.compaction] : messages).pipe(
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
      iterations: context.calls,
      usage: context.usage,
      ...(error === undefined ? {} : { error })
    }
    yield* context.emit("TurnEnd", {
      status,
      iterations: context.calls,
      durationMs: now - control.startedAt,
      usage: context.usage,
      ...(error === undefined ? {} : { error })
    })
    yield* Effect.annotateCurrentSpan({ "agent.turn.status": status, "agent.turn.iterations": context.calls })
    yield* context.hooks.afterTurn({ context: hookContext(control), result })
    return result
  }).pipe(Effect.uninterruptible)

/** Ends the turn normally: its messages are persisted. */
export const endTurn = (
  context: TurnContext,
  status: TurnStatus,
  extra: { readonly finalMessage?: Message.AssistantMessage | undefined; readonly error?: string | undefined } = {}
) => finish(context, status, { ...extra, persisted: status !== "blocked" })

/**
 * Turns the exit of a turn's body into its result: a success is the result; an interruption
 * (hard abort) rolls back — nothing persisted — and ends `aborted`; a failure or defect ends
 * `failed`, keeping the messages completed so far and any text that arrived before the provider
 * failed (as a `partial` assistant message).
 */
export const endFromExit = (context: TurnContext, exit: Exit.Exit<TurnResult, unknown>): Effect.Effect<TurnResult> => {
  if (Exit.isSuccess(exit)) return Effect.succeed(exit.value)
  if (Cause.hasInterruptsOnly(exit.cause)) {
    return Effect.andThen(announceHardAbort(context.control, context.emit), finish(context, "aborted", { persisted: false }))
  }
  const failure = Cause.findErrorOption(exit.cause)
  const error = failure._tag === "Some" ? failure.value : Cause.squash(exit.cause)
  const aborted = error instanceof TurnAborted ? error : undefined
  const message = aborted
    ? `${aborted.hook ? `Hook "${aborted.hook}"` : "The loop"} aborted the turn at ${aborted.stage}: ${aborted.reason}`
    : error instanceof Error
    ? `${"_tag" in error ? `${String(error._tag)}: ` : ""}${error.message}`
    : String(error)
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
