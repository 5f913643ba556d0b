/**
 * The `AgentLoop` layer (DESIGN §5): per-session serialisation, the public control API, and the
 * router (`send` → a worker per busy session, at most `maxParallelTurns` at once, one outbound
 * reply per turn, follow-ups run in order after each turn has fully ended).
 *
 * A session's state lives while the session is in use: once it has been idle (no turn running or
 * waiting, nothing routed or queued) for `sessionIdleTimeout`, the session ends (`sessionEnd`) and
 * its state is released, so a loop serving many keys holds only the recent ones. A later turn on
 * that key begins the session again (`sessionStart`); its stored history is untouched.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import { checkInput, checkModelOptions } from "../domain/Config.ts"
import { CompactionFailed, type InvalidConfig, NoActiveTurn, SteeringQueueFull } from "../domain/errors.ts"
import type { Content } from "../domain/Message.ts"
import * as ModelOptions from "../domain/ModelOptions.ts"
import { type Inbound, type Outbound, outboundOf } from "../domain/Turn.ts"
import { AgentLoop, type AgentLoopShape, type TurnOptions } from "../services/AgentLoop.ts"
import { SessionStore, type SessionStoreShape } from "../services/SessionStore.ts"
import * as Checkpoints from "./internal/checkpoint.ts"
import * as Engine from "./internal/engine.ts"
import * as HardAbort from "./internal/hardAbort.ts"
import { runTurn } from "./internal/runTurn.ts"
import { summarize } from "./internal/summarize.ts"
import * as Turn from "./internal/turn.ts"

/**
 * A turn's own model options, checked (bad ones fail the turn before it calls anything);
 * `undefined` when it sets none, the common case, which costs no decoding.
 */
const ownModelOptions = (options: TurnOptions): Result.Result<ModelOptions.ModelOptions, InvalidConfig> | undefined => {
  const picked = ModelOptions.pick(options)
  return Object.keys(picked).length === 0 ? undefined : checkModelOptions(picked)
}

interface SessionState {
  /** Serialises the turns of the session (FIFO). */
  readonly lock: Semaphore.Semaphore
  active: Turn.Turn | undefined
  started: boolean
  /** A router worker owns this session until its backlog is empty. */
  routed: boolean
  /** Messages that arrived while the session's turn was ending: run next, in order. */
  readonly backlog: Array<string>
  /** Turns and summaries running or waiting for the lock. */
  users: number
  /** Sleeps out the idle time, then releases the session; interrupted when the session is used again. */
  release: Fiber.Fiber<void> | undefined
}

const held = new WeakMap<AgentLoopShape, () => number>()

/** How many sessions a loop currently holds state for (for tests and diagnostics). */
export const heldSessions = (loop: AgentLoopShape): number => held.get(loop)?.() ?? 0

/** A stored session as a turn's session port: what `load` reads, `commit` appends. */
const storedSession = (store: SessionStoreShape, sessionKey: string): Turn.SessionPort => ({
  load: store.load(sessionKey),
  commit: (entries) => entries.length > 0 ? store.append(sessionKey, entries) : Effect.void
})

