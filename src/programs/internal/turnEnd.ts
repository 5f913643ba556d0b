/**
 * Every way a turn ends (DESIGN §6 step 7), in one place.
 *
 * - Normally: persist what it produced (and how it compacted), `TurnEnd`, `afterTurn` hooks.
 * - A hook stops it: `TurnAborted` (status `failed`, with an `Error` event naming the hook), or a
 *   hard abort (`hardAbort.ts`).
 * - A hard abort: the turn ends `aborted` and nothing is persisted.
 * - Stop now: the turn ends `interrupted`, keeping what it did, closed so providers accept it
 *   (`stoppedNow`).
 * - A failure or defect of the body: status `failed`, keeping what was completed.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { readCause, tagged } from "../../domain/causeMessage.ts"
import { TurnAborted, TurnDefect, TurnFailure } from "../../domain/errors.ts"
import type { AbortTurn, HardAbort as HardAbortDecision } from "../../domain/Hook.ts"
import * as Message from "../../domain/Message.ts"
import type { TurnResult, TurnStatus } from "../../domain/Turn.ts"
import { retryTransient } from "../../domain/connectionFailure.ts"
import type { Named } from "../../services/Hooks.ts"
import type { Engine } from "./engine.ts"
import * as HardAbort from "./hardAbort.ts"
import * as RunningTurn from "./runningTurn.ts"
import * as TurnOutcome from "./turnOutcome.ts"

/** How the error of a turn whose commit failed (nothing of it stored) begins. */
export const COMMIT_FAILED = "the turn could not be stored, so it did not complete"

/** The result a tool call gets when the turn was stopped now before it finished (or started). */
export const STOPPED_RESULT = "Interrupted: the user stopped the turn before this tool call finished."
/** The user message that records, in the session, where a turn was stopped now. */
export const STOPPED_NOTE = "[The user stopped the turn here.]"

/** The tools whose results a turn produced, in order, each once. */
const toolsRun = (messages: ReadonlyArray<Message.Message>): ReadonlyArray<string> =>
  [...new Set(messages.flatMap((message) => message.role === "tool" ? [message.toolName] : []))]

/** Ends the turn as a hook decided: `failed` for an abort, rolled back for a hard abort. */
export const stopFor = (turn: RunningTurn.RunningTurn, stage: string, decision: Named<AbortTurn> | Named<HardAbortDecision>): Effect.Effect<never, TurnAborted> =>
  decision._tag === "HardAbort"
    ? HardAbort.fromInside(turn, decision.reason)
    : Effect.fail(new TurnAborted({ stage, reason: decision.reason, hook: decision.hook }))

/** What a turn's end may carry. */
export interface Ending {
  readonly finalMessage?: Message.AssistantMessage | undefined
  /** Why the turn did not complete as asked (its words are `TurnResult.error`). */
  readonly failure?: TurnFailure | undefined
  readonly output?: unknown
}

/** A failure in words, as results and events have always said it. */
const messageOf = (failure: TurnFailure): string => {
  switch (failure._tag) {
    case "TurnAborted":
      return `${failure.hook ? `Hook "${failure.hook}"` : "The loop"} aborted the turn at ${failure.stage}: ${failure.reason}`
    case "TurnBlocked":
      return `${failure.stage === "sessionStart" ? "Session blocked" : "Blocked"} by hook "${failure.hook}": ${failure.reason}`
    case "TurnDefect":
    case "SubTurnStopped":
    case "CheckpointStale":
      return failure.message
    default:
      return tagged(failure)
  }
}

const isFailure = Schema.is(TurnFailure)

/** A failure of the body as a `TurnFailure`: the library's own as they are, anything else a defect. */
const failureOf = (error: unknown): TurnFailure => isFailure(error) ? error : new TurnDefect({ message: tagged(error) })

