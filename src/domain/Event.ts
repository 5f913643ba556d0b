/**
 * `AgentEvent`: everything the loop does, as typed values on the event bus.
 *
 * Every event carries where it happened (`turnId`, `sessionKey`, `iteration`, `depth`,
 * `parentTurnId` for sub-turns) and when (`at`, epoch milliseconds from the Clock).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { AgentLoop } from "effect-agent-loop"
 *
 * const program = Effect.gen(function*() {
 *   const loop = yield* AgentLoop
 *   const deltas = loop.events({ kinds: ["LLMDelta"] }) // a Stream of the LLMDelta events
 * })
 * ```
 */
import * as Schema from "effect/Schema"
import { ModelOptions } from "./ModelOptions.ts"
import { FinishReason } from "./Provider.ts"
import { Content, ToolCall } from "./Message.ts"
import { TurnStatus } from "./Turn.ts"
import { Usage } from "./Usage.ts"

const base = {
  turnId: Schema.String,
  sessionKey: Schema.String,
  iteration: Schema.Number,
  depth: Schema.Number,
  parentTurnId: Schema.optionalKey(Schema.String),
  at: Schema.Number
}

/** The fields every event carries. */
export type EventBase = {
  readonly turnId: string
  readonly sessionKey: string
  readonly iteration: number
  readonly depth: number
  readonly parentTurnId?: string
  readonly at: number
}

/** A turn began with this input (text, or parts with its images). */
export const TurnStart = Schema.TaggedStruct("TurnStart", { ...base, input: Content })
  .annotate({ description: "A turn began with this input (text, or parts with its images)." })
/** A turn ended; published exactly once per turn, also after a hard abort. */
export const TurnEnd = Schema.TaggedStruct("TurnEnd", {
  ...base,
  status: TurnStatus,
  /** As `TurnResult.iterations`: the iterations that called the model. */
  iterations: Schema.Number,
  durationMs: Schema.Number,
  usage: Usage,
  error: Schema.optionalKey(Schema.String),
  /** As `TurnResult.output`: the decoded typed answer. */
  output: Schema.optionalKey(Schema.Unknown)
}).annotate({ description: "A turn ended; published exactly once per turn, also after a hard abort." })
/** A provider call is about to be made. */
export const LLMRequest = Schema.TaggedStruct("LLMRequest", {
  ...base,
  model: Schema.String,
  messageCount: Schema.Number,
  toolCount: Schema.Number,
  /** The names of the tools offered (events recorded before it have the count only). */
  tools: Schema.optionalKey(Schema.Array(Schema.String)),
  /** The model options sent (temperature, maxTokens, reasoning, …), when any are set. */
  options: Schema.optionalKey(ModelOptions)
}).annotate({ description: "A provider call is about to be made." })
/** One streamed delta: text, reasoning, or a piece of a tool call. */
export const LLMDelta = Schema.TaggedStruct("LLMDelta", {
  ...base,
  kind: Schema.Literals(["text", "reasoning", "tool_call"]),
  text: Schema.String,
  toolCallIndex: Schema.optionalKey(Schema.Number)
}).annotate({ description: "One streamed delta: text, reasoning, or a piece of a tool call." })
/** A provider call finished. */
export const LLMResponse = Schema.TaggedStruct("LLMResponse", {
  ...base,
  model: Schema.String,
  content: Schema.String,
  toolCalls: Schema.Array(ToolCall),
  finishReason: FinishReason,
  usage: Usage,
  durationMs: Schema.Number
}).annotate({ description: "A provider call finished." })
/** A provider call failed and will be retried after `delayMs`. */
export const LLMRetry = Schema.TaggedStruct("LLMRetry", {
  ...base,
  attempt: Schema.Number,
  reason: Schema.String,
  delayMs: Schema.Number
}).annotate({ description: "A provider call failed and will be retried after `delayMs`." })
/** Old messages were dropped to fit the context: `overflow` (provider said so) or `budget`. */
export const ContextCompress = Schema.TaggedStruct("ContextCompress", {
  ...base,
  reason: Schema.Literals(["overflow", "budget"]),
  dropped: Schema.Number,
  remaining: Schema.Number
}).annotate({ description: "Old messages were dropped to fit the context: `overflow` (provider said so) or `budget`." })
/** The older part of a session was replaced by a summary. */
export const SessionSummarize = Schema.TaggedStruct("SessionSummarize", {
  ...base,
  summarized: Schema.Number,
  remaining: Schema.Number
}).annotate({ description: "The older part of a session was replaced by a summary." })
/** A tool call starts: `arguments` as `beforeTool` hooks left them, `originalArguments` the model's own when hooks changed them. */
export const ToolExecStart = Schema.TaggedStruct("ToolExecStart", {
  ...base,
  toolCallId: Schema.String,
  toolName: Schema.String,
  /** The arguments as JSON, as `beforeTool` hooks left them: what the tool's Schema decodes. */
  arguments: Schema.String,
  /** The model's own arguments, only when hooks changed them. */
  originalArguments: Schema.optionalKey(Schema.String)
}).annotate({
  description: "A tool call starts: `arguments` as `beforeTool` hooks left them, `originalArguments` the model's own when hooks changed them."
})
/** A tool call ended (successfully or with an error result); `durationMs` excludes the wait for approval. */
export const ToolExecEnd = Schema.TaggedStruct("ToolExecEnd", {
  ...base,
  toolCallId: Schema.String,
  toolName: Schema.String,
  durationMs: Schema.Number,
  isError: Schema.Boolean,
  result: Schema.String
}).annotate({ description: "A tool call ended (successfully or with an error result); `durationMs` excludes the wait for approval." })
/** A tool call was not run; `reason` is the result the model sees. */
export const ToolExecSkipped = Schema.TaggedStruct("ToolExecSkipped", {
  ...base,
  toolCallId: Schema.String,
  toolName: Schema.String,
  reason: Schema.String
}).annotate({ description: "A tool call was not run; `reason` is the result the model sees." })
/** Queued steering messages joined the history. */
export const SteeringInjected = Schema.TaggedStruct("SteeringInjected", { ...base, count: Schema.Number })
  .annotate({ description: "Queued steering messages joined the history." })