/** Builds the loop from the services; sessions end (`sessionEnd`) when its scope closes. */
export const make = Effect.gen(function*() {
  const engine = yield* Engine.make
  const { bus, config, hooks, turns } = engine
  const loopScope = engine.scope
  const store = yield* SessionStore
  const sessions = new Map<string, SessionState>()
  const workers = yield* Semaphore.make(config.maxParallelTurns)
  const outbound = yield* Queue.unbounded<Outbound>()

  yield* Effect.addFinalizer(() =>
    Effect.forEach([...sessions.entries()].filter(([, s]) => s.started), ([sessionKey]) => hooks.run("sessionEnd", { sessionKey }), {
      discard: true
    })
  )

  const session = (sessionKey: string): SessionState => {
    let state = sessions.get(sessionKey)
    if (!state) {
      state = { lock: Semaphore.makeUnsafe(1), active: undefined, started: false, routed: false, backlog: [], users: 0, release: undefined }
      sessions.set(sessionKey, state)
    } else if (state.release) {
      state.release.interruptUnsafe()
      state.release = undefined
    }
    return state
  }

  const idle = (state: SessionState) => state.users === 0 && !state.routed && state.backlog.length === 0 && state.active === undefined

  /** Once the session is idle, ends and forgets it after `sessionIdleTimeout` unless it is used again. */
  const releaseWhenIdle = (sessionKey: string, state: SessionState): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (!idle(state) || state.release || sessions.get(sessionKey) !== state) return Effect.void
      const release = Effect.suspend(() => {
        state.release = undefined
        if (sessions.get(sessionKey) !== state || !idle(state)) return Effect.void
        sessions.delete(sessionKey)
        return state.started ? Effect.asVoid(hooks.run("sessionEnd", { sessionKey })) : Effect.void
      }).pipe(Effect.uninterruptible, Effect.delay(config.sessionIdleTimeout))
      return Effect.map(Effect.forkIn(release, loopScope, { startImmediately: true }), (fiber) => {
        if (!fiber.pollUnsafe()) state.release = fiber
      })
    })

  /** Counts the session as in use while `effect` runs or waits, and lets it go idle after. */
  const using = <A, E, R>(sessionKey: string, state: SessionState, effect: Effect.Effect<A, E, R>) =>
    Effect.suspend(() => {
      state.users++
      return Effect.ensuring(effect, Effect.suspend(() => {
        state.users--
        return releaseWhenIdle(sessionKey, state)
      }))
    })

  const newTurn = (
    sessionKey: string,
    clock: Clock.Clock,
    model: string,
    modelOptions = config.modelOptions,
    toolNames?: ReadonlyArray<string>,
    turnId = engine.nextTurnId()
  ) =>
    Turn.make({
      turnId,
      model,
      modelOptions,
      toolNames,
      sessionKey,
      depth: 0,
      parentTurnId: undefined,
      startedAt: clock.currentTimeMillisUnsafe(),
      steeringCapacity: config.maxSteering,
      pendingCapacity: config.subTurn.pendingCapacity,
      bus,
      clock
    })

  /** Runs one turn of a session once it holds the session's lock. */
  const runInSession = (
    state: SessionState,
    sessionKey: string,
    input: Content,
    options: TurnOptions,
    prepared: Turn.Turn | undefined
  ) =>
    using(sessionKey, state, state.lock.withPermits(1)(
      Effect.gen(function*() {
        const model = options.model ?? config.model
        const own = ownModelOptions(options)
        const modelOptions = own !== undefined && Result.isSuccess(own) ? ModelOptions.merge(config.modelOptions, own.success) : config.modelOptions
        // a resumed turn keeps its id
        const turn = prepared ?? newTurn(sessionKey, yield* Clock.Clock, model, modelOptions, options.tools, options.checkpoint?.resume?.turnId)
        state.active = turn
        turns.set(turn.turnId, turn)
        const firstOfSession = !state.started
        state.started = true
        const session = storedSession(store, sessionKey)
        const result = yield* runTurn(engine, turn, {
          input,
          systemPrompt: config.systemPrompt,
          session,
          firstOfSession,
          ...(own !== undefined && Result.isFailure(own) ? { rejected: own.failure } : {}),
          ...(options.output === undefined ? {} : { output: { schema: options.output, jsonSchema: options.outputJsonSchema } }),
          ...(options.checkpoint === undefined ? {} : { checkpoint: options.checkpoint })
        }).pipe(
          Effect.ensuring(Effect.sync(() => {
            turns.delete(turn.turnId)
            if (state.active === turn) state.active = undefined
          }))
        )
        if (result.status !== "aborted" && config.summarizeThreshold > 0) {
          // Started at once, so the session counts as in use before this turn lets go of it.
          const summary = using(sessionKey, state, state.lock.withPermits(1)(summarize(engine, session, turn)))
          yield* Effect.forkIn(summary, loopScope, { startImmediately: true })
        }
        return result
      })
    ))

  const activeTurn = (sessionKey: string) =>
    Effect.suspend(() => {
      const turn = sessions.get(sessionKey)?.active
      return turn && !turn.closed ? Effect.succeed(turn) : Effect.fail(new NoActiveTurn({ sessionKey }))
    })

  /** Queues steering on `turn`, or fails saying why it cannot take it. */
  const steer = (turn: Turn.Turn, message: string): Effect.Effect<void, SteeringQueueFull | NoActiveTurn> => {
    const queued = Turn.steer(turn, message)
    return queued === "queued"
      ? Checkpoints.queued(engine, turn)
      : Effect.fail(
        queued === "full"
          ? new SteeringQueueFull({ sessionKey: turn.sessionKey, capacity: turn.steeringCapacity })
          : new NoActiveTurn({ sessionKey: turn.sessionKey })
      )
  }

  /** A router worker: runs the session's turns until nothing is left for it. */
  const work = (state: SessionState, sessionKey: string, first: Turn.Turn, input: string) =>
    workers.withPermits(1)(Effect.gen(function*() {
      let turn = first
      let next = input
      while (true) {
        const result = yield* runInSession(state, sessionKey, next, {}, turn)
        yield* Queue.offer(outbound, outboundOf(result))
        const more = yield* Effect.clockWith((clock) =>
          Effect.sync(() => {
            state.backlog.unshift(...result.followUps)
            const following = state.backlog.shift()
            if (following === undefined) {
              state.routed = false
              return undefined
            }
            const prepared = newTurn(sessionKey, clock, config.model)
            state.active = prepared
            return { prepared, following }
          })
        )
        if (more === undefined) return yield* releaseWhenIdle(sessionKey, state)
        turn = more.prepared
        next = more.following
      }
    }))

  const loop: AgentLoopShape = {
    // The typed overloads only narrow `output`, which the decoding Schema guarantees.
    turn: ((sessionKey: string, input: Content, options: TurnOptions = {}) =>
      Effect.suspend(() => {
        const rejected = checkInput(config, options.model ?? config.model, input)
        return rejected ? Effect.fail(rejected) : runInSession(session(sessionKey), sessionKey, input, options, undefined)
      })) as AgentLoopShape["turn"],
    send: (inbound: Inbound) =>
      Effect.clockWith((clock) =>
        Effect.suspend(() => {
          const state = session(inbound.sessionKey)
          const active = state.active
          if (active && !active.closed) return steer(active, inbound.content).pipe(Effect.catchTag("NoActiveTurn", () => Effect.void))
          if (state.routed) {
            state.backlog.push(inbound.content)
            return Effect.void
          }
          state.routed = true
          const turn = newTurn(inbound.sessionKey, clock, config.model)
          state.active = turn
          return Effect.asVoid(Effect.forkIn(work(state, inbound.sessionKey, turn, inbound.content), loopScope))
        })
      ),
    outbound: Stream.fromQueue(outbound),
    injectSteering: (sessionKey, message) => Effect.flatMap(activeTurn(sessionKey), (turn) => steer(turn, message)),
    injectFollowUp: (sessionKey, message) =>
      Effect.flatMap(activeTurn(sessionKey), (turn) =>
        Effect.suspend(() => {
          Turn.queueFollowUp(turn, message)
          Turn.publish(turn, "FollowUpQueued", { content: message })
          return Checkpoints.queued(engine, turn)
        })),
    interruptGraceful: (sessionKey, hint) =>
      Effect.flatMap(activeTurn(sessionKey), (turn) =>
        Effect.flatMap(Turn.requestGraceful(turn, hint), (first) =>
          first ? Turn.emit(turn, "InterruptReceived", { kind: "graceful", ...(hint === undefined ? {} : { hint }) }) : Effect.void)),
    interruptHard: (sessionKey) => Effect.flatMap(activeTurn(sessionKey), HardAbort.fromOutside),
    compact: (sessionKey, options = {}) =>
      Effect.clockWith((clock) =>
        Effect.suspend(() => {
          const state = session(sessionKey)
          const keep = options.keepMessages ?? config.summarizeKeepMessages
          if (!Number.isSafeInteger(keep) || keep < 0) {
            return Effect.fail(new CompactionFailed({ sessionKey, message: `keepMessages is a number of messages, 0 or more, not ${keep}; history kept` }))
          }
          // events of the summary carry a turn id of their own; no turn starts or ends
          const run = Effect.suspend(() =>
            summarize(engine, storedSession(store, sessionKey), newTurn(sessionKey, clock, options.model ?? config.model), { force: true, keep })
          )
          return Effect.flatMap(using(sessionKey, state, state.lock.withPermits(1)(run)), (outcome) =>
            outcome._tag === "Failed"
              ? Effect.fail(new CompactionFailed({ sessionKey, message: outcome.message }))
              : Effect.succeed({ sessionKey, summarized: outcome._tag === "Summarized" ? outcome.summarized : 0, remaining: outcome.remaining }))
        })
      ),
    subscribe: (options) => bus.subscribe(options),
    events: (options) => bus.stream(options),
    registerHook: (hook, options) => hooks.register(hook, options),
    activeTurn: (sessionKey) =>
      Effect.sync(() => {
        const turn = sessions.get(sessionKey)?.active
        return turn ? Turn.info(turn) : undefined
      }),
    activeTurns: Effect.sync(() => [...turns.values()].map(Turn.info))
  }

  held.set(loop, () => sessions.size)
  return loop
})

/** The loop as a layer over its services. */
export const layer: Layer.Layer<AgentLoop, never, Engine.Services | SessionStore> = Layer.effect(AgentLoop, make)