/** Ends the turn normally: its messages are persisted (but for a blocked turn). */
export const endTurn = (engine: Engine, turn: RunningTurn.RunningTurn, status: TurnStatus, ending: Ending = {}): Effect.Effect<TurnResult> =>
  finish(engine, turn, status, ending, status !== "blocked")

/**
 * Turns the exit of a turn's body into its result: a success is the result; an interruption
 * (hard abort) rolls back — nothing persisted — and ends `aborted`; a failure or defect ends
 * `failed`, keeping the messages completed so far and any text that arrived before the provider
 * failed (as a `partial` assistant message). Then the turn's detached sub-turns are released.
 */
export const settle = (engine: Engine, turn: RunningTurn.RunningTurn, exit: Exit.Exit<TurnResult, unknown>): Effect.Effect<TurnResult> =>
  Effect.tap(resultOf(engine, turn, exit), (result) => release(turn, result.status === "aborted"))

const resultOf = (engine: Engine, turn: RunningTurn.RunningTurn, exit: Exit.Exit<TurnResult, unknown>): Effect.Effect<TurnResult> => {
  if (Exit.isSuccess(exit)) return Effect.succeed(exit.value)
  if (Cause.hasInterruptsOnly(exit.cause)) {
    if (HardAbort.stopOf(turn) === "now") return stoppedNow(engine, turn)
    return Effect.andThen(HardAbort.announce(turn), finish(engine, turn, "aborted", {}, false))
  }
  const reading = readCause(exit.cause)
  const failure = failureOf(reading._tag === "Error" ? reading.error : reading._tag === "Defect" ? reading.defect : Cause.squash(exit.cause))
  const aborted = failure instanceof TurnAborted ? failure : undefined
  const partial = RunningTurn.partialText(turn)
  if (partial !== "") RunningTurn.append(turn, Message.assistant(partial, [], { partial: true }))
  RunningTurn.publish(turn, "Error", {
    stage: aborted?.stage ?? "turn",
    message: messageOf(failure),
    ...(aborted?.hook === undefined ? {} : { hook: aborted.hook })
  })
  const ended = finish(engine, turn, "failed", { failure }, true)
  // a defect is a bug or a part that broke, not a failure the loop names: its whole cause, with
  // where it was thrown, goes to the log for whoever runs the loop (the result keeps one line)
  return reading._tag === "Error" && isFailure(reading.error)
    ? ended
    : Effect.andThen(Effect.logError(`turn ${turn.turnId} of session ${JSON.stringify(turn.sessionKey)} died of a defect`, exit.cause), ended)
}

/**
 * A turn stopped now (`interruptNow`): what it did is kept and closed so the stored conversation
 * stays well formed for every provider — text streamed by the cancelled model call is kept as a
 * `partial` assistant message (as after a provider failure); the calls of the running tool batch
 * keep the results of those that finished, and the others get `STOPPED_RESULT` (with
 * `ToolExecSkipped`); then `STOPPED_NOTE`, a user message, records the stop for the next turn's
 * model (it knows its last step was cut short). A turn stopped before it produced anything stores
 * nothing. It ends `interrupted`, with no further model call.
 */
const stoppedNow = (engine: Engine, turn: RunningTurn.RunningTurn): Effect.Effect<TurnResult> =>
  Effect.suspend(() => {
    const partial = RunningTurn.partialText(turn)
    if (partial !== "") RunningTurn.append(turn, Message.assistant(partial, [], { partial: true }))
    const last = turn.produced.at(-1)
    if (last?.role === "assistant" && last.toolCalls !== undefined && last.toolCalls.length > 0) {
      RunningTurn.append(turn, ...last.toolCalls.map((call) => turn.finishedCalls.get(call.id) ?? stoppedCall(turn, call)))
    }
    if (turn.produced.length > 0) RunningTurn.append(turn, Message.user(STOPPED_NOTE))
    return finish(engine, turn, "interrupted", {}, true)
  })

