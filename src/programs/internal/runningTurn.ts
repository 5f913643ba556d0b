/**
 * The state of one running turn (`RunningTurn`), and every change made to it. (The public `Turn`
 * namespace is about results and the live view, `TurnInfo`; this is the loop's own record.)
 *
 * A `RunningTurn` is made when a turn is decided on (a router claims the session, a parent spawns a
 * child), so steering and interrupts can reach it before it starts; `begin` adds what the run
 * needs. Its fields are read-only outside this module: each change is one of the functions below,
 * which is the whole list of ways a turn's state moves (the hard-abort protocol keeps its own,
 * in `hardAbort.ts`).
 *
 * The queues are plain arrays changed in synchronous steps: fibers interleave only at yield
 * points, so each change is atomic, and the turn reads them only at its interrupt points (before
 * each model call, at each tool-group boundary).
 */
import type * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { Checkpointing, TurnCheckpoint } from "../../domain/Checkpoint.ts"
import type { InvalidConfig, SessionFenced, SessionStoreError } from "../../domain/errors.ts"
import * as AgentEvent from "../../domain/Event.ts"
import type { HookContext } from "../../domain/Hook.ts"
import { type Content, type Message, system, type SystemMessage, type ToolResultMessage } from "../../domain/Message.ts"
import type { ModelOptions } from "../../domain/ModelOptions.ts"
import type { Compaction, SessionEntry } from "../../domain/SessionLog.ts"
import type { TurnInfo, TurnPhase } from "../../domain/Turn.ts"
import * as Usage from "../../domain/Usage.ts"
import type { EventBusShape } from "../../services/EventBus.ts"
import type { Compression } from "./compaction.ts"

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
  readonly commit: (entries: ReadonlyArray<SessionEntry>) => Effect.Effect<void, SessionStoreError | SessionFenced>
}

/** What a turn's run is started with (`begin`): by the agent loop for a session, or by a parent turn for a sub-turn. */
export interface Start {
  readonly input: Content
  readonly systemPrompt: string | undefined
  readonly session: SessionPort
  /** A context budget in runes overriding the config's (sub-turns). */
  readonly contextBudget?: number | undefined
  /** At most this many messages are sent (sub-turns' ephemeral sessions). */
  readonly maxMessages?: number | undefined
  /** Whether this is the session's first turn in this loop (runs `sessionStart` hooks). */
  readonly firstOfSession: boolean
  /** Set when the turn's options are invalid: the turn fails with it before anything else. */
  readonly rejected?: InvalidConfig | undefined
  /** The typed answer asked for (`TurnOptions.output`), and its JSON Schema if given. */
  readonly output?: { readonly schema: Schema.Decoder<unknown>; readonly jsonSchema?: Record<string, unknown> | undefined } | undefined
  /** Checkpoints saved as the turn goes, and the one it resumes from (`checkpoint.ts`). */
  readonly checkpoint?: Checkpointing | undefined
}

/** An async sub-turn result waiting for the parent's next provider call. */
export interface PendingResult {
  readonly childTurnId: string
  readonly content: string
}

/** What a new running turn is made from (`make`); not the public `TurnOptions`, which `AgentLoopProgram` reads into it. */
export interface Setup {
  readonly turnId: string
  readonly sessionKey: string
  readonly depth: number
  readonly parentTurnId: string | undefined
  readonly startedAt: number
  readonly steeringCapacity: number
  readonly pendingCapacity: number
  /** The tools the turn may use (`undefined`: all); inherited by sub-turns that name none. */
  readonly toolNames?: ReadonlyArray<string> | undefined
  /** Plan mode (`TurnOptions.planMode`): only read-only tools and `exit_plan_mode`, until the plan is accepted (`leavePlanMode`). */
  readonly planning?: boolean | undefined
  /** The model the turn talks to; the default for its sub-turns. */
  readonly model: string
  /** The turn's model options (the config's under its own); the default for its sub-turns. */
  readonly modelOptions?: ModelOptions | undefined
  /** Where its events go, stamped with this Clock's time. */
  readonly bus: EventBusShape
  readonly clock: Clock.Clock
}

