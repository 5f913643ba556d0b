/**
 * A turn's checkpoints (`domain/Checkpoint.ts`): saved as the turn completes its steps, when it
 * was started with `TurnOptions.checkpoint`, and the way back in when it resumes from one.
 *
 * Saved: after a model reply that asks for tools (before any of them runs), before a call of a
 * tool that is not idempotent starts (so a resume knows it may have taken effect), after each
 * call's result, after calls skipped by an interrupt or steering (so a resume does not run them),
 * and, again, when steering or a follow-up is queued from outside (so it is not lost with the process).
 * Saves are serialised per turn (parallel calls finish together) and each one holds everything the
 * turn has completed, so the latest replaces the others. A final answer is not saved: the commit
 * follows it. A turn without checkpointing pays one field check per step.
 *
 * This module owns the per-turn state (kept here, as `hardAbort.ts` keeps its own).
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Semaphore from "effect/Semaphore"
import * as Checkpoint from "../../domain/Checkpoint.ts"
import { NoActiveTurn } from "../../domain/errors.ts"
import * as Message from "../../domain/Message.ts"
import type { RegisteredTool } from "../../services/ToolRegistry.ts"
import type { Engine } from "./engine.ts"
import * as RunningTurn from "./runningTurn.ts"

/** A checkpointed turn's state. */
interface State {
  readonly checkpointing: Checkpoint.Checkpointing
  /** Results of the current reply's calls, as they complete. */
  readonly results: Map<string, Message.ToolResultMessage>
  /** Current reply's calls that started their tool. */
  readonly started: Set<string>
  readonly lock: Semaphore.Semaphore
  /** Set once a checkpoint outgrew the bound: nothing more is saved. */
  outgrown: boolean
  /** The progress the last save held (its queued messages aside), and how much steering the turn had taken in by then. */
  last: { readonly progress: Checkpoint.TurnCheckpoint; readonly steered: number } | undefined
}

const states = new WeakMap<RunningTurn.RunningTurn, State>()

const stateOf = (turn: RunningTurn.RunningTurn): State | undefined => {
  const checkpointing = turn.start.checkpoint
  if (checkpointing === undefined) return undefined
  let state = states.get(turn)
  if (state === undefined) {
    state = { checkpointing, results: new Map(), started: new Set(), lock: Semaphore.makeUnsafe(1), outgrown: false, last: undefined }
    states.set(turn, state)
  }
  return state
}

/** `progress` with the messages queued for the turn, scrubbed; `steering` first (taken in since `progress`, not in it). */
const withQueued = (engine: Engine, turn: RunningTurn.RunningTurn, progress: Checkpoint.TurnCheckpoint, steering: ReadonlyArray<string>): Checkpoint.TurnCheckpoint => ({
  ...progress,
  ...(steering.length === 0 ? {} : { steering: steering.map(engine.secrets.scrub) }),
  ...(turn.followUps.length === 0 ? {} : { followUps: turn.followUps.map(engine.secrets.scrub) })
})

/** Hands `checkpoint` to the turn's `save`, or, past the bound, the mark that it outgrew it. */
const write = (engine: Engine, turn: RunningTurn.RunningTurn, state: State, checkpoint: Checkpoint.TurnCheckpoint): Effect.Effect<void> => {
  const bytes = Checkpoint.sizeOf(checkpoint)
  const limit = engine.config.maxResponseBytes
  if (bytes <= limit) return state.checkpointing.save(checkpoint)
  state.outgrown = true
  return state.checkpointing.save({ _tag: "CheckpointOutgrown", turnId: turn.turnId, bytes, limit })
}

/** Saves what the turn completed so far (or, past the bound, that it outgrew it). */
const save = (engine: Engine, turn: RunningTurn.RunningTurn, state: State): Effect.Effect<void> =>
  state.lock.withPermits(1)(Effect.suspend(() => {
    if (state.outgrown) return Effect.void
    const progress: Checkpoint.TurnCheckpoint = {
      _tag: "TurnCheckpoint",
      turnId: turn.turnId,
      iteration: turn.iteration,
      historyLength: turn.historyLength,
      usage: turn.usage,
      // copied: the scrubber gives back the turn's own array when it is clean, and it grows
      produced: [...engine.scrubber.messages(turn.produced)],
      ...(turn.compaction === undefined ? {} : { compaction: turn.compaction }),
      stopBlocks: turn.stopBlocks,
      results: [...engine.scrubber.messages([...state.results.values()]) as ReadonlyArray<Message.ToolResultMessage>],
      started: [...state.started]
    }
    state.last = { progress, steered: turn.steered.length }
    return write(engine, turn, state, withQueued(engine, turn, progress, turn.steering))
  }))

/** A reply asking for tools joined the conversation: a new batch of calls, saved before any runs. */
export const replied = (engine: Engine, turn: RunningTurn.RunningTurn): Effect.Effect<void> => {
  const state = stateOf(turn)
  if (state === undefined) return Effect.void
  state.results.clear()
  state.started.clear()
  return save(engine, turn, state)
}

