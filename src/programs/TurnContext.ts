/**
 * The state of one running turn: its spec, its control block, the conversation so far and what
 * the turn produced, and an emitter stamping events with the turn's coordinates and the Clock's
 * time. The services live in the engine (`engine.ts`), not here.
 */
import { type Clock, Effect, type Schema, Tracer } from "effect"
import type { ConfigError, SessionStoreError } from "../domain/errors.ts"
import * as AgentEvent from "../domain/Event.ts"
import type { EventKind, EventPayload } from "../domain/Event.ts"
import type { Content, Message } from "../domain/Message.ts"
import type { Compaction, SessionEntry } from "../domain/SessionLog.ts"
import * as Usage from "../domain/Usage.ts"
import type { CurrentTurnShape } from "../services/CurrentTurn.ts"
import type { EventBusShape } from "../services/EventBus.ts"
import type { Compression } from "./compaction.ts"
import type { TurnControl } from "./TurnControl.ts"

/**
 * Where a turn's conversation comes from and goes to: a stored session for a root turn, an
 * ephemeral one for a sub-turn.
 */
export interface SessionPort {
  /** The history the turn starts from (the snapshot a hard abort returns to); a failure fails the turn. */
  readonly load: Effect.Effect<ReadonlyArray<Message>, SessionStoreError>
  /**
   * Stores, in one append, every message the turn produced followed by at most one compaction
   * record whose `cut` (an index into the loaded history followed by those messages) makes the
   * session's view the turn's final context.
   */
  readonly commit: (entries: ReadonlyArray<SessionEntry>) => Effect.Effect<void, SessionStoreError>
}

/** How a turn is started: by the agent loop for a session, or by a parent turn for a sub-turn. */
export interface TurnSpec {
  readonly control: TurnControl
  readonly input: Content
  readonly systemPrompt: string | undefined
  readonly session: SessionPort
  readonly maxTokens?: number | undefined
  /** A context budget in runes overriding the config's (sub-turns). */
  readonly contextBudget?: number | undefined
  /** At most this many messages are sent (sub-turns' ephemeral sessions). */
  readonly maxMessages?: number | undefined
  /** Whether this is the session's first turn in this loop (runs `sessionStart` hooks). */
  readonly firstOfSession: boolean
  /** Set when the turn's options are invalid: the turn fails with it before anything else. */
  readonly rejected?: ConfigError | undefined
  /** The typed answer asked for (`TurnOptions.output`), and its JSON Schema if given. */
  readonly output?: { readonly schema: Schema.Decoder<unknown>; readonly jsonSchema?: Record<string, unknown> | undefined } | undefined
}

/** An emitter of one turn's events. */
export type Emit = <K extends EventKind>(kind: K, payload: EventPayload<K>) => Effect.Effect<void>
/**
 * `Emit` as a plain function, for callers already inside an effect. `at` (default: the Clock's
 * time now) lets a caller that has just read the Clock, or publishes a batch at once, read it once.
 */
export type Publish = <K extends EventKind>(kind: K, payload: EventPayload<K>, at?: number) => void

/** The running turn. `conversation` is the session history plus what this turn added. */
export interface TurnContext {
  readonly spec: TurnSpec
  readonly control: TurnControl
  /** Publishes an event of this turn: one synchronous step. */
  readonly emit: Emit
  /** `emit` for code already inside an effect. */
  readonly publish: Publish
  /** Publishes an `LLMDelta` stamped `at` (the hottest event, see `AgentEvent.delta`). */
  readonly publishDelta: (kind: "text" | "reasoning" | "tool_call", text: string, at: number, toolCallIndex?: number) => void
  /** The Clock the turn started on (events and durations read it). */
  readonly clock: Clock.Clock
  /** What tools of this turn see (`CurrentTurn`). */
  readonly currentTurn: CurrentTurnShape
  /** Whether the turn makes spans for its provider and tool calls (see `spanned`). */
  readonly traced: boolean
  systemPrompt: string | undefined
  /** Session history followed by this turn's messages; compression may shorten its front. */
  conversation: Array<Message>
  /**
   * Whether the conversation may hold content parts: set when a message with parts joins it, never
   * cleared (compression only takes messages out), so a request is scanned for images only then.
   */
  partsSeen: boolean
  /** How many messages the loaded history held. */
  historyLength: number
  /** Every message this turn produced, in order, including those compression took out of `conversation`. */
  readonly produced: Array<Message>
  /** Set when the turn compressed: the record committed after `produced` (see `compacted`). */
  compaction: Compaction | undefined
  usage: Usage.Usage
  /** Text of the provider call in flight; kept as a `partial` message if the call fails for good. */
  readonly partial: { content: string }
  /** Models called this turn that have no price (each is warned about once). */
  readonly unpriced: Set<string>
  /** Provider calls made so far (retries after a truncated answer or an overflow included). */
  calls: number
  /** Iterations that called the model: what `maxIterations` limits (a graceful interrupt's summary call adds one). */
  iterations: number
  stopBlocks: number
}

/** Spans on the loop's hot path (turn, provider call, tool call) skip capturing a stack trace each time. */
export const noStackTrace: Tracer.TraceOptions = { captureStackTrace: false }

