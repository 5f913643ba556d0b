/**
 * Sub-turns (DESIGN §7): child turns spawned from inside a turn, in their own fibers.
 *
 * A sub-turn runs the same `runTurn` as any turn, with its own id, `parentTurnId` and depth, an
 * ephemeral in-memory session capped at `maxMessages` (never persisted), and its own tool set.
 * Synchronous sub-turns run in the calling tool's fiber, so a hard abort of the parent reaches
 * them through fiber interruption; detached ones run in a fiber owned by the parent turn's scope
 * (by the loop's scope when `critical`) and hand their result back as a pending result or an
 * orphan.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import { contextBudget } from "../../domain/Config.ts"
import { ConcurrencyTimeout, DepthLimitExceeded, InvalidSubTurnConfig, SubTurnBlocked, SubTurnStopped } from "../../domain/errors.ts"
import type { HookSubTurn } from "../../domain/Hook.ts"
import type { Message } from "../../domain/Message.ts"
import * as ModelOptions from "../../domain/ModelOptions.ts"
import { type SessionEntry, view } from "../../domain/SessionLog.ts"
import { SubTurnConfig, type SubTurnConfigInput } from "../../domain/SubTurn.ts"
import type { TurnResult } from "../../domain/Turn.ts"
import * as Usage from "../../domain/Usage.ts"
import type { CurrentTurnShape, SpawnError } from "../../services/CurrentTurn.ts"
import type { Engine } from "./engine.ts"
import * as HardAbort from "./hardAbort.ts"
import * as RunningTurn from "./runningTurn.ts"

/** Runs a turn to its end (`runTurn`), handed in by it: sub-turns are turns. */
export type RunTurn = (engine: Engine, turn: RunningTurn.RunningTurn, start: RunningTurn.Start) => Effect.Effect<TurnResult>

/** An in-memory session keeping at most `max` messages of its view: the oldest go first. */
export const ephemeralSession = (max: number): RunningTurn.SessionPort => {
  let messages: ReadonlyArray<Message> = []
  return {
    load: Effect.sync(() => messages),
    commit: (entries: ReadonlyArray<SessionEntry>) =>
      Effect.sync(() => {
        const all = view([...messages, ...entries])
        messages = all.slice(Math.max(0, all.length - max))
      })
  }
}

/** What the tools of `turn` see (`CurrentTurn`), its sub-turns run by `runTurn`. */
export const currentTurn = (engine: Engine, turn: RunningTurn.RunningTurn, runTurn: RunTurn): CurrentTurnShape => {
  const slots = Semaphore.makeUnsafe(engine.config.subTurn.maxConcurrent)
  const spawned = { engine, parent: turn, slots, runTurn }
  return {
    turnId: turn.turnId,
    sessionKey: turn.sessionKey,
    model: turn.model,
    depth: turn.depth,
    parentTurnId: turn.parentTurnId,
    spawnSubTurn: (input) => Effect.flatMap(admit(engine, turn, input), (admitted) => start(spawned, admitted)),
    spawnDetached: (input) => spawnDetached(spawned, input),
    updateTodos: (toolCallId, todos) => RunningTurn.emit(turn, "TodoUpdated", { toolCallId, todos }),
    planMode: {
      active: () => turn.planning === true,
      leave: Effect.sync(() => RunningTurn.leavePlanMode(turn)),
      endWith: (plan) => Effect.sync(() => RunningTurn.endWithPlan(turn, plan))
    }
  }
}

/** A parent turn spawning: the engine, the parent, its concurrency slots and the turn runner. */
interface Spawning {
  readonly engine: Engine
  readonly parent: RunningTurn.RunningTurn
  readonly slots: Semaphore.Semaphore
  readonly runTurn: RunTurn
}

/** A sub-turn that passed the checks that answer at once. */
interface Admitted {
  readonly subTurn: SubTurnConfig
  readonly described: HookSubTurn
}

/** Validation that answers at once: the config's Schema and the depth limit (no events). */
const admit = Effect.fnUntraced(function*(engine: Engine, parent: RunningTurn.RunningTurn, input: SubTurnConfigInput) {
  const subTurn = yield* Schema.decodeUnknownEffect(SubTurnConfig)(input).pipe(
    Effect.mapError((e) => new InvalidSubTurnConfig({ message: e.message.replace(/\s+/g, " ") }))
  )
  const depth = parent.depth + 1
  const maxDepth = engine.config.subTurn.maxDepth
  if (depth > maxDepth) return yield* new DepthLimitExceeded({ depth, maxDepth })
  const described: HookSubTurn = {
    childTurnId: engine.nextTurnId(),
    model: subTurn.model,
    prompt: subTurn.task,
    async: subTurn.async,
    critical: subTurn.critical
  }
  return { subTurn, described } satisfies Admitted
})

/** `beforeSubTurn`, a concurrency slot (waiting at most `concurrencyTimeout`), then the child. */
const start = Effect.fnUntraced(function*(spawning: Spawning, admitted: Admitted) {
  const { engine, parent, slots } = spawning
  const gate = yield* engine.hooks.run("beforeSubTurn", { context: RunningTurn.hookContext(parent), subTurn: admitted.described })
  if (gate._tag === "Block") return yield* new SubTurnBlocked({ reason: gate.reason })
  const limit = engine.config.subTurn.concurrencyTimeout
  const acquired = yield* Effect.timeoutOption(Semaphore.take(slots, 1), limit)
  if (Option.isNone(acquired)) return yield* new ConcurrencyTimeout({ waitedMs: Duration.toMillis(limit) })
  return yield* runChild(spawning, admitted).pipe(Effect.ensuring(Semaphore.release(slots, 1)))
})