/** A follow-up was queued for after the turn. */
export const FollowUpQueued = Schema.TaggedStruct("FollowUpQueued", { ...base, content: Schema.String })
  .annotate({ description: "A follow-up was queued for after the turn." })
/** An interrupt reached the turn: graceful, hard, stop now (`now`), or steering that skips the remaining tools. */
export const InterruptReceived = Schema.TaggedStruct("InterruptReceived", {
  ...base,
  kind: Schema.Literals(["graceful", "hard", "now", "steering"]),
  hint: Schema.optionalKey(Schema.String)
}).annotate({ description: "An interrupt reached the turn: graceful, hard, stop now (`now`), or steering that skips the remaining tools." })
/**
 * A turn cut short by a crash (its runner died) resumed from its last checkpoint, with the same
 * turn id: `fromIteration` is the iteration it had completed, `runner` who resumed it (a cluster
 * runner's address), `rerun` the calls that had started and run again (their tools are
 * idempotent), `interrupted` those whose result now says they were interrupted by the crash.
 */
export const Resumed = Schema.TaggedStruct("Resumed", {
  ...base,
  fromIteration: Schema.Number,
  runner: Schema.optionalKey(Schema.String),
  rerun: Schema.Array(Schema.String),
  interrupted: Schema.Array(Schema.String)
}).annotate({ description: "A turn cut short by a crash resumed from its last checkpoint, same turn id (`fromIteration`, `runner`, calls `rerun` or told they were `interrupted`)." })
/** A sub-turn was spawned by this turn. */
export const SubTurnSpawn = Schema.TaggedStruct("SubTurnSpawn", {
  ...base,
  childTurnId: Schema.String,
  model: Schema.String,
  async: Schema.Boolean,
  critical: Schema.Boolean
}).annotate({ description: "A sub-turn was spawned by this turn." })
/** A sub-turn of this turn ended. */
export const SubTurnEnd = Schema.TaggedStruct("SubTurnEnd", {
  ...base,
  childTurnId: Schema.String,
  status: TurnStatus
}).annotate({ description: "A sub-turn of this turn ended." })
/** An async sub-turn's result joined this turn's history. */
export const SubTurnResultDelivered = Schema.TaggedStruct("SubTurnResultDelivered", {
  ...base,
  childTurnId: Schema.String
}).annotate({ description: "An async sub-turn's result joined this turn's history." })
/** An async sub-turn's result could not be delivered. */
export const SubTurnOrphan = Schema.TaggedStruct("SubTurnOrphan", {
  ...base,
  childTurnId: Schema.String,
  reason: Schema.Literals(["parent_ended", "queue_full"]),
  content: Schema.String
}).annotate({ description: "An async sub-turn's result could not be delivered." })
/** One item of the turn's todo list (`todo_write`). */
export const TodoItem = Schema.Struct({
  /** What is to be done, in the imperative ("Run the tests"). */
  content: Schema.String,
  status: Schema.Literals(["pending", "in_progress", "completed"]),
  /** The same in the present continuous ("Running the tests"), shown while it is in progress. */
  activeForm: Schema.optionalKey(Schema.String)
})
export type TodoItem = typeof TodoItem.Type
/** The model wrote its todo list (the whole list, as it now stands). */
export const TodoUpdated = Schema.TaggedStruct("TodoUpdated", {
  ...base,
  toolCallId: Schema.String,
  todos: Schema.Array(TodoItem)
}).annotate({ description: "The model wrote its todo list (the whole list, as it now stands)." })
/** Something went wrong that did not end the turn, or did (`stage` says where). */
export const ErrorEvent = Schema.TaggedStruct("Error", {
  ...base,
  stage: Schema.String,
  message: Schema.String,
  hook: Schema.optionalKey(Schema.String)
}).annotate({ description: "Something went wrong that did not end the turn, or did (`stage` says where)." })