/** A running turn. */
export interface RunningTurn extends Setup {
  /**
   * The iteration the turn is in: how many iterations have called the model so far (what
   * `maxIterations` limits; a graceful interrupt's summary call counts as one more).
   */
  readonly iteration: number
  readonly phase: TurnPhase
  readonly steering: ReadonlyArray<string>
  readonly followUps: ReadonlyArray<string>
  /** Steering already drained into the conversation; handed back as follow-ups if the turn is rolled back. */
  readonly steered: ReadonlyArray<string>
  /** Completed with the caller's hint by `interruptGraceful`. */
  readonly graceful: Deferred.Deferred<string | undefined>
  readonly pending: ReadonlyArray<PendingResult>
  readonly children: ReadonlyMap<string, RunningTurn>
  /** Owns the turn's detached sub-turns; closed when the turn ends, which stops them. */
  readonly scope: Scope.Closeable | undefined
  /** Set once the turn stopped taking input (results after this are orphans). */
  readonly closed: boolean
  // What the run adds (`begin`).
  readonly start: Start
  /** Whether the turn makes spans for its provider and tool calls (see `spanned`). */
  readonly traced: boolean
  readonly systemPrompt: string | undefined
  /** The system prompt as the first message of each request: one object while the prompt stays, so requests share it. */
  readonly systemMessage: SystemMessage | undefined
  /** Session history followed by this turn's messages; compression may shorten its front. */
  readonly conversation: ReadonlyArray<Message>
  /**
   * Whether the conversation may hold content parts: set when a message with parts joins it, never
   * cleared (compression only takes messages out), so a request is scanned for images only then.
   */
  readonly partsSeen: boolean
  /** How many messages the loaded history held. */
  readonly historyLength: number
  /** Every message this turn produced, in order, including those compression took out of `conversation`. */
  readonly produced: ReadonlyArray<Message>
  /** Set when the turn compressed: the record committed after `produced` (see `compacted`). */
  readonly compaction: Compaction | undefined
  readonly usage: Usage.Usage
  /**
   * The results of the running tool batch's calls that have finished, by call id: the batch's
   * results join the conversation together when it ends, so a turn stopped now keeps these.
   */
  readonly finishedCalls: ReadonlyMap<string, ToolResultMessage>
  /** Text deltas of the provider call in flight; kept as a `partial` message if the call fails for good. */
  readonly partial: ReadonlyArray<string>
  /** Models called this turn that have no price (each is warned about once). */
  readonly unpriced: ReadonlySet<string>
  readonly stopBlocks: number
  /** Set by `endWithPlan`: the plan the turn ends with once its tool batch is over (plan mode with no one to accept it). */
  readonly planEnd: string | undefined
}

type Writable = { -readonly [K in keyof RunningTurn]: RunningTurn[K] } & {
  readonly steering: Array<string>
  readonly followUps: Array<string>
  readonly steered: Array<string>
  readonly pending: Array<PendingResult>
  readonly children: Map<string, RunningTurn>
  readonly produced: Array<Message>
  readonly finishedCalls: Map<string, ToolResultMessage>
  conversation: Array<Message>
  readonly unpriced: Set<string>
}
const writable = (turn: RunningTurn): Writable => turn as Writable

/** A fresh turn, made synchronously so that routing can check-and-start atomically. */
export const make = (options: Setup): RunningTurn => {
  const turn: Omit<Writable, "start"> = {
    ...options,
    iteration: 0,
    phase: "starting",
    steering: [],
    followUps: [],
    steered: [],
    graceful: Deferred.makeUnsafe<string | undefined>(),
    pending: [],
    children: new Map(),
    scope: undefined,
    closed: false,
    traced: false,
    systemPrompt: undefined,
    systemMessage: undefined,
    conversation: [],
    partsSeen: false,
    historyLength: 0,
    produced: [],
    compaction: undefined,
    usage: Usage.empty,
    finishedCalls: new Map(),
    partial: [],
    unpriced: new Set(),
    stopBlocks: 0,
    planEnd: undefined
  }
  // `start` is set by `begin`, before anything reads it.
  return turn as unknown as RunningTurn
}

/** Leaves plan mode: the turn's next model call is offered every tool. */
export const leavePlanMode = (turn: RunningTurn): void => {
  writable(turn).planning = false
}

/** The turn ends with `plan` as its answer once the running tool batch is over (`exit_plan_mode` with no one to accept it). */
export const endWithPlan = (turn: RunningTurn, plan: string): void => {
  writable(turn).planEnd = plan
}

/** Starts the run: what the turn was started with, and whether it is traced. */
export const begin = (turn: RunningTurn, start: Start, traced: boolean, scope: Scope.Closeable): void => {
  const w = writable(turn)
  w.start = start
  w.traced = traced
  w.scope = scope
  setSystemPrompt(turn, start.systemPrompt)
}

/** Whether `begin` ran: input from outside (steering, a follow-up) may reach a turn before it does. */
export const begun = (turn: RunningTurn): boolean => (turn as Partial<Writable>).start !== undefined

/** Sets the history the turn starts from. */
export const loaded = (turn: RunningTurn, history: ReadonlyArray<Message>): void => {
  const w = writable(turn)
  w.conversation = [...history]
  w.historyLength = history.length
  w.partsSeen = holdsParts(history)
}

/** Whether any of `messages` holds content parts (only those can hold images; most histories hold none). */
export const holdsParts = (messages: ReadonlyArray<Message>): boolean => {
  for (const message of messages) if (hasParts(message)) return true
  return false
}