/**
 * `body()` in a span named `name` with `attributes()` and, on success, `annotate(result)` — when the
 * turn is traced (a tracing backend is installed). Under Effect's default `nativeTracer` no one
 * can observe the span, and a span per provider call and per tool call (with its attributes) is a
 * measurable share of a zero-latency iteration, so it is skipped (the comparison Effect documents
 * for `nativeTracer`). Call it when the effect is to run: untraced, `body()` is the effect.
 */
export const spanned = <A, E, R>(
  context: TurnContext,
  name: string,
  attributes: () => Record<string, unknown>,
  body: () => Effect.Effect<A, E, R>,
  annotate?: (result: A) => Record<string, unknown> | undefined
): Effect.Effect<A, E, R> => {
  if (!context.traced) return body()
  const effect = Effect.suspend(body)
  const annotated = annotate === undefined ? effect : Effect.tap(effect, (result) => {
    const values = annotate(result)
    return values === undefined ? Effect.void : Effect.annotateCurrentSpan(values)
  })
  return annotated.pipe(Effect.withSpan(name, { attributes: attributes() }, noStackTrace))
}

/** Whether spans made on this fiber reach a tracing backend (anything but Effect's `nativeTracer`). */
export const isTraced: Effect.Effect<boolean> = Effect.map(Effect.tracer, (tracer) => tracer !== Tracer.nativeTracer)

/** Publishes events stamped with `control`'s coordinates and `clock`'s time, straight onto the bus. */
export const publisher = (bus: EventBusShape, control: TurnControl, clock: Clock.Clock): Publish => (kind, payload, at) =>
  // The control block is the event's place (its coordinates are read at the call): no copy per event.
  bus.publishUnsafe(AgentEvent.make(kind, control, at ?? clock.currentTimeMillisUnsafe(), payload))

/** An emitter for code outside a turn's body (the loop's control API, sub-turn bookkeeping, summaries). */
export const emitterFor = (bus: EventBusShape, control: TurnControl): Emit => (kind, payload) =>
  Effect.clockWith((clock) => Effect.sync(() => publisher(bus, control, clock)(kind, payload)))

/** The context of a turn whose history is not loaded yet (`loaded` sets it). */
export const make = (
  spec: TurnSpec,
  bus: EventBusShape,
  clock: Clock.Clock,
  currentTurn: CurrentTurnShape,
  traced: boolean
): TurnContext => {
  const publish = publisher(bus, spec.control, clock)
  return {
    spec,
    control: spec.control,
    emit: (kind, payload) => Effect.sync(() => publish(kind, payload)),
    publish,
    publishDelta: (kind, text, at, toolCallIndex) => bus.publishUnsafe(AgentEvent.delta(spec.control, at, kind, text, toolCallIndex)),
    clock,
    currentTurn,
    traced,
    systemPrompt: spec.systemPrompt,
    conversation: [],
    partsSeen: false,
    historyLength: 0,
    produced: [],
    compaction: undefined,
    usage: Usage.empty,
    partial: { content: "" },
    unpriced: new Set(),
    calls: 0,
    iterations: 0,
    stopBlocks: 0
  }
}

/** Sets the history the turn starts from. */
export const loaded = (context: TurnContext, history: ReadonlyArray<Message>): void => {
  context.conversation = [...history]
  context.historyLength = history.length
  context.partsSeen = holdsParts(history)
}

/** Whether any of `messages` holds content parts (only those can hold images; most histories hold none). */
export const holdsParts = (messages: ReadonlyArray<Message>): boolean => {
  for (const message of messages) if (hasParts(message)) return true
  return false
}

const hasParts = (message: Message): boolean =>
  (message.role === "user" || message.role === "tool") && typeof message.content !== "string"

/** The messages this turn added so far. */
export const added = (context: TurnContext): ReadonlyArray<Message> => [...context.produced]

/** Appends messages to the conversation; the turn commits them. */
export const append = (context: TurnContext, ...messages: ReadonlyArray<Message>): void => {
  for (const message of messages) {
    context.conversation.push(message)
    context.produced.push(message)
    if (!context.partsSeen && hasParts(message)) context.partsSeen = true
  }
}

/**
 * Records a compression of the conversation. The conversation is always the system messages of
 * `all[0, cut)` followed by `all[cut…]`, where `all` is the history followed by `produced` (a
 * compression keeps the system messages and a suffix, `compaction.ts`): so the new cut is the
 * old one advanced past what this compression dropped. An overflow among the turn's compressions
 * names the record.
 */
export const compacted = (context: TurnContext, reason: "overflow" | "budget", compression: Compression): void => {
  const cut = context.compaction?.cut ?? 0
  const leadingSystems = context.conversation.length - (context.historyLength + context.produced.length - cut)
  const dropUpTo = (compression.droppedAt.at(-1) ?? leadingSystems - 1) + 1
  context.conversation = [...compression.kept]
  context.compaction = {
    role: "compaction",
    reason: context.compaction?.reason === "overflow" ? "overflow" : reason,
    cut: cut + dropUpTo - leadingSystems
  }
}
