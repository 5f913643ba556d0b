/**
 * `AgentLoop`: the public API (DESIGN §5).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { AgentLoop } from "effect-agent-loop"
 *
 * const program = Effect.gen(function*() {
 *   const loop = yield* AgentLoop
 *   const result = yield* loop.turn("session-1", "What is in this directory?")
 *   console.log(result.status, result.finalMessage?.content)
 * })
 * ```
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { Checkpointing } from "../domain/Checkpoint.ts"
import type { CompactionFailed, ContentRejected, NoActiveTurn, SteeringQueueFull } from "../domain/errors.ts"
import type { AgentEvent } from "../domain/Event.ts"
import type { Hook, RegisterOptions } from "../domain/Hook.ts"
import type { ContentPart } from "../domain/Message.ts"
import type { ModelOptions } from "../domain/ModelOptions.ts"
import type { CompactResult, Inbound, Outbound, SteerAck, TurnInfo, TurnResult } from "../domain/Turn.ts"
import type { SubscribeOptions, Subscription } from "./EventBus.ts"

/**
 * Options of one turn. The model options (`temperature`, `topP`, `stop`, `seed`, `maxTokens`,
 * `reasoning`) override the config's `modelOptions` field by field for this turn and its
 * sub-turns; invalid ones end the turn `failed` with an `InvalidConfig` before any call.
 */
export interface TurnOptions extends ModelOptions {
  /** Overrides the configured model for this turn. */
  readonly model?: string
  /**
   * Narrows the tools offered in this turn (and its sub-turns) to those of these names. It can only
   * narrow: a name that is not registered adds nothing, and an empty list offers no tools.
   * Absent: every registered tool.
   */
  readonly tools?: ReadonlyArray<string>
  /**
   * Plan mode (Claude Code's): the model is offered only read-only tools (and, of those given,
   * within `tools`) plus `exit_plan_mode` when it is registered (`makeExitPlanMode`), whose call
   * hands the plan to its reviewer: accepted, the turn leaves plan mode and goes on with every
   * tool; with no reviewer, the turn ends with the plan as its answer. Sub-turns plan too.
   */
  readonly planMode?: boolean
  /**
   * Asks for a typed final answer: the turn's result carries it as `output`, decoded by this
   * Schema (from JSON, so the Schema's encoded side is what the model writes). An answer that
   * does not decode goes back to the model with the error, at most `maxOutputRetries` times;
   * then the turn ends `failed`.
   */
  readonly output?: Schema.Decoder<unknown>
  /** Overrides the JSON Schema derived from `output` (for a Schema imported from a JSON Schema). */
  readonly outputJsonSchema?: Record<string, unknown>
  /**
   * Makes the turn durable: its completed steps are saved as it goes, and with `resume` it
   * continues from a saved checkpoint (same turn id, iteration count and usage) instead of
   * starting afresh. See `Checkpoint`.
   */
  readonly checkpoint?: Checkpointing
}

/** Options of `compact`. */
export interface CompactOptions {
  /** The newest messages kept verbatim after the summary (a whole number, 0 or more; else `CompactionFailed`); default the config's `summarizeKeepMessages`. */
  readonly keepMessages?: number
  /** The model that writes the summary; default the config's `model`. */
  readonly model?: string
}

/** A turn's result whose `output` has the type of the turn's `output` Schema. */
export type TypedTurnResult<A> = Omit<TurnResult, "output"> & { readonly output?: A }

/**
 * Runs one turn; with an `output` Schema the result's `output` is typed by it. Text input cannot
 * be rejected; input given as parts may fail with `ContentRejected`.
 */
export interface Turn {
  <S extends Schema.Decoder<unknown>>(
    sessionKey: string,
    input: string,
    options: TurnOptions & { readonly output: S }
  ): Effect.Effect<TypedTurnResult<S["Type"]>>
  <S extends Schema.Decoder<unknown>>(
    sessionKey: string,
    input: string | ReadonlyArray<ContentPart>,
    options: TurnOptions & { readonly output: S }
  ): Effect.Effect<TypedTurnResult<S["Type"]>, ContentRejected>
  (sessionKey: string, input: string, options?: TurnOptions): Effect.Effect<TurnResult>
  (sessionKey: string, input: string | ReadonlyArray<ContentPart>, options?: TurnOptions): Effect.Effect<TurnResult, ContentRejected>
}

