/**
 * Checkpoints: a running turn's completed steps, saved as it goes, so that a turn cut short by a
 * crash can resume from its last completed step instead of starting again (DESIGN §10).
 *
 * A checkpoint is not history: the session log still receives the turn's messages in one append
 * at its end. It is saved after each model reply that asks for tools, before each call of a tool
 * that is not idempotent, after each call's result (a skipped call's too, so a resume does not
 * run it), and again with the messages queued for the turn when steering or a follow-up arrives
 * (so a message the caller was told is queued is not lost with the turn's process); a turn started
 * with `resume` continues from it with the same turn id, iteration count, usage and queued messages. A call that had started and whose tool is not idempotent is not run again: the model
 * gets an error result saying it was interrupted by a crash (`INTERRUPTED_BY_CRASH`) and may
 * retry it.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { AgentLoop, type Checkpoint } from "effect-agent-loop"
 *
 * const saved: Array<Checkpoint.Checkpoint> = []
 * const program = Effect.gen(function*() {
 *   const loop = yield* AgentLoop
 *   // keep the latest checkpoint somewhere durable; here, in memory
 *   return yield* loop.turn("s", "hello", { checkpoint: { save: (c) => Effect.sync(() => void saved.push(c)) } })
 * })
 * ```
 */
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Message, ToolResultMessage } from "./Message.ts"
import { Compaction } from "./SessionLog.ts"
import { Usage } from "./Usage.ts"

/** The result the model sees for a call that was running when its runner died, when its tool is not idempotent. */
export const INTERRUPTED_BY_CRASH =
  "This call was interrupted by a crash before it finished: it may or may not have taken effect. Check, then call it again if needed."

/** What a turn completed so far. */
export const TurnCheckpoint = Schema.TaggedStruct("TurnCheckpoint", {
  turnId: Schema.String,
  /** The iterations that called the model so far. */
  iteration: Schema.Number,
  /** How many messages the session's view held when the turn started: a resume needs the same view. */
  historyLength: Schema.Number,
  usage: Usage,
  /** Every message the turn produced so far (its input first), secrets scrubbed. */
  produced: Schema.Array(Message),
  /** The turn's compaction record so far, if it compressed. */
  compaction: Schema.optionalKey(Compaction),
  /** Consecutive `beforeStop` blocks so far. */
  stopBlocks: Schema.Number,
  /** Results of the last reply's tool calls that have one (run, denied or skipped), in the order they came. */
  results: Schema.Array(ToolResultMessage),
  /** Ids of the last reply's calls that started their tool (those of idempotent tools as of the next save). */
  started: Schema.Array(Schema.String),
  /** Steering queued for the turn and not yet in its conversation, secrets scrubbed. */
  steering: Schema.optionalKey(Schema.Array(Schema.String)),
  /** Follow-ups queued during the turn (the session's next turns once it ends), secrets scrubbed. */
  followUps: Schema.optionalKey(Schema.Array(Schema.String))
})
export type TurnCheckpoint = typeof TurnCheckpoint.Type

/**
 * The turn's progress outgrew the checkpoint bound (`maxResponseBytes`): it is no longer
 * resumable, and a crash ends it as before, rather than resuming from an older step (which would
 * run its later calls again).
 */
export const CheckpointOutgrown = Schema.TaggedStruct("CheckpointOutgrown", {
  turnId: Schema.String,
  /** The size the checkpoint would have had, in UTF-8 bytes of JSON. */
  bytes: Schema.Number,
  limit: Schema.Number
})
export type CheckpointOutgrown = typeof CheckpointOutgrown.Type

/** What a turn saves: its progress, or the mark that it outgrew the bound. */
export const Checkpoint = Schema.Union([TurnCheckpoint, CheckpointOutgrown])
export type Checkpoint = typeof Checkpoint.Type

/** Makes a turn durable (`TurnOptions.checkpoint`). */
export interface Checkpointing {
  /**
   * Saves the turn's latest checkpoint, replacing the previous one; the turn waits for it before
   * going on (before running the tools a reply asks for). A save that dies fails the turn; one
   * that interrupts stops it as a hard abort (nothing stored), as a cluster runner's does when
   * another runner took the turn over.
   */
  readonly save: (checkpoint: Checkpoint) => Effect.Effect<void>
  /** Continue from this checkpoint instead of starting the turn afresh (the input is then already in it). */
  readonly resume?: TurnCheckpoint | undefined
  /** Who resumes it, for the `Resumed` event (a cluster runner's address). */
  readonly runner?: string | undefined
}

/** The UTF-8 size of a checkpoint as JSON. */
export const sizeOf = (checkpoint: Checkpoint): number => encoder.encode(JSON.stringify(checkpoint)).byteLength

const encoder = new TextEncoder()