/** A call is about to run its tool: recorded as started, and saved first when the tool is not idempotent. */
export const starting = (engine: Engine, turn: RunningTurn.RunningTurn, call: Message.ToolCall, tool: RegisteredTool): Effect.Effect<void> => {
  const state = stateOf(turn)
  if (state === undefined) return Effect.void
  state.started.add(call.id)
  // an idempotent call may run again anyway: recorded with the next save, not worth one of its own
  return tool.idempotent === true ? Effect.void : save(engine, turn, state)
}

/** A call has its result (run, denied or skipped). */
export const finished = (engine: Engine, turn: RunningTurn.RunningTurn, result: Message.ToolResultMessage): Effect.Effect<void> => {
  const state = stateOf(turn)
  if (state === undefined) return Effect.void
  state.results.set(result.toolCallId, result)
  return save(engine, turn, state)
}

/** Calls skipped without running (an interrupt, steering): saved with their results, so a resume does not run them. */
export const skipped = (engine: Engine, turn: RunningTurn.RunningTurn, results: ReadonlyArray<Message.ToolResultMessage>): Effect.Effect<void> => {
  const state = stateOf(turn)
  if (state === undefined) return Effect.void
  for (const result of results) state.results.set(result.toolCallId, result)
  return save(engine, turn, state)
}

/**
 * Steering or a follow-up was queued for the turn from outside: the last checkpoint is saved again
 * with it before the caller is told it is queued, so it survives the turn's process. Only the last
 * checkpoint: the turn may be anywhere between its steps (opening, deciding to stop), where a new
 * snapshot would not be a step to resume from; before its first save there is none, and the
 * message waits in memory. A save that interrupts (another attempt took the turn over, so this one
 * stops at its own next save) tells the caller there is no active turn here rather than that the
 * message is queued: it would be lost with this attempt.
 */
export const queued = (engine: Engine, turn: RunningTurn.RunningTurn): Effect.Effect<void, NoActiveTurn> => {
  const state = RunningTurn.begun(turn) ? stateOf(turn) : undefined
  if (state === undefined) return Effect.void
  const again = state.lock.withPermits(1)(Effect.suspend(() => {
    const last = state.last
    if (last === undefined || state.outgrown || turn.closed) return Effect.void
    // steering taken in since that save is not in its messages: it goes back in the queue
    return write(engine, turn, state, withQueued(engine, turn, last.progress, [...turn.steered.slice(last.steered), ...turn.steering]))
  }))
  return Effect.catchCause(again, (cause) =>
    Cause.hasInterruptsOnly(cause) ? Effect.fail(new NoActiveTurn({ sessionKey: turn.sessionKey })) : Effect.failCause(cause))
}

/** What a resumed turn does with the calls of its last reply. */
export interface Resumption {
  readonly calls: ReadonlyArray<Message.ToolCall>
  /** The calls that do not run, by id, with their result: completed before the crash, or interrupted by it. */
  readonly settled: ReadonlyMap<string, Message.ToolResultMessage>
  readonly rerun: ReadonlyArray<string>
  readonly interrupted: ReadonlyArray<string>
}

/**
 * Restores a turn from its checkpoint onto the loaded history: its messages, iteration, usage and
 * compaction; then the calls of its last reply that have no result: those that had started a
 * tool that is not idempotent get `INTERRUPTED_BY_CRASH` as their error result, the others run
 * (again, for an idempotent tool). `undefined` when the last reply asked for no tools.
 */
export const restore = (
  turn: RunningTurn.RunningTurn,
  checkpoint: Checkpoint.TurnCheckpoint,
  tools: ReadonlyMap<string, RegisteredTool>
): Resumption | undefined => {
  RunningTurn.restore(turn, checkpoint)
  const resumed = stateOf(turn)
  // the row holds this checkpoint: a message queued before the turn's next save is saved with it
  if (resumed !== undefined) {
    const { steering: _steering, followUps: _followUps, ...progress } = checkpoint
    resumed.last = { progress, steered: turn.steered.length }
  }
  const last = checkpoint.produced.at(-1)
  if (last?.role !== "assistant" || last.toolCalls === undefined || last.toolCalls.length === 0) return undefined
  const settled = new Map(checkpoint.results.map((result) => [result.toolCallId, result]))
  const started = new Set(checkpoint.started)
  const rerun: Array<string> = []
  const interrupted: Array<string> = []
  for (const call of last.toolCalls) {
    if (settled.has(call.id) || !started.has(call.id)) continue
    if (tools.get(call.name)?.idempotent === true) {
      rerun.push(call.id)
    } else {
      interrupted.push(call.id)
      settled.set(call.id, Message.toolResult(call, Checkpoint.INTERRUPTED_BY_CRASH, true))
    }
  }
  // the next save holds them, as it would have before the crash
  const state = stateOf(turn)
  if (state !== undefined) for (const [id, result] of settled) state.results.set(id, result)
  return { calls: last.toolCalls, settled, rerun, interrupted }
}