/** The loop. */
export interface AgentLoopShape {
  /**
   * Runs one turn and returns its result; turns of one session run one after another (FIFO). Input
   * given as parts (text and images) is checked first: images over `maxImageBytes`, malformed, or
   * for a model that does not accept them (`acceptsImages`) fail with `ContentRejected` before
   * anything is stored or sent. Text input cannot be rejected. With `output`, see `TurnOptions`.
   */
  readonly turn: Turn
  /** The router: starts a turn for an idle session (at most `maxParallelTurns` at once), else steers the active one. */
  readonly send: (inbound: Inbound) => Effect.Effect<void, SteeringQueueFull>
  /** One reply per turn the router ran. */
  readonly outbound: Stream.Stream<Outbound>
  /** Steering for the session's active turn. */
  readonly injectSteering: (sessionKey: string, message: string) => Effect.Effect<void, NoActiveTurn | SteeringQueueFull>
  /**
   * Steering, acknowledged: says whether the message was admitted to the running turn (its id, and
   * the model call it will join) or queued to run as a turn of its own (`SteerAck`); it is never
   * dropped. Fails only when the running turn's steering queue is full (`maxSteering`).
   */
  readonly steer: (sessionKey: string, message: string) => Effect.Effect<SteerAck, SteeringQueueFull>
  /** A follow-up, run as a new turn after the active one ends. */
  readonly injectFollowUp: (sessionKey: string, message: string) => Effect.Effect<void, NoActiveTurn>
  /** Skip the remaining tools, make one last tool-less call with the hint, end `interrupted`. */
  readonly interruptGraceful: (sessionKey: string, hint?: string) => Effect.Effect<void, NoActiveTurn>
  /** Cancel the turn now (and its sub-turns); the session rolls back; the turn ends `aborted`. */
  readonly interruptHard: (sessionKey: string) => Effect.Effect<void, NoActiveTurn>
  /**
   * Stop now: cancels the in-flight model call and running tools at once (sub-turns too; tools'
   * finalizers run) and ends the turn `interrupted` with no further model call, keeping what it did:
   * text already streamed is kept as a `partial` assistant message, tool calls without a result get
   * one saying the user stopped them, and a user message records the stop in the session. Returns
   * once the turn's work has stopped (the turn's own result follows as it is stored). If a hard
   * abort was asked first, that one wins.
   */
  readonly interruptNow: (sessionKey: string) => Effect.Effect<void, NoActiveTurn>
  /**
   * Summarises the session now, whatever its size: the older part of its view is replaced by one
   * summary written by the provider (a `summary` compaction record, `SessionSummarize`), keeping
   * the newest `keepMessages`. The log keeps every message. Waits for the session's running and
   * queued turns, like a turn; `beforeCompact`/`afterCompact` hooks run around it.
   */
  readonly compact: (sessionKey: string, options?: CompactOptions) => Effect.Effect<CompactResult, CompactionFailed>
  /** A scoped subscription to the event bus. */
  readonly subscribe: (options?: SubscribeOptions) => Effect.Effect<Subscription, never, Scope.Scope>
  /** The events as a stream. */
  readonly events: (options?: SubscribeOptions) => Stream.Stream<AgentEvent>
  /** Registers a hook for the life of the scope. */
  readonly registerHook: (hook: Hook, options?: RegisterOptions) => Effect.Effect<void, never, Scope.Scope>
  /** The active root turn of a session, if any. */
  readonly activeTurn: (sessionKey: string) => Effect.Effect<TurnInfo | undefined>
  /** Every running turn, sub-turns included. */
  readonly activeTurns: Effect.Effect<ReadonlyArray<TurnInfo>>
}

/** The agent loop service; `AgentLoopLive.layer(config)` builds it from the other services. */
export class AgentLoop extends Context.Service<AgentLoop, AgentLoopShape>()("effect-agent-loop/AgentLoop") {}