const hasParts = (message: Message): boolean =>
  (message.role === "user" || message.role === "tool") && typeof message.content !== "string"

/** Appends messages to the conversation; the turn commits them. */
export const append = (turn: RunningTurn, ...messages: ReadonlyArray<Message>): void => {
  const w = writable(turn)
  for (const message of messages) {
    w.conversation.push(message)
    w.produced.push(message)
    if (!w.partsSeen && hasParts(message)) w.partsSeen = true
  }
}

/**
 * Continues from a checkpoint, on the loaded history it was taken on: the messages the turn had
 * produced, its iteration count, usage and `beforeStop` blocks, its queued steering and
 * follow-ups, and its compaction, which makes the conversation the system messages before the cut
 * and everything from it (see `compacted`).
 */
export const restore = (turn: RunningTurn, checkpoint: TurnCheckpoint): void => {
  const w = writable(turn)
  w.iteration = checkpoint.iteration
  w.usage = checkpoint.usage
  w.stopBlocks = checkpoint.stopBlocks
  w.produced.push(...checkpoint.produced)
  const all = [...w.conversation, ...checkpoint.produced]
  const cut = checkpoint.compaction?.cut
  w.compaction = checkpoint.compaction
  w.conversation = cut === undefined ? all : [...all.slice(0, cut).filter((message) => message.role === "system"), ...all.slice(cut)]
  w.partsSeen = holdsParts(w.conversation)
  // queued before the crash: ahead of anything queued since
  w.steering.unshift(...(checkpoint.steering ?? []))
  w.followUps.unshift(...(checkpoint.followUps ?? []))
}

/** A `beforeTurn` hook's system prompt. */
export const setSystemPrompt = (turn: RunningTurn, systemPrompt: string | undefined): void => {
  const w = writable(turn)
  w.systemPrompt = systemPrompt
  w.systemMessage = systemPrompt ? system(systemPrompt) : undefined
}

/** The next iteration begins: it calls the model. */
export const nextIteration = (turn: RunningTurn): void => {
  writable(turn).iteration++
}

export const setPhase = (turn: RunningTurn, phase: TurnPhase): void => {
  writable(turn).phase = phase
}

/** The text deltas of the provider call in flight, as they come (the call's own array, read only if it fails for good). */
export const setPartial = (turn: RunningTurn, deltas: ReadonlyArray<string>): void => {
  writable(turn).partial = deltas
}

/** A tool batch starts: none of its calls has finished. */
export const batchStarts = (turn: RunningTurn): void => {
  if (turn.finishedCalls.size > 0) writable(turn).finishedCalls.clear()
}

/** A call of the running tool batch finished with `result`. */
export const callFinished = (turn: RunningTurn, result: ToolResultMessage): void => {
  writable(turn).finishedCalls.set(result.toolCallId, result)
}

/** The text streamed so far by the provider call in flight. */
export const partialText = (turn: RunningTurn): string => turn.partial.join("")

export const addUsage = (turn: RunningTurn, usage: Usage.Usage): void => {
  const w = writable(turn)
  w.usage = Usage.add(w.usage, usage)
}

/** Whether `model` is priceless and not yet warned about this turn (it is from now on). */
export const firstUnpriced = (turn: RunningTurn, model: string): boolean => {
  const w = writable(turn)
  if (w.unpriced.has(model)) return false
  w.unpriced.add(model)
  return true
}

/** A `beforeStop` hook kept the turn going. */
export const stopBlocked = (turn: RunningTurn): void => {
  writable(turn).stopBlocks++
}

/** The context without compression's bookkeeping (a tool result cut in the context only). */
export const replaceContext = (turn: RunningTurn, kept: ReadonlyArray<Message>): void => {
  writable(turn).conversation = [...kept]
}

/**
 * Records a compression of the conversation. The conversation is always the system messages of
 * `all[0, cut)` followed by `all[cut…]`, where `all` is the history followed by `produced` (a
 * compression keeps the system messages and a suffix, `compaction.ts`): so the new cut is the
 * old one advanced past what this compression dropped. An overflow among the turn's compressions
 * names the record.
 */
export const compacted = (turn: RunningTurn, reason: "overflow" | "budget", compression: Compression): void => {
  const w = writable(turn)
  const cut = w.compaction?.cut ?? 0
  const leadingSystems = w.conversation.length - (w.historyLength + w.produced.length - cut)
  const dropUpTo = (compression.droppedAt.at(-1) ?? leadingSystems - 1) + 1
  w.conversation = [...compression.kept]
  w.compaction = {
    role: "compaction",
    reason: w.compaction?.reason === "overflow" ? "overflow" : reason,
    cut: cut + dropUpTo - leadingSystems
  }
}

// ---- Input from outside ----------------------------------------------------------------------