/** Any event of the loop. */
export const AgentEvent = Schema.Union([
  TurnStart,
  TurnEnd,
  LLMRequest,
  LLMDelta,
  LLMResponse,
  LLMRetry,
  ContextCompress,
  SessionSummarize,
  ToolExecStart,
  ToolExecEnd,
  ToolExecSkipped,
  SteeringInjected,
  FollowUpQueued,
  InterruptReceived,
  Resumed,
  SubTurnSpawn,
  SubTurnEnd,
  SubTurnResultDelivered,
  SubTurnOrphan,
  TodoUpdated,
  ErrorEvent
])
export type AgentEvent = typeof AgentEvent.Type

/** The `_tag` of an event. */
export type EventKind = AgentEvent["_tag"]

/** The event of one kind. */
export type EventOf<K extends EventKind> = Extract<AgentEvent, { readonly _tag: K }>

/** All 19 kinds, in the order of DESIGN §6. */
export const kinds: ReadonlyArray<EventKind> = AgentEvent.members.map((m) => m.fields._tag.schema.literal)

/** The fields of an event beyond its base. */
export type EventPayload<K extends EventKind> = Omit<EventOf<K>, keyof EventBase | "_tag">

/** Where an event happened: its base fields but the time (an absent parent may be `undefined`). */
export type EventPlace = Omit<EventBase, "at" | "parentTurnId"> & { readonly parentTurnId?: string | undefined }

/**
 * Builds an event from where it happened, when, and its own fields.
 *
 * @example
 * ```ts
 * import { AgentEvent } from "effect-agent-loop"
 *
 * const event = AgentEvent.make("Error", { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }, 0, {
 *   stage: "beforeTool",
 *   message: "timed out"
 * })
 * ```
 */
export const make = <K extends EventKind>(kind: K, place: EventPlace, at: number, payload: EventPayload<K>): EventOf<K> =>
  // Two literals, not a conditional spread (the design doc's "Performance").
  (place.parentTurnId === undefined
    ? { _tag: kind, turnId: place.turnId, sessionKey: place.sessionKey, iteration: place.iteration, depth: place.depth, at, ...payload }
    : {
      _tag: kind,
      turnId: place.turnId,
      sessionKey: place.sessionKey,
      iteration: place.iteration,
      depth: place.depth,
      parentTurnId: place.parentTurnId,
      at,
      ...payload
    }) as unknown as EventOf<K>

/**
 * `make("LLMDelta", place, at, { kind, text, toolCallIndex })`, built as one literal (the event a
 * turn publishes most; see the design doc's "Performance"). Same fields, same order.
 */
export const delta = (
  place: EventPlace,
  at: number,
  kind: "text" | "reasoning" | "tool_call",
  text: string,
  toolCallIndex?: number
): EventOf<"LLMDelta"> => {
  const { turnId, sessionKey, iteration, depth, parentTurnId } = place
  if (toolCallIndex === undefined) {
    return parentTurnId === undefined
      ? { _tag: "LLMDelta", turnId, sessionKey, iteration, depth, at, kind, text }
      : { _tag: "LLMDelta", turnId, sessionKey, iteration, depth, parentTurnId, at, kind, text }
  }
  return parentTurnId === undefined
    ? { _tag: "LLMDelta", turnId, sessionKey, iteration, depth, at, kind, text, toolCallIndex }
    : { _tag: "LLMDelta", turnId, sessionKey, iteration, depth, parentTurnId, at, kind, text, toolCallIndex }
}
