/**
 * Every failure of the library is a tagged value.
 */
import * as Schema from "effect/Schema"

/** The request does not fit the model's context window. Recovered by compression. */
export class ContextLengthExceeded extends Schema.TaggedError<ContextLengthExceeded>()("ContextLengthExceeded", {
  message: Schema.String
}) {}

/** HTTP 429. `retryAfterMs` comes from the server's `Retry-After`. Retried. */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  message: Schema.String,
  retryAfterMs: Schema.optionalKey(Schema.Number)
}) {}

/** 5xx, 529, or the network. Retried. */
export class ProviderUnavailable extends Schema.TaggedError<ProviderUnavailable>()("ProviderUnavailable", {
  message: Schema.String,
  status: Schema.optionalKey(Schema.Number)
}) {}

/** Any other 4xx (bad request, auth). Not retried. */
export class ProviderRejected extends Schema.TaggedError<ProviderRejected>()("ProviderRejected", {
  message: Schema.String,
  status: Schema.optionalKey(Schema.Number)
}) {}

/** The stream ended early or carried something that could not be decoded. */
export class MalformedResponse extends Schema.TaggedError<MalformedResponse>()("MalformedResponse", {
  message: Schema.String
}) {}

/**
 * A response whose text, reasoning and tool-call arguments together passed `maxResponseBytes`: the
 * call is stopped there and nothing of the response is kept. Not retried.
 */
export class ResponseTooLarge extends Schema.TaggedError<ResponseTooLarge>()("ResponseTooLarge", {
  message: Schema.String,
  limitBytes: Schema.Number
}) {}

/** Any provider failure. */
export type ProviderError =
  | ContextLengthExceeded
  | RateLimited
  | ProviderUnavailable
  | ProviderRejected
  | MalformedResponse
  | ResponseTooLarge

/** A tool's own failure; its message becomes the error result the model sees. */
export class ToolError extends Schema.TaggedError<ToolError>()("ToolError", {
  message: Schema.String
}) {}

/** The session has no running turn to steer or interrupt. */
export class NoActiveTurn extends Schema.TaggedError<NoActiveTurn>()("NoActiveTurn", {
  sessionKey: Schema.String
}) {}

/** The steering queue of the session's turn is full; the message was not accepted. */
export class SteeringQueueFull extends Schema.TaggedError<SteeringQueueFull>()("SteeringQueueFull", {
  sessionKey: Schema.String,
  capacity: Schema.Number
}) {}

/**
 * Input the loop will not take, refused before anything is stored or sent: an image over the size
 * cap (`too_large`), one that is not a PNG, JPEG, GIF or WebP in valid base64, or a URL that is not
 * `http(s):` or `data:` (`invalid`), images for a model that does not accept them or is unknown
 * (`unsupported`; see `AgentLoopConfig.acceptsImages`), or no parts at all (`empty`).
 */
export class ContentRejected extends Schema.TaggedError<ContentRejected>()("ContentRejected", {
  reason: Schema.Literals(["too_large", "invalid", "unsupported", "empty"]),
  message: Schema.String
}) {}

/**
 * A configuration value is invalid; `field` names it. Its tag stays `ConfigError`, the name it
 * had before it was renamed so as not to shadow `effect`'s own `Config.ConfigError`: output and
 * `catchTag` that name it keep working.
 */
export class InvalidConfig extends Schema.TaggedError<InvalidConfig>()("ConfigError", {
  field: Schema.String,
  message: Schema.String
}) {}

/** A session store could not read or write. */
export class SessionStoreError extends Schema.TaggedError<SessionStoreError>()("SessionStoreError", {
  sessionKey: Schema.String,
  message: Schema.String,
  /** The store's database was restarting or cut off: the same call may succeed in a moment (`isTransient`). */
  transient: Schema.optionalKey(Schema.Boolean)
}) {}

/** A rewind asked for a user message the session's view does not hold; nothing was appended. */
export class InvalidRewind extends Schema.TaggedError<InvalidRewind>()("InvalidRewind", {
  sessionKey: Schema.String,
  message: Schema.String
}) {}

/**
 * A commit carried a stale ownership epoch: another runner took the session since this turn
 * started (a cluster's fence). Nothing of the commit was stored; the turn ends `aborted`.
 */
