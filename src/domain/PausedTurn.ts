/**
 * A turn paused on a tool call that waits for a person's decision, as a store keeps it
 * (`SessionStore.paused`): the approval (pending, or decided while the turn was not running) and
 * the turn's checkpoint at the pause, so that a server started again lists the approval and, once
 * it is decided, continues the turn from that point (the human-in-the-loop pause and resume).
 */
import * as Schema from "effect/Schema"
import { TurnCheckpoint } from "./Checkpoint.ts"

/** The approval of a paused call, as the server shows it (`GET /v1/approvals`). */
export const PausedApproval = Schema.Struct({
  id: Schema.String,
  sessionKey: Schema.String,
  /** The loop's id of the turn (the checkpoint's). */
  turnId: Schema.String,
  toolCallId: Schema.String,
  toolName: Schema.String,
  /** The call's arguments, scrubbed of known secrets. */
  arguments: Schema.Unknown,
  requestedAt: Schema.Number,
  status: Schema.Literals(["pending", "allow", "deny", "timeout"]),
  reason: Schema.optionalKey(Schema.String)
})
export type PausedApproval = typeof PausedApproval.Type

/** A paused call: its approval and what its turn had completed when it paused. */
export const PausedCall = Schema.Struct({
  approval: PausedApproval,
  checkpoint: TurnCheckpoint
})
export type PausedCall = typeof PausedCall.Type
