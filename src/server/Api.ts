/**
 * The server's API as one `HttpApi` declaration: every route under `/v1`, its path parameters,
 * bodies, answers and errors as Schemas. The server's handlers (`Server.ts`), the OpenAPI document
 * (`GET /openapi.json`) and the typed client (`effect-agent-loop/client`) all come from it.
 */
import * as Schema from "effect/Schema"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiError from "effect/http-api/HttpApiError"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as HttpApiSecurity from "effect/http-api/HttpApiSecurity"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Sse from "effect/encoding/Sse"
import { PausedApproval } from "../domain/PausedTurn.ts"
import { SessionEntry } from "../domain/SessionLog.ts"
import { TurnResult } from "../domain/Turn.ts"
import { ChatRequest, UIMessageChunk } from "./uiMessageStream.ts"

/** A message sent to a session (a turn, steering, a follow-up): non-empty text. */
export const MessageBody = Schema.Struct({ message: Schema.NonEmptyString })

/** A session the store does not know. */
export class SessionNotFound extends Schema.TaggedError<SessionNotFound>()("SessionNotFound", {
  sessionKey: Schema.String
}, { httpApiStatus: 404 }) {}

/** A turn this server does not know (never started here, or forgotten). */
export class TurnNotFound extends Schema.TaggedError<TurnNotFound>()("TurnNotFound", {
  turnId: Schema.String
}, { httpApiStatus: 404 }) {}

/** An approval this server does not know. */
export class ApprovalNotFound extends Schema.TaggedError<ApprovalNotFound>()("ApprovalNotFound", {
  id: Schema.String
}, { httpApiStatus: 404 }) {}

/** A turn that is no longer running cannot be interrupted. */
export class TurnNotRunning extends Schema.TaggedError<TurnNotRunning>()("TurnNotRunning", {
  turnId: Schema.String,
  status: Schema.String
}, { httpApiStatus: 409 }) {}

/** An approval already decided otherwise: the first decision stands. */
export class AlreadyDecided extends Schema.TaggedError<AlreadyDecided>()("AlreadyDecided", {
  id: Schema.String,
  decision: Schema.String
}, { httpApiStatus: 409 }) {}

/** A chat request the server cannot act on (`message` says why). */
export class ChatRefused extends Schema.TaggedError<ChatRefused>()("ChatRefused", {
  message: Schema.String
}, { httpApiStatus: 400 }) {}

/** The session runs a turn already (or one waits to run): a chat's message would not be the next turn. */
export class SessionBusy extends Schema.TaggedError<SessionBusy>()("SessionBusy", {
  sessionKey: Schema.String
}, { httpApiStatus: 409 }) {}

/** The store failed; its message is scrubbed of secrets. */
export class StoreFailed extends Schema.TaggedError<StoreFailed>()("StoreFailed", {
  message: Schema.String
}, { httpApiStatus: 500 }) {}

/**
 * The bearer token check on every route but `GET /openapi.json`: a missing or wrong token gets an
 * empty 401, whatever else is wrong with the request.
 */
export class Authorization extends HttpApiMiddleware.Service<Authorization>()("effect-agent-loop/server/Authorization", {
  security: { bearer: HttpApiSecurity.bearer },
  error: HttpApiError.UnauthorizedNoContent
}) {}

/** A session as listed. */
export const SessionSummary = Schema.Struct({
  sessionKey: Schema.String,
  updatedAt: Schema.optionalKey(Schema.Number),
  messages: Schema.optionalKey(Schema.Number),
  turns: Schema.optionalKey(Schema.Number),
  preview: Schema.optionalKey(Schema.String)
})

/** A turn started through the API: running until its result is there. */
export const TurnState = Schema.Struct({
  /** The server's id of the turn (the loop's own is the result's `turnId`). */
  turnId: Schema.String,
  sessionKey: Schema.String,
  status: Schema.Literals(["running", "done"]),
  result: Schema.optionalKey(TurnResult)
})
export type TurnState = typeof TurnState.Type

/** What a steering message became: it is never dropped. */
export const SteerAnswer = Schema.Union([
  /** Joined the running turn: the loop's id of that turn and the iteration whose model call sees it. */
  Schema.Struct({ status: Schema.Literal("admitted"), turnId: Schema.String, iteration: Schema.Number }),
  /**
   * Queued: `follow_up` runs as a turn of its own right after the running one (`turnId`), which had
   * no model call left to join; `next_turn` runs as the session's next turn (no turn was running).
   */
  Schema.Struct({ status: Schema.Literal("queued"), reason: Schema.Literals(["follow_up", "next_turn"]), turnId: Schema.optionalKey(Schema.String) })
])
export type SteerAnswer = typeof SteerAnswer.Type

/** A follow-up: a turn of its own (this server's turn id), `queued` after the running one or `started` now. */
export const FollowUpAnswer = Schema.Struct({ status: Schema.Literals(["queued", "started"]), turnId: Schema.String })
export type FollowUpAnswer = typeof FollowUpAnswer.Type

/** The running turn holds as much steering as it may (`maxSteering`): send it again later. */
export class SteeringFull extends Schema.TaggedError<SteeringFull>()("SteeringFull", {
  sessionKey: Schema.String
}, { httpApiStatus: 429 }) {}

/** How to interrupt: `graceful` (finish with a summary), `now` (stop, keep what was committed), `hard` (cancel and roll back). */
export const InterruptBody = Schema.Struct({
  mode: Schema.Literals(["graceful", "now", "hard"]),
  hint: Schema.optionalKey(Schema.String)
})