/** Queues steering; says why when the turn cannot take it. */
export const steer = (turn: RunningTurn, message: string): "queued" | "closed" | "full" => {
  if (turn.closed) return "closed"
  if (turn.steering.length >= turn.steeringCapacity) return "full"
  writable(turn).steering.push(message)
  return "queued"
}

/** Takes every queued steering message at once. */
export const drainSteering = (turn: RunningTurn): ReadonlyArray<string> => {
  const w = writable(turn)
  const drained = w.steering.splice(0, w.steering.length)
  w.steered.push(...drained)
  return drained
}

/** Takes every pending sub-turn result at once. */
export const drainPending = (turn: RunningTurn): ReadonlyArray<PendingResult> => writable(turn).pending.splice(0, turn.pending.length)

/** Offers a sub-turn result; says why when it cannot be delivered. */
export const offerPending = (turn: RunningTurn, result: PendingResult): "delivered" | "parent_ended" | "queue_full" => {
  if (turn.closed) return "parent_ended"
  if (turn.pending.length >= turn.pendingCapacity) return "queue_full"
  writable(turn).pending.push(result)
  return "delivered"
}

/** Queues a message to run as the session's next turn once this one ends. */
export const queueFollowUp = (turn: RunningTurn, message: string): void => {
  writable(turn).followUps.push(message)
}

/** Asks for a graceful interrupt; true when this is the first ask. */
export const requestGraceful = (turn: RunningTurn, hint: string | undefined): Effect.Effect<boolean> => Deferred.succeed(turn.graceful, hint)

/** Whether a graceful interrupt was requested, without its hint: a plain check for the hot path. */
export const gracefulAsked = (turn: RunningTurn): boolean => Deferred.isDoneUnsafe(turn.graceful)

/** Whether a graceful interrupt was requested, and its hint. */
export const gracefulRequested = (turn: RunningTurn): Effect.Effect<{ readonly hint: string | undefined } | undefined> =>
  Effect.flatMap(Deferred.poll(turn.graceful), Option.match({
    onNone: () => Effect.succeed(undefined),
    onSome: (hint) => Effect.map(hint, (value) => ({ hint: value }))
  }))

export const addChild = (turn: RunningTurn, child: RunningTurn): void => {
  writable(turn).children.set(child.turnId, child)
}

export const removeChild = (turn: RunningTurn, child: RunningTurn): void => {
  writable(turn).children.delete(child.turnId)
}

/** The turn takes no more input: steering too late, or rolled back (`persisted` false), becomes follow-ups (returned). */
export const close = (turn: RunningTurn, persisted: boolean): ReadonlyArray<string> => {
  const w = writable(turn)
  w.closed = true
  w.phase = "finishing"
  const moved = [...(persisted ? [] : w.steered), ...w.steering.splice(0)]
  w.followUps.push(...moved)
  return moved
}

// ---- What others see -------------------------------------------------------------------------

/** Publishes an event of this turn, its place the turn itself (no copy per event), at the Clock's time now by default. */
export const publish = <K extends AgentEvent.EventKind>(turn: RunningTurn, kind: K, payload: AgentEvent.EventPayload<K>, at?: number): void =>
  turn.bus.publishUnsafe(AgentEvent.make(kind, turn, at ?? turn.clock.currentTimeMillisUnsafe(), payload))

/** `publish` as an effect. */
export const emit = <K extends AgentEvent.EventKind>(turn: RunningTurn, kind: K, payload: AgentEvent.EventPayload<K>): Effect.Effect<void> =>
  Effect.sync(() => publish(turn, kind, payload))

/** Publishes an `LLMDelta` stamped `at` (the hottest event, see `AgentEvent.delta`). */
export const publishDelta = (turn: RunningTurn, kind: "text" | "reasoning" | "tool_call", text: string, at: number, toolCallIndex?: number): void =>
  turn.bus.publishUnsafe(AgentEvent.delta(turn, at, kind, text, toolCallIndex))

/** Where hooks run: the turn's place. */
export const hookContext = (turn: RunningTurn): HookContext =>
  turn.parentTurnId === undefined
    ? { turnId: turn.turnId, sessionKey: turn.sessionKey, iteration: turn.iteration, depth: turn.depth }
    : { turnId: turn.turnId, sessionKey: turn.sessionKey, iteration: turn.iteration, depth: turn.depth, parentTurnId: turn.parentTurnId }

/** The public view of a turn. */
export const info = (turn: RunningTurn): TurnInfo => ({
  turnId: turn.turnId,
  sessionKey: turn.sessionKey,
  iteration: turn.iteration,
  startedAt: turn.startedAt,
  ...(turn.parentTurnId === undefined ? {} : { parentTurnId: turn.parentTurnId }),
  childTurnIds: [...turn.children.keys()],
  phase: turn.phase,
  depth: turn.depth
})