export class SessionFenced extends Schema.TaggedError<SessionFenced>()("SessionFenced", {
  sessionKey: Schema.String,
  /** The epoch the commit carried. */
  epoch: Schema.Number,
  /** The session's epoch in the store (0 when it has no owner). */
  current: Schema.Number,
  message: Schema.String
}) {}

/**
 * `AgentLoop.compact` could not summarise the session (the provider failed, timed out or answered
 * nothing, a `beforeCompact` hook stopped it, or a cluster runner lost the session); nothing was
 * appended, the history is as it was.
 */
export class CompactionFailed extends Schema.TaggedError<CompactionFailed>()("CompactionFailed", {
  sessionKey: Schema.String,
  message: Schema.String
}) {}

/** A sub-turn would be nested deeper than allowed. */
export class DepthLimitExceeded extends Schema.TaggedError<DepthLimitExceeded>()("DepthLimitExceeded", {
  depth: Schema.Number,
  maxDepth: Schema.Number
}) {}

/** A sub-turn configuration failed validation. */
export class InvalidSubTurnConfig extends Schema.TaggedError<InvalidSubTurnConfig>()("InvalidSubTurnConfig", {
  message: Schema.String
}) {}

/** A sub-turn waited too long for a concurrency slot. */
export class ConcurrencyTimeout extends Schema.TaggedError<ConcurrencyTimeout>()("ConcurrencyTimeout", {
  waitedMs: Schema.Number
}) {}

/** A `beforeSubTurn` hook blocked the sub-turn. */
export class SubTurnBlocked extends Schema.TaggedError<SubTurnBlocked>()("SubTurnBlocked", {
  reason: Schema.String
}) {}

/** Replaying a cassette met a request that is not the next recorded one. */
export class ReplayMismatch extends Schema.TaggedError<ReplayMismatch>()("ReplayMismatch", {
  message: Schema.String
}) {}

/** A hook (or the loop, at compaction) ended the turn at `stage`: the turn fails, with an `Error` event naming the hook. */
export class TurnAborted extends Schema.TaggedError<TurnAborted>()("TurnAborted", {
  stage: Schema.String,
  reason: Schema.String,
  hook: Schema.optionalKey(Schema.String)
}) {}

/** A `sessionStart` or `beforeTurn` hook blocked the turn before it called the model. */
export class TurnBlocked extends Schema.TaggedError<TurnBlocked>()("TurnBlocked", {
  stage: Schema.Literals(["sessionStart", "beforeTurn"]),
  hook: Schema.String,
  reason: Schema.String
}) {}

/** A typed answer cannot be asked for (a registered tool has the answer tool's name). */
export class OutputUnavailable extends Schema.TaggedError<OutputUnavailable>()("OutputUnavailable", {
  message: Schema.String
}) {}

/** The model's answers never matched the output Schema, within `maxOutputRetries`. */
export class OutputInvalid extends Schema.TaggedError<OutputInvalid>()("OutputInvalid", {
  message: Schema.String
}) {}

/** A sub-turn was stopped from outside: its timeout, or its parent ending. */
export class SubTurnStopped extends Schema.TaggedError<SubTurnStopped>()("SubTurnStopped", {
  message: Schema.String
}) {}

/** The turn died of something that is not one of the library's failures (a defect). */
export class TurnDefect extends Schema.TaggedError<TurnDefect>()("TurnDefect", {
  message: Schema.String
}) {}

/**
 * A turn could not resume from its checkpoint: the session's history is no longer the one the
 * checkpoint was taken on (its own commit may have landed just before its runner stopped). It
 * ends `aborted`, writing nothing.
 */
export class CheckpointStale extends Schema.TaggedError<CheckpointStale>()("CheckpointStale", {
  turnId: Schema.String,
  message: Schema.String
}) {}

/** Why a turn did not complete as asked: `TurnResult.failure`, to match on by `_tag`. */
export const TurnFailure = Schema.Union([
  ContextLengthExceeded,
  RateLimited,
  ProviderUnavailable,
  ProviderRejected,
  MalformedResponse,
  SessionStoreError,
  SessionFenced,
  InvalidConfig,
  TurnAborted,
  TurnBlocked,
  OutputUnavailable,
  OutputInvalid,
  SubTurnStopped,
  CheckpointStale,
  TurnDefect
])
export type TurnFailure = typeof TurnFailure.Type
