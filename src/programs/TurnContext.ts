/**
 * Everything one running turn needs, captured once at its start: the services, the config,
 * the control block, the conversation so far, and an emitter stamping events with the turn's
 * coordinates and the Clock's time.
 */
import { Clock, Effect, type Tracer } from "effect"
import type { AgentLoopConfig } from "../domain/Config.ts"
import { SessionStoreError } from "../domain/errors.ts"
import * as AgentEvent from "../domain/Event.ts"
import type { EventKind, EventPayload } from "../domain/Event.ts"
import type { Message } from "../domain/Message.ts"
import type { Compaction, SessionEntry } from "../domain/SessionLog.ts"
import * as Usage from "../domain/Usage.ts"
import type { Compression } from "./compaction.ts"
import type { CurrentTurnShape } from "../services/CurrentTurn.ts"
import { EventBus, type EventBusShape } from "../services/EventBus.ts"
import { Hooks, type HooksShape } from "../services/Hooks.ts"
import { LoopConfig } from "../services/LoopConfig.ts"
import { Provider, type ProviderShape } from "../services/Provider.ts"
import { ToolRegistry, type ToolRegistryShape } from "../services/ToolRegistry.ts"
import { eventBase, type TurnControl } from "./TurnControl.ts"

/** How a turn is started: by the agent loop for a session, or by a parent turn for a sub-turn. */
export interface TurnSpec {
  readonly control: TurnControl
  readonly input: string
  readonly systemPrompt: string | undefined
  /**
   * The session's history at turn start (the snapshot a hard abort returns to), or why it could
   * not be read: then the turn fails at once rather than answer without its context.
   */
  readonly history: ReadonlyArray<Message> | SessionStoreError
  /**
   * Stores, in one append, every message the turn produced followed by at most one compaction
   * record whose `cut` (an index into `history` followed by those messages) makes the session's
   * view the turn's final context.
   */
  readonly commit: (entries: ReadonlyArray<SessionEntry>) => Effect.Effect<void, SessionStoreError>
  readonly maxTokens?: number | undefined
  /** A context budget in runes overriding the config's (sub-turns). */
  readonly contextBudget?: number | undefined
  /** At most this many messages are sent (sub-turns' ephemeral sessions). */
  readonly maxMessages?: number | undefined
  /** Whether this is the session's first turn in this loop (runs `sessionStart` hooks). */
  readonly firstOfSession: boolean
  /** What tools see of this turn. */
  readonly currentTurn: (control: TurnControl) => CurrentTurnShape
}

/** The running turn. `conversation` is the session history plus what this turn added. */
export interface TurnContext {
  readonly spec: TurnSpec
  readonly control: TurnControl
  readonly config: AgentLoopConfig
  readonly provider: ProviderShape
  readonly registry: ToolRegistryShape
  readonly hooks: HooksShape
  readonly bus: EventBusShape
  readonly emit: <K extends EventKind>(kind: K, payload: EventPayload<K>) => Effect.Effect<void>
  systemPrompt: string | undefined
  /** Session history followed by this turn's messages; compression may shorten its front. */
  conversation: Array<Message>
  /** Every message this turn produced, in order, including those compression took out of `conversation`. */
  readonly produced: Array<Message>
  /** Set when the turn compressed: the record committed after `produced` (see `compacted`). */
  compaction: Compaction | undefined
  usage: Usage.Usage
  /** Text of the provider call in flight; kept as a `partial` message if the call fails for good. */
  readonly partial: { content: string }
  /** Models called this turn that have no price (each is warned about once). */
  readonly unpriced: Set<string>
  /** Provider calls made so far. */
  calls: number
  stopBlocks: number
}

/** Spans on the loop's hot path (turn, provider call, tool call) skip capturing a stack trace each time. */
export const noStackTrace: Tracer.TraceOptions = { captureStackTrace: false }

/** An emitter stamping events with a turn's coordinates and the Clock's time. */
export const emitterFor = (bus: EventBusShape, control: TurnControl) =>
<K extends EventKind>(kind: K, payload: EventPayload<K>): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (at) => bus.publish(AgentEvent.make(kind, eventBase(control), at, payload)))

/** Captures the services and builds the context of a turn. */
export const make = (spec: TurnSpec) =>
  Effect.gen(function*() {
    const bus = yield* EventBus
    const control = spec.control
    const context: TurnContext = {
      spec,
      control,
      config: yield* LoopConfig,
      provider: yield* Provider,
      registry: yield* ToolRegistry,
      hooks: yield* Hooks,
      bus,
      emit: emitterFor(bus, control),
      systemPrompt: spec.systemPrompt,
      conversation: spec.history instanceof SessionStoreError ? [] : [...spec.history],
      produced: [],
      compaction: undefined,
      usage: Usage.empty,
      partial: { content: "" },
      unpriced: new Set(),
      calls: 0,
      stopBlocks: 0
    }
    return context
  })

/** The messages this turn added so far. */
export const added = (context: TurnContext): ReadonlyArray<Message> => [...context.produced]

/** Appends messages to the conversation; the turn commits them. */
export const append = (context: TurnContext, ...messages: ReadonlyArray<Message>): void => {
  context.conversation.push(...messages)
  context.produced.push(...messages)
}

/**
 * Records a compression of the conversation. The conversation is always the system messages of
 * `all[0, cut)` followed by `all[cut…]`, where `all` is the history followed by `produced` (a
 * compression keeps the system messages and a suffix, `compaction.ts`): so the new cut is the
 * old one advanced past what this compression dropped. An overflow among the turn's compressions
 * names the record.
 */
export const compacted = (context: TurnContext, reason: "overflow" | "budget", compression: Compression): void => {
  const history = context.spec.history instanceof SessionStoreError ? 0 : context.spec.history.length
  const cut = context.compaction?.cut ?? 0
  const leadingSystems = context.conversation.length - (history + context.produced.length - cut)
  const dropUpTo = (compression.droppedAt.at(-1) ?? leadingSystems - 1) + 1
  context.conversation = [...compression.kept]
  context.compaction = {
    role: "compaction",
    reason: context.compaction?.reason === "overflow" ? "overflow" : reason,
    cut: cut + dropUpTo - leadingSystems
  }
}