/** A tool call waiting for a person's decision (the record a paused call keeps, `PausedTurn.ts`). */
export const Approval = PausedApproval
export type Approval = typeof Approval.Type

/** A decision on a pending approval. */
export const DecisionBody = Schema.Struct({
  decision: Schema.Literals(["allow", "deny"]),
  reason: Schema.optionalKey(Schema.String)
})

/** A tool as offered to the model. */
export const ToolSummary = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  requiresApproval: Schema.Boolean
})

/** The server's model: the configured one and the registry's known models. */
export const ModelsAnswer = Schema.Struct({
  default: Schema.optionalKey(Schema.String),
  models: Schema.Array(Schema.Struct({ name: Schema.String, provider: Schema.String }))
})

const key = { key: Schema.String }

/** Server-sent events: each with an `id:` to resume from with `Last-Event-ID`. */
const EventStream = HttpApiSchema.StreamSse({ events: Sse.EventEncoded })

/** The sessions: list, history, removal, turns, steering, follow-ups, their events. */
export class Sessions extends HttpApiGroup.make("sessions")
  .add(HttpApiEndpoint.get("list", "/sessions", { success: Schema.Array(SessionSummary), error: StoreFailed }))
  .add(HttpApiEndpoint.get("history", "/sessions/:key", {
    params: key,
    success: Schema.Struct({ sessionKey: Schema.String, entries: Schema.Array(SessionEntry) }),
    error: [SessionNotFound, StoreFailed]
  }))
  .add(HttpApiEndpoint.delete("remove", "/sessions/:key", { params: key, success: HttpApiSchema.NoContent, error: [SessionNotFound, StoreFailed] }))
  .add(HttpApiEndpoint.post("send", "/sessions/:key/turns", {
    params: key,
    payload: MessageBody,
    success: Schema.Struct({ turnId: Schema.String }).pipe(HttpApiSchema.status(202))
  }))
  .add(HttpApiEndpoint.post("steer", "/sessions/:key/steer", { params: key, payload: MessageBody, success: SteerAnswer, error: SteeringFull }))
  .add(HttpApiEndpoint.post("followUp", "/sessions/:key/followup", { params: key, payload: MessageBody, success: FollowUpAnswer }))
  .add(HttpApiEndpoint.get("events", "/sessions/:key/events", { params: key, success: EventStream, error: StoreFailed }))
  .prefix("/v1") {}

/** Turns started through the API: their state and result, interrupts. */
export class Turns extends HttpApiGroup.make("turns")
  .add(HttpApiEndpoint.get("get", "/turns/:turnId", {
    params: { turnId: Schema.String },
    /** Seconds to wait for the turn to end before answering (at most 60); default 0: answer at once. */
    query: { wait: Schema.optionalKey(Schema.FiniteFromString.check(Schema.isBetween({ minimum: 0, maximum: 60 }))) },
    success: TurnState,
    error: TurnNotFound
  }))
  .add(HttpApiEndpoint.post("interrupt", "/turns/:turnId/interrupt", {
    params: { turnId: Schema.String },
    payload: InterruptBody,
    success: HttpApiSchema.Accepted,
    error: [TurnNotFound, TurnNotRunning]
  }))
  .prefix("/v1") {}

/** Tool calls waiting for a decision. */
export class Approvals extends HttpApiGroup.make("approvals")
  .add(HttpApiEndpoint.get("list", "/approvals", { success: Schema.Array(Approval) }))
  .add(HttpApiEndpoint.post("decide", "/approvals/:id", {
    params: { id: Schema.String },
    payload: DecisionBody,
    success: Approval,
    error: [ApprovalNotFound, AlreadyDecided]
  }))
  .prefix("/v1") {}

/**
 * The AI SDK's UI message stream, for `useChat` (`@ai-sdk/react`): the body its transport posts
 * (the chat's `id` is the session key), answered with the turn as server-sent UI message chunks.
 */
export class Chat extends HttpApiGroup.make("chat")
  .add(HttpApiEndpoint.post("send", "/chat", {
    payload: ChatRequest,
    success: HttpApiSchema.StreamSse({ data: UIMessageChunk }),
    error: [ChatRefused, SessionBusy, ApprovalNotFound]
  }))
  .prefix("/v1") {}

/** What the server offers: every event, its models and tools. */
export class Server extends HttpApiGroup.make("server")
  .add(HttpApiEndpoint.get("events", "/events", { success: EventStream }))
  .add(HttpApiEndpoint.get("models", "/models", { success: ModelsAnswer }))
  .add(HttpApiEndpoint.get("tools", "/tools", { success: Schema.Array(ToolSummary) }))
  .prefix("/v1") {}

/** The whole API: every group behind the bearer token, request validation failures as 400 problems naming the field. */
export class AgentLoopApi extends HttpApi.make("agent-loop")
  .add(Sessions)
  .add(Turns)
  .add(Approvals)
  .add(Chat)
  .add(Server)
  .middleware(Authorization)
  .middleware(HttpApiMiddleware.ProblemDetails)
  .annotate(OpenApi.Title, "effect-agent-loop server")
  .annotate(OpenApi.Version, "1")
  .annotate(OpenApi.Description, "The agent loop as a service: sessions, turns, steering, interrupts, approvals, server-sent events with replay, and the AI SDK's UI message stream.") {}