/** A call of the stopped batch that did not finish: its result says so (`toolCall.ts` imports this module, so not its `skip`). */
const stoppedCall = (turn: RunningTurn.RunningTurn, call: Message.ToolCall): Message.ToolResultMessage => {
  RunningTurn.publish(turn, "ToolExecSkipped", { toolCallId: call.id, toolName: call.name, reason: STOPPED_RESULT })
  return Message.toolResult(call, STOPPED_RESULT, true)
}

/**
 * What every way of ending shares: the turn closes (late steering becomes follow-ups), commits
 * what it produced if `persisted`, then its result, `TurnEnd` and `afterTurn`.
 */
const finish = (engine: Engine, turn: RunningTurn.RunningTurn, ended: TurnStatus, ending: Ending, persisted: boolean) =>
  Effect.gen(function*() {
    for (const message of RunningTurn.close(turn, persisted)) RunningTurn.publish(turn, "FollowUpQueued", { content: message })
    let status = ended
    let messages = persisted ? [...engine.scrubber.messages(turn.produced)] : []
    let failure = ending.failure
    let error = failure && messageOf(failure)
    // the outcome record goes with what the turn stores, or alone when it stores nothing else
    const outcome = TurnOutcome.of(engine, turn, status, yield* Clock.currentTimeMillis, failure, error)
    if (!persisted && outcome !== undefined) yield* TurnOutcome.storeAlone(turn, outcome)
    if (persisted) {
      // a database restarting or cut off for a moment is waited out: the commit is one transaction
      const entries = [...messages, ...(turn.compaction ? [turn.compaction] : []), ...(outcome ? [outcome] : [])]
      yield* retryTransient(turn.start.session.commit(entries)).pipe(
        Effect.catch((e) =>
          Effect.sync(() => {
            RunningTurn.publish(turn, "Error", { stage: "commit", message: e.message })
            if (e._tag === "SessionFenced") {
              // another runner owns the session now: nothing was stored, so the turn did not happen
              status = "aborted"
              messages = []
              failure = e
              error = e.message
              return
            }
            // nothing was stored: the turn did not complete, whatever its body did; what ran is said
            const ran = toolsRun(messages)
            status = "failed"
            messages = []
            failure = e
            error = `${COMMIT_FAILED}: ${e.message}; ${ran.length === 0 ? "no tool ran" : `tools that ran: ${ran.join(", ")}`}`
          })
        )
      )
    }
    const now = yield* Clock.currentTimeMillis
    const result: TurnResult = {
      turnId: turn.turnId,
      sessionKey: turn.sessionKey,
      status,
      ...(ending.finalMessage ? { finalMessage: ending.finalMessage } : {}),
      messages,
      followUps: [...turn.followUps],
      iterations: turn.iteration,
      usage: turn.usage,
      ...(error === undefined ? {} : { error }),
      ...(failure === undefined ? {} : { failure }),
      ...(ending.output === undefined ? {} : { output: ending.output })
    }
    RunningTurn.publish(turn, "TurnEnd", {
      status,
      iterations: turn.iteration,
      durationMs: now - turn.startedAt,
      usage: turn.usage,
      ...(error === undefined ? {} : { error }),
      ...(ending.output === undefined ? {} : { output: ending.output })
    }, now)
    yield* Effect.annotateCurrentSpan({ "agent.turn.status": status, "agent.turn.iterations": turn.iteration })
    if (engine.hooks.handles("afterTurn")) yield* engine.hooks.run("afterTurn", { context: RunningTurn.hookContext(turn), result })
    return result
  }).pipe(Effect.uninterruptible)

/**
 * Releases the turn's detached sub-turns when it ends: closing its scope stops the non-critical
 * ones; after a hard abort the critical ones are stopped too.
 */
const release = (turn: RunningTurn.RunningTurn, aborted: boolean): Effect.Effect<void> =>
  Effect.andThen(
    turn.scope ? Scope.close(turn.scope, Exit.void) : Effect.void,
    aborted || HardAbort.stopOf(turn) === "now" ? HardAbort.stopCritical(turn) : Effect.void
  )
