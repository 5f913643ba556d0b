/**
 * Turn results and the live view of running turns.
 */
import * as Schema from "effect/Schema"
import { TurnFailure } from "./errors.ts"
import { AssistantMessage, Message } from "./Message.ts"
import { Usage } from "./Usage.ts"

/** How a turn ended. */
export const TurnStatus = Schema.Literals(["completed", "interrupted", "aborted", "blocked", "max_iterations", "failed"])
export type TurnStatus = typeof TurnStatus.Type

/** What `turn(...)` returns. `messages` are those the turn added to the session. */
export const TurnResult = Schema.Struct({
  turnId: Schema.String,
  sessionKey: Schema.String,
  status: TurnStatus,
  finalMessage: Schema.optionalKey(AssistantMessage),
  messages: Schema.Array(Message),
  followUps: Schema.Array(Schema.String),
  /**
   * The turn's iterations that called the model: what `maxIterations` limits. A graceful
   * interrupt's tool-less summary call counts as one more; a call repeated after a truncated
   * answer or a context overflow, or retried after a provider failure, is part of its iteration.
   */
  iterations: Schema.Number,
  usage: Usage,
  /** What went wrong, in words (`failure`'s message, as the CLI and the router show it). */
  error: Schema.optionalKey(Schema.String),
  /** What went wrong, as a tagged value to match on (`TurnFailure`); set whenever `error` is, but after a hard abort. */
  failure: Schema.optionalKey(TurnFailure),
  /** The final answer decoded by the turn's `output` Schema, when it asked for one and got it. */
  output: Schema.optionalKey(Schema.Unknown)
})
export type TurnResult = typeof TurnResult.Type

/**
 * What `AgentLoop.compact` did: `summarized` messages of the session's view were replaced by one
 * summary message, leaving `remaining` (the summary and the newest messages kept verbatim).
 * `summarized` is 0 when there was nothing older than the messages kept: nothing was appended.
 */
export const CompactResult = Schema.Struct({
  sessionKey: Schema.String,
  summarized: Schema.Number,
  remaining: Schema.Number
})
export type CompactResult = typeof CompactResult.Type

/** Where a running turn is. */
export const TurnPhase = Schema.Literals(["starting", "llm", "tools", "finishing"])
export type TurnPhase = typeof TurnPhase.Type

/** A running turn, as `activeTurn`/`activeTurns` show it. */
export const TurnInfo = Schema.Struct({
  turnId: Schema.String,
  sessionKey: Schema.String,
  iteration: Schema.Number,
  startedAt: Schema.Number,
  parentTurnId: Schema.optionalKey(Schema.String),
  childTurnIds: Schema.Array(Schema.String),
  phase: TurnPhase,
  depth: Schema.Number
})
export type TurnInfo = typeof TurnInfo.Type

/**
 * What `steer` says of a message, never dropped: `Admitted` to the session's running turn, whose
 * model call number `iteration` will see it (unless the turn ends first — a failure, an interrupt
 * — and it then runs as a follow-up); or `Queued`: `follow_up` when the running turn has no step
 * left to join (it runs as a new turn right after that one), `next_turn` when no turn takes input
 * (it runs as the session's next turn, through the router: its reply is on `outbound`).
 */
export const SteerAck = Schema.Union([
  Schema.TaggedStruct("Admitted", { turnId: Schema.String, iteration: Schema.Number }),
  Schema.TaggedStruct("Queued", { reason: Schema.Literals(["follow_up", "next_turn"]), turnId: Schema.optionalKey(Schema.String) })
])
export type SteerAck = typeof SteerAck.Type

/** What `send` takes: one inbound message for a session. */
export const Inbound = Schema.Struct({
  sessionKey: Schema.String,
  content: Schema.String
})
export type Inbound = typeof Inbound.Type

/** What the router publishes once per turn it ran. */
export const Outbound = Schema.Struct({
  sessionKey: Schema.String,
  turnId: Schema.String,
  status: TurnStatus,
  content: Schema.String,
  result: TurnResult
})
export type Outbound = typeof Outbound.Type

/** The router's reply for a turn: its final text, else its error. */
export const outboundOf = (result: TurnResult): Outbound => ({
  sessionKey: result.sessionKey,
  turnId: result.turnId,
  status: result.status,
  content: result.finalMessage?.content ?? result.error ?? "",
  result
})
