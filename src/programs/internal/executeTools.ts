/**
 * Running a response's tool calls (DESIGN §6 step 5); each call is one record (`toolCall.ts`).
 *
 * Calls are grouped in order: consecutive read-only calls form one parallel group (at most
 * `toolConcurrency` calls at once), each mutating (or unknown) call is a group of its own. Before
 * each group is an interrupt point, the tool-group boundary, where a graceful interrupt, or newly
 * queued steering in `skip-remaining` mode, skips every remaining call with a result saying why,
 * so the history stays well formed. Results are appended in call order. (Not to be confused with
 * a turn's durable checkpoints, `checkpoint.ts`, which save its completed steps.)
 */
import * as Effect from "effect/Effect"
import { doneNow } from "../../domain/doneNow.ts"
import type * as Message from "../../domain/Message.ts"
import type { CurrentTurn } from "../../services/CurrentTurn.ts"
import type { RegisteredTool } from "../../services/ToolRegistry.ts"
import * as Checkpoints from "./checkpoint.ts"
import type { Engine } from "./engine.ts"
import { type PlannedCall, runCall, skip } from "./toolCall.ts"
import * as RunningTurn from "./runningTurn.ts"
import type { TurnAborted } from "../../domain/errors.ts"

/** The result the model sees for calls skipped by a graceful interrupt. */
export const SKIPPED_GRACEFUL = "Skipped due to graceful interrupt."
/** The result the model sees for calls skipped because the user sent a new message. */
export const SKIPPED_STEERING = "Skipped due to queued user message."

/** Groups calls in order: runs of read-only calls together, everything else alone. */
export const groupCalls = <A extends { readonly tool: { readonly readOnly: boolean } | undefined }>(
  calls: ReadonlyArray<A>
): ReadonlyArray<ReadonlyArray<A>> => {
  const groups: Array<Array<A>> = []
  for (const call of calls) {
    const last = groups[groups.length - 1]
    if (call.tool?.readOnly && last && last[0]!.tool?.readOnly) last.push(call)
    else groups.push([call])
  }
  return groups
}

/**
 * Runs the calls of one response with the tools available to it and appends their results in
 * call order; `settled` calls (a resumed turn's) keep the result they have. Called when the
 * effect is to run.
 */
export const executeTools = (
  engine: Engine,
  turn: RunningTurn.RunningTurn,
  calls: ReadonlyArray<Message.ToolCall>,
  available: ReadonlyMap<string, RegisteredTool>,
  settled?: ReadonlyMap<string, Message.ToolResultMessage>
): Effect.Effect<void, TurnAborted, CurrentTurn> => {
  RunningTurn.setPhase(turn, "tools")
  RunningTurn.batchStarts(turn)
  const planned: Array<PlannedCall> = []
  for (const call of calls) planned.push({ call, tool: available.get(call.name), settled: settled?.get(call.id) })
  return runGroups(engine, turn, groupCalls(planned), 0, [])
}

/** The interrupt point before a group (the tool-group boundary): why the remaining calls must be skipped now, if they must. */
const atGroupBoundary = (engine: Engine, turn: RunningTurn.RunningTurn): string | undefined => {
  if (RunningTurn.gracefulAsked(turn)) return SKIPPED_GRACEFUL
  if (engine.config.steeringMode !== "skip-remaining" || turn.steering.length === 0) return undefined
  RunningTurn.publish(turn, "InterruptReceived", { kind: "steering" })
  return SKIPPED_STEERING
}

/**
 * The groups from `index` on, each after its boundary (once a boundary says to skip, every later
 * call is skipped for the same reason, and saved to the turn's durable checkpoint as such); then
 * the results join the conversation in call order. Groups that finish at once go on in the same step.
 */
const runGroups = (
  engine: Engine,
  turn: RunningTurn.RunningTurn,
  groups: ReadonlyArray<ReadonlyArray<PlannedCall>>,
  index: number,
  results: Array<Message.ToolResultMessage>
): Effect.Effect<void, TurnAborted, CurrentTurn> => {
  let skipReason: string | undefined
  let skipped: Array<Message.ToolResultMessage> | undefined
  for (; index < groups.length; index++) {
    const group = groups[index]!
    skipReason ??= atGroupBoundary(engine, turn)
    if (skipReason !== undefined) {
      for (const planned of group) {
        const result = planned.settled ?? skip(turn, planned.call, skipReason)
        results.push(result)
        if (planned.settled === undefined) (skipped ??= []).push(result)
      }
      continue
    }
    const run = runGroup(engine, turn, group)
    const done = doneNow(run)
    if (done === undefined) {
      const next = index + 1
      return Effect.flatMap(run, (groupResults) => {
        for (const result of groupResults) results.push(result)
        return runGroups(engine, turn, groups, next, results)
      })
    }
    if (done._tag === "Failure") return done
    for (const result of done.value) results.push(result)
  }
  if (skipped === undefined || turn.start.checkpoint === undefined) {
    RunningTurn.append(turn, ...results)
    return Effect.void
  }
  return Effect.map(Checkpoints.skipped(engine, turn, skipped), () => RunningTurn.append(turn, ...results))
}

/**
 * A group's calls, one after the other while they are done at once; from the first that waits, it
 * and the rest run in parallel, as many at once as `toolConcurrency` allows. A failure ends the
 * group there.
 */
const runGroup = (
  engine: Engine,
  turn: RunningTurn.RunningTurn,
  group: ReadonlyArray<PlannedCall>
): Effect.Effect<ReadonlyArray<Message.ToolResultMessage>, TurnAborted, CurrentTurn> => {
  const results: Array<Message.ToolResultMessage> = []
  for (let i = 0; i < group.length; i++) {
    const run = runCall(engine, turn, group[i]!)
    const done = doneNow(run)
    if (done === undefined) {
      const starts = [() => run, ...group.slice(i + 1).map((planned) => () => runCall(engine, turn, planned))]
      return Effect.map(
        Effect.forEach(starts, (start) => start(), { concurrency: engine.config.toolConcurrency }),
        (later) => results.concat(later)
      )
    }
    if (done._tag === "Failure") return Effect.failCause(done.cause)
    results.push(done.value)
  }
  return Effect.succeed(results)
}
