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
import { Clock, Duration, Effect, Option, Schema, Semaphore } from "effect"
import { contextBudget } from "../domain/Config.ts"
import { ConcurrencyTimeout, DepthLimitExceeded, InvalidSubTurnConfig, SubTurnBlocked } from "../domain/errors.ts"
import type { HookSubTurn } from "../domain/Hook.ts"
import type { Message } from "../domain/Message.ts"
import * as ModelOptions from "../domain/ModelOptions.ts"
import { type SessionEntry, view } from "../domain/SessionLog.ts"
import { SubTurnConfig, type SubTurnConfigInput } from "../domain/SubTurn.ts"
import type { TurnResult } from "../domain/Turn.ts"
import * as Usage from "../domain/Usage.ts"
import type { CurrentTurnShape, SpawnError } from "../services/CurrentTurn.ts"
import type { Env } from "./Env.ts"
import { emitterFor, type SessionPort, type TurnSpec } from "./TurnContext.ts"
import * as TurnControl from "./TurnControl.ts"

/** An in-memory session keeping at most `max` messages of its view: the oldest go first. */
export const ephemeralSession = (max: number): SessionPort => {
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

/** Sub-turn support for every turn of a loop: the `CurrentTurn` that tools see. */
export const make = (env: Env, runTurn: (spec: TurnSpec) => Effect.Effect<TurnResult>) => {
  const { bus, config, hooks } = env
  const limits = config.subTurn
  const slots = new WeakMap<TurnControl.TurnControl, Semaphore.Semaphore>()
  const slotsOf = (parent: TurnControl.TurnControl) => {
    let semaphore = slots.get(parent)
    if (!semaphore) {
      semaphore = Semaphore.makeUnsafe(limits.maxConcurrent)
      slots.set(parent, semaphore)
    }
    return semaphore
  }

  /** Validation that answers at once: the config's Schema and the depth limit (no events). */
  const admit = (parent: TurnControl.TurnControl, input: SubTurnConfigInput) =>
    Effect.gen(function*() {
      const subTurn = yield* Schema.decodeUnknownEffect(SubTurnConfig)(input).pipe(
        Effect.mapError((e) => new InvalidSubTurnConfig({ message: e.message.replace(/\s+/g, " ") }))
      )
      const depth = parent.depth + 1
      if (depth > limits.maxDepth) return yield* new DepthLimitExceeded({ depth, maxDepth: limits.maxDepth })
      const described: HookSubTurn = {
        childTurnId: env.nextTurnId(),
        model: subTurn.model,
        prompt: subTurn.task,
        async: subTurn.async,
        critical: subTurn.critical
      }
      return { subTurn, described }
    })

  /** `beforeSubTurn`, a concurrency slot (waiting at most `concurrencyTimeout`), then the child. */
  const start = (parent: TurnControl.TurnControl, subTurn: SubTurnConfig, described: HookSubTurn) =>
    Effect.gen(function*() {
      const gate = yield* hooks.beforeSubTurn({ context: TurnControl.hookContext(parent), subTurn: described })
      if (gate._tag === "Block") return yield* new SubTurnBlocked({ reason: gate.reason })
      const semaphore = slotsOf(parent)
      const acquired = yield* Effect.timeoutOption(Semaphore.take(semaphore, 1), limits.concurrencyTimeout)
      if (Option.isNone(acquired)) {
        return yield* new ConcurrencyTimeout({ waitedMs: Duration.toMillis(limits.concurrencyTimeout) })
      }
      return yield* runChild(parent, subTurn, described).pipe(Effect.ensuring(Semaphore.release(semaphore, 1)))
    })

  const runChild = (parent: TurnControl.TurnControl, subTurn: SubTurnConfig, described: HookSubTurn) =>
    Effect.gen(function*() {
      const emitParent = emitterFor(bus, parent)
      const child = TurnControl.makeUnsafe({
        turnId: described.childTurnId,
        model: subTurn.model,
        modelOptions: ModelOptions.merge(parent.modelOptions, subTurn.modelOptions),
        sessionKey: parent.sessionKey,
        depth: parent.depth + 1,
        parentTurnId: parent.turnId,
        startedAt: yield* Clock.currentTimeMillis,
        steeringCapacity: config.maxSteering,
        pendingCapacity: limits.pendingCapacity,
        toolNames: subTurn.tools.length > 0 ? subTurn.tools : parent.toolNames
      })
      parent.children.set(child.turnId, child)
      env.turns.set(child.turnId, child)
      yield* emitParent("SubTurnSpawn", {
        childTurnId: child.turnId,
        model: subTurn.model,
        async: subTurn.async,
        critical: subTurn.critical
      })
      const timeout = subTurn.timeout ?? limits.timeout
      const ended = (result: TurnResult, stopped = false) => settle(parent, subTurn, described, child, result, stopped)
      return yield* runTurn({
        control: child,
        input: subTurn.task,
        systemPrompt: subTurn.systemPrompt,
        session: ephemeralSession(limits.maxMessages),
        firstOfSession: false,
        maxTokens: subTurn.maxTokens,
        contextBudget: contextBudget(subTurn.maxContextRunes, config.contextWindow),
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
    parent: TurnControl.TurnControl,
    subTurn: SubTurnConfig,
    described: HookSubTurn,
    child: TurnControl.TurnControl,
    result: TurnResult,
    stopped: boolean
  ) =>
    Effect.gen(function*() {
      const emitParent = emitterFor(bus, parent)
      parent.children.delete(child.turnId)
      env.turns.delete(child.turnId)
      yield* emitParent("SubTurnEnd", { childTurnId: child.turnId, status: result.status })
      yield* hooks.afterSubTurn({ context: TurnControl.hookContext(parent), subTurn: described, result })
      if (!subTurn.async || stopped) return
      const content = result.finalMessage?.content ?? result.error ?? `Sub-turn ended ${result.status}`
      const delivery = yield* TurnControl.offerPending(parent, { childTurnId: child.turnId, content })
      if (delivery !== "delivered") yield* emitParent("SubTurnOrphan", { childTurnId: child.turnId, reason: delivery, content })
    }).pipe(Effect.uninterruptible)

  const spawnSubTurn = (parent: TurnControl.TurnControl) => (input: SubTurnConfigInput): Effect.Effect<TurnResult, SpawnError> =>
    Effect.flatMap(admit(parent, input), ({ described, subTurn }) => start(parent, subTurn, described))

  const spawnDetached = (parent: TurnControl.TurnControl) => (input: SubTurnConfigInput): Effect.Effect<string, SpawnError> =>
    Effect.gen(function*() {
      const { described, subTurn } = yield* admit(parent, { ...input, async: true })
      const owner = subTurn.critical || parent.scope === undefined ? env.scope : parent.scope
      const reportFailure = (error: SpawnError) =>
        emitterFor(bus, parent)("Error", { stage: "spawn", message: `${error._tag}: ${error.message}` })
      // Started at once: a fiber merely scheduled may not run before a quick parent closes its scope.
      const fiber = yield* Effect.forkIn(Effect.catch(start(parent, subTurn, described), reportFailure), owner, {
        startImmediately: true
      })
      if (subTurn.critical) {
        parent.critical.add(fiber)
        fiber.addObserver(() => parent.critical.delete(fiber))
      }
      return described.childTurnId
    })

  const currentTurn = (control: TurnControl.TurnControl): CurrentTurnShape => ({
    turnId: control.turnId,
    sessionKey: control.sessionKey,
    model: control.model,
    depth: control.depth,
    parentTurnId: control.parentTurnId,
    spawnSubTurn: spawnSubTurn(control),
    spawnDetached: spawnDetached(control)
  })

  return { currentTurn }
}

/** The result of a child that was stopped from outside (timeout, or its parent ending). */
const stoppedResult = (child: TurnControl.TurnControl, error: string): TurnResult => ({
  turnId: child.turnId,
  sessionKey: child.sessionKey,
  status: "aborted",
  messages: [],
  followUps: [],
  iterations: child.iteration,
  usage: Usage.empty,
  error
})
