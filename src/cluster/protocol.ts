/**
 * The session entity of the cluster: one entity per session key, whose RPCs are the `AgentLoop`
 * operations that target one session (DESIGN §5).
 *
 * Delivery: `Turn` and `Send` are persisted (the cluster stores the request in its message storage
 * before delivering it), so a request is never lost: if its runner dies before the turn started,
 * the session's next runner runs it. A runner claims a request before its turn starts
 * (`claims.ts`), so the next runner can tell a request that was already running when its runner
 * died (a `Turn` resumes from its checkpoint, `resume.ts`, else it ends `aborted` like a hard
 * abort) from one that never started. `Turn` has one reply,
 * so nothing in it waits for the client's acknowledgements; `Send` streams (its caller returns at
 * `Accepted`, and follow-ups bring more replies). The control operations and `Events` are
 * volatile: they act on whatever runs now, and a session whose runner died has no active turn.
 */
import { randomUUID } from "node:crypto"
import * as Schema from "effect/Schema"
import * as ClusterSchema from "effect/cluster/ClusterSchema"
import * as Entity from "effect/cluster/Entity"
import * as Rpc from "effect/rpc/Rpc"
import { CompactionFailed, ContentRejected, NoActiveTurn, SteeringQueueFull } from "../domain/errors.ts"
import { AgentEvent, Resumed } from "../domain/Event.ts"
import { Content } from "../domain/Message.ts"
import { ModelOptions } from "../domain/ModelOptions.ts"
import { CompactResult, Outbound, SteerAck, TurnInfo, TurnResult } from "../domain/Turn.ts"
import { LogRange } from "./replyLog.ts"

/** `Send` reached a runner, which will run it as a turn (its chunk is stored before the turn is claimed). */
export const Accepted = Schema.TaggedStruct("Accepted", {})

/**
 * The turn's result; `lost` when its runner died while it ran and it could not resume; `resumed`
 * (its `Resumed` event) when it resumed on this runner from its checkpoint; `log` when its messages
 * are left out, to be read from the session log.
 */
export const Finished = Schema.TaggedStruct("Finished", {
  result: TurnResult,
  lost: Schema.Boolean,
  resumed: Schema.optionalKey(Resumed),
  /** Where the result's messages are in the session log, when they were left out of it (`replyLog.ts`). */
  log: Schema.optionalKey(LogRange)
})

/** `Send` made the message steering for the session's active turn: no reply will follow. */
export const Steered = Schema.TaggedStruct("Steered", {})

/** `Send` ran a turn (the message's own, or a follow-up queued during it): its router reply. */
export const Replied = Schema.TaggedStruct("Replied", {
  outbound: Outbound,
  lost: Schema.Boolean,
  /** The turn's `Resumed` event, when it resumed on this runner from its checkpoint. */
  resumed: Schema.optionalKey(Resumed),
  /** Where the turn's messages are in the session log, when the result leaves them out (`replyLog.ts`). */
  log: Schema.optionalKey(LogRange)
})

/** What a `Send` request streams back: `Steered`, or `Accepted` then one `Replied` per turn it ran. */
export const SendProgress = Schema.Union([Accepted, Steered, Replied])
export type SendProgress = typeof SendProgress.Type

/** Events of one session; the first chunk, `Subscribed`, says the subscription is in place. */
export const Subscribed = Schema.TaggedStruct("Subscribed", {})
export const SessionEvent = Schema.Union([Subscribed, AgentEvent])
export type SessionEvent = typeof SessionEvent.Type

/**
 * A persisted request's signature, when the cluster has a secret (`auth.ts`): its HMAC, over the
 * request with a nonce and the time it was made (`nonces.ts`).
 */
const signed = {
  signature: Schema.optionalKey(Schema.String),
  nonce: Schema.optionalKey(Schema.String),
  issuedAt: Schema.optionalKey(Schema.Number)
}

/**
 * A request's own key, made by its client (random): the cluster's storage keeps one request per
 * key, so a client whose connection was cut while it stored the request may store it again (it
 * then waits on the one stored), and a client that gives up on it can cancel it by this key
 * (`fates.ts`). A request without one (written by other code) is stored as new each time.
 */
const keyed = { key: Schema.optionalKey(Schema.String) }

/** The storage key of a request: its own key, or a fresh one (no deduplication) when it has none. */
const primaryKey = (payload: { readonly key?: string | undefined }): string => payload.key ?? randomUUID()

/** One turn of the session (`AgentLoop.turn`), with its options (the model, the tools, the model options); input with images the runner's model does not take is rejected. */
export const Turn = Rpc.make("Turn", {
  payload: {
    input: Content,
    model: Schema.optionalKey(Schema.String),
    tools: Schema.optionalKey(Schema.Array(Schema.String)),
    ...ModelOptions.fields,
    ...keyed,
    ...signed
  },
  success: Finished,
  error: ContentRejected,
  primaryKey
}).annotate(ClusterSchema.Persisted, true)

/** The router (`AgentLoop.send`) for one session. */
export const Send = Rpc.make("Send", {
  payload: { content: Schema.String, ...keyed, ...signed },
  success: SendProgress,
  error: SteeringQueueFull,
  stream: true,
  primaryKey
}).annotate(ClusterSchema.Persisted, true)

export const InjectSteering = Rpc.make("InjectSteering", {
  payload: { message: Schema.String },
  error: Schema.Union([NoActiveTurn, SteeringQueueFull])
})

export const InjectFollowUp = Rpc.make("InjectFollowUp", { payload: { message: Schema.String }, error: NoActiveTurn })

export const InterruptGraceful = Rpc.make("InterruptGraceful", {
  payload: { hint: Schema.optionalKey(Schema.String) },
  error: NoActiveTurn
})

export const InterruptHard = Rpc.make("InterruptHard", { error: NoActiveTurn })

/** Stop now (`AgentLoop.interruptNow`) on the runner that has the session. */
export const InterruptNow = Rpc.make("InterruptNow", { error: NoActiveTurn })

/** Acknowledged steering (`AgentLoop.steer`) of the session's running turn; `NoActiveTurn` when none runs (the client then sends it). */
export const Steer = Rpc.make("Steer", { payload: { message: Schema.String }, success: SteerAck, error: Schema.Union([NoActiveTurn, SteeringQueueFull]) })

/** Summarises the session now (`AgentLoop.compact`) on the runner that has it. */
export const Compact = Rpc.make("Compact", {
  payload: { keepMessages: Schema.optionalKey(Schema.Number), model: Schema.optionalKey(Schema.String) },
  success: CompactResult,
  error: CompactionFailed
})

export const ActiveTurn = Rpc.make("ActiveTurn", { success: Schema.UndefinedOr(TurnInfo) })

/** The session's events while the stream is open, from whichever runner has the session. */
export const Events = Rpc.make("Events", { success: SessionEvent, stream: true })

/** The entity type; its id is the session key. */
export const AgentSession = Entity.make("effect-agent-loop/AgentSession", [
  Turn,
  Send,
  InjectSteering,
  InjectFollowUp,
  InterruptGraceful,
  InterruptHard,
  InterruptNow,
  Steer,
  Compact,
  ActiveTurn,
  Events
])