const runChild = Effect.fnUntraced(function*(spawning: Spawning, { described, subTurn }: Admitted) {
  const { engine, parent } = spawning
  const limits = engine.config.subTurn
  const child = RunningTurn.make({
    turnId: described.childTurnId,
    model: subTurn.model,
    modelOptions: ModelOptions.merge(parent.modelOptions, subTurn.modelOptions),
    sessionKey: parent.sessionKey,
    depth: parent.depth + 1,
    parentTurnId: parent.turnId,
    startedAt: yield* Clock.currentTimeMillis,
    steeringCapacity: engine.config.maxSteering,
    pendingCapacity: limits.pendingCapacity,
    // a sub-turn may narrow its parent's tools, never widen them; none given, it has the parent's
    toolNames: subTurn.tools === undefined
      ? parent.toolNames
      : subTurn.tools.filter((name) => parent.toolNames === undefined || parent.toolNames.includes(name)),
    // a sub-turn of a turn that plans only reads too
    planning: parent.planning,
    bus: engine.bus,
    clock: yield* Clock.Clock
  })
  RunningTurn.addChild(parent, child)
  engine.turns.set(child.turnId, child)
  RunningTurn.publish(parent, "SubTurnSpawn", { childTurnId: child.turnId, model: subTurn.model, async: subTurn.async, critical: subTurn.critical })
  const timeout = subTurn.timeout ?? limits.timeout
  const ended = (result: TurnResult, stopped = false) => settle(spawning, subTurn, described, child, result, stopped)
  return yield* spawning.runTurn(engine, child, {
    input: subTurn.task,
    systemPrompt: subTurn.systemPrompt,
    session: ephemeralSession(limits.maxMessages),
    firstOfSession: false,
    contextBudget: contextBudget(subTurn.maxContextRunes, engine.config.contextWindow),
    maxMessages: limits.maxMessages
  }).pipe(
    Effect.timeoutOption(timeout),
    Effect.map(Option.getOrElse(() => stoppedResult(child, `Sub-turn timed out after ${Duration.toMillis(timeout)}ms`))),
    Effect.onInterrupt(() => ended(stoppedResult(child, "Sub-turn stopped with its parent"), true)),
    Effect.tap((result) => ended(result))
  )
})

/**
 * After the child: `SubTurnEnd`, `afterSubTurn`, and for async children delivery or orphan. A
 * child `stopped` with its parent has no result to deliver, so it is no orphan either: orphans
 * are results that exist and could not be delivered.
 */
const settle = (
  { engine, parent }: Spawning,
  subTurn: SubTurnConfig,
  described: HookSubTurn,
  child: RunningTurn.RunningTurn,
  result: TurnResult,
  stopped: boolean
) =>
  Effect.gen(function*() {
    RunningTurn.removeChild(parent, child)
    engine.turns.delete(child.turnId)
    RunningTurn.publish(parent, "SubTurnEnd", { childTurnId: child.turnId, status: result.status })
    yield* engine.hooks.run("afterSubTurn", { context: RunningTurn.hookContext(parent), subTurn: described, result })
    if (!subTurn.async || stopped) return
    const content = result.finalMessage?.content ?? result.error ?? `Sub-turn ended ${result.status}`
    const delivery = RunningTurn.offerPending(parent, { childTurnId: child.turnId, content })
    if (delivery !== "delivered") RunningTurn.publish(parent, "SubTurnOrphan", { childTurnId: child.turnId, reason: delivery, content })
  }).pipe(Effect.uninterruptible)

/** Starts a child in a fiber owned by the parent turn (by the loop when critical); returns its id at once. */
const spawnDetached = (spawning: Spawning, input: SubTurnConfigInput): Effect.Effect<string, SpawnError> =>
  Effect.gen(function*() {
    const { engine, parent } = spawning
    const admitted = yield* admit(engine, parent, { ...input, async: true })
    const owner = admitted.subTurn.critical || parent.scope === undefined ? engine.scope : parent.scope
    const reportFailure = (error: SpawnError) => RunningTurn.emit(parent, "Error", { stage: "spawn", message: `${error._tag}: ${error.message}` })
    // Started at once: a fiber merely scheduled may not run before a quick parent closes its scope.
    const fiber = yield* Effect.forkIn(Effect.catch(start(spawning, admitted), reportFailure), owner, { startImmediately: true })
    if (admitted.subTurn.critical) HardAbort.holdCritical(parent, fiber)
    return admitted.described.childTurnId
  })

/** The result of a child that was stopped from outside (timeout, or its parent ending). */
const stoppedResult = (child: RunningTurn.RunningTurn, error: string): TurnResult => ({
  turnId: child.turnId,
  sessionKey: child.sessionKey,
  status: "aborted",
  messages: [],
  followUps: [],
  iterations: child.iteration,
  usage: Usage.empty,
  error,
  failure: new SubTurnStopped({ message: error })
})
