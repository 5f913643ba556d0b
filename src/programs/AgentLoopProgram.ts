/**
 * The `AgentLoop` layer (DESIGN §5): the public control API over the session runner
 * (`internal/sessionRunner.ts`: per-session order, drains of follow-ups, idle release), and the
 * router (`send` → a drain per busy session in a worker, at most `maxParallelTurns` at once, one
 * outbound reply per turn, follow-ups run in order after each turn has fully ended).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import { checkInput, checkModelOptions } from "../domain/Config.ts"
import { CompactionFailed, type InvalidConfig, NoActiveTurn, SteeringQueueFull } from "../domain/errors.ts"
import type { Content } from "../domain/Message.ts"
import * as ModelOptions from "../domain/ModelOptions.ts"
import { type Inbound, type Outbound, outboundOf, type SteerAck, type TurnResult } from "../domain/Turn.ts"
import { AgentLoop, type AgentLoopShape, type TurnOptions } from "../services/AgentLoop.ts"
import { SessionStore, type SessionStoreShape } from "../services/SessionStore.ts"
import * as Checkpoints from "./internal/checkpoint.ts"
import * as Engine from "./internal/engine.ts"
import * as HardAbort from "./internal/hardAbort.ts"
import { runTurn } from "./internal/runTurn.ts"
import * as SessionRunner from "./internal/sessionRunner.ts"
import { summarize } from "./internal/summarize.ts"
import * as RunningTurn from "./internal/runningTurn.ts"

/**
 * A turn's own model options, checked (bad ones fail the turn before it calls anything);
 * `undefined` when it sets none, the common case, which costs no decoding.
 */
const ownModelOptions = (options: TurnOptions): Result.Result<ModelOptions.ModelOptions, InvalidConfig> | undefined => {
  const picked = ModelOptions.pick(options)
  return Object.keys(picked).length === 0 ? undefined : checkModelOptions(picked)
}

/** The session runners of the loops built here, for `heldSessions`. */
const runners = new WeakMap<AgentLoopShape, SessionRunner.SessionRunner>()

/** How many sessions a loop currently holds state for: `effect-agent-loop/testing` exports it. */
export const heldSessions = (loop: AgentLoopShape): number => runners.get(loop)?.held() ?? 0

/** What `steer` says of a message that runs as a turn of its own. */
const nextTurn: SteerAck = { _tag: "Queued", reason: "next_turn" }

/** A stored session as a turn's session port: what `load` reads, `commit` appends. */
const storedSession = (store: SessionStoreShape, sessionKey: string): RunningTurn.SessionPort => ({
  load: store.load(sessionKey),
  commit: (entries) => entries.length > 0 ? store.append(sessionKey, entries) : Effect.void
})

/** Builds the loop from the services; sessions end (`sessionEnd`) when its scope closes. */
export const make = Effect.gen(function*() {
  const engine = yield* Engine.make
  const { bus, config, hooks, turns } = engine
  const loopScope = engine.scope
  const store = yield* SessionStore
  const workers = yield* Semaphore.make(config.maxParallelTurns)
  const outbound = yield* Queue.unbounded<Outbound>()

  /** A root turn of the session; a resumed one keeps its id. */
  const newTurn = (sessionKey: string, clock: Clock.Clock, options: TurnOptions, model = options.model ?? config.model) => {
    const own = ownModelOptions(options)
    return RunningTurn.make({
      turnId: options.checkpoint?.resume?.turnId ?? engine.nextTurnId(),
      model,
      modelOptions: own !== undefined && Result.isSuccess(own) ? ModelOptions.merge(config.modelOptions, own.success) : config.modelOptions,
      toolNames: options.tools,
      planning: options.planMode === true,
      sessionKey,
      depth: 0,
      parentTurnId: undefined,
      startedAt: clock.currentTimeMillisUnsafe(),
      steeringCapacity: config.maxSteering,
      pendingCapacity: config.subTurn.pendingCapacity,
      bus,
      clock
    })
  }

  /** Queues steering on `turn`, or fails saying why it cannot take it. */
  const steer = (turn: RunningTurn.RunningTurn, message: string): Effect.Effect<void, SteeringQueueFull | NoActiveTurn> => {
    const queued = RunningTurn.steer(turn, message)
    return queued === "queued"
      ? Checkpoints.queued(engine, turn)
      : Effect.fail(
        queued === "full"
          ? new SteeringQueueFull({ sessionKey: turn.sessionKey, capacity: turn.steeringCapacity })
          : new NoActiveTurn({ sessionKey: turn.sessionKey })
      )
  }

  const runner = yield* SessionRunner.make({
    makeTurn: newTurn,
    runTurn: (turn, input, options, firstOfSession) =>
      Effect.suspend(() => {
        const own = ownModelOptions(options)
        turns.set(turn.turnId, turn)
        return runTurn(engine, turn, {
          input,
          systemPrompt: config.systemPrompt,
          session: storedSession(store, turn.sessionKey),
          firstOfSession,
          ...(own !== undefined && Result.isFailure(own) ? { rejected: own.failure } : {}),
          ...(options.output === undefined ? {} : { output: { schema: options.output, jsonSchema: options.outputJsonSchema } }),
          ...(options.checkpoint === undefined ? {} : { checkpoint: options.checkpoint })
        }).pipe(Effect.ensuring(Effect.sync(() => turns.delete(turn.turnId))))
      }),
    afterTurn: (turn, result) =>
      result.status !== "aborted" && config.summarizeThreshold > 0 ? summarize(engine, storedSession(store, turn.sessionKey), turn) : undefined,
    endSession: (sessionKey) => Effect.asVoid(hooks.run("sessionEnd", { sessionKey })),
    idleTimeout: config.sessionIdleTimeout
  })

  /** The session's open turn, or `NoActiveTurn`. */
  const activeTurn = (sessionKey: string) =>
    Effect.suspend(() => {
      const turn = runner.active(sessionKey)
      return turn && !turn.closed ? Effect.succeed(turn) : Effect.fail(new NoActiveTurn({ sessionKey }))
    })

  /** The router's reply to a turn it ran. */
  const reply = (result: TurnResult) => Queue.offer(outbound, outboundOf(result))

  /** A routed message's drain, in a worker: at most `maxParallelTurns` at once. */
  const work = (drain: Effect.Effect<void>) => Effect.asVoid(Effect.forkIn(workers.withPermits(1)(drain), loopScope))

  /**
   * Acknowledged steering on an open turn: admitted to its next model call while it has one left,
   * else its follow-up; a turn that closed meanwhile sends the message through the router again.
   */
  const admit = (turn: RunningTurn.RunningTurn, message: string): Effect.Effect<SteerAck, SteeringQueueFull> =>
    Effect.suspend(() => {
      if (turn.iteration >= config.maxIterations) {
        RunningTurn.queueFollowUp(turn, message)
        RunningTurn.publish(turn, "FollowUpQueued", { content: message })
        const ack: SteerAck = { _tag: "Queued", reason: "follow_up", turnId: turn.turnId }
        return Checkpoints.queued(engine, turn).pipe(Effect.as(ack), Effect.catchTag("NoActiveTurn", () => Effect.succeed(ack)))
      }
      // joins the next model call: the one after the call in flight, or the first if none was made
      const iteration = turn.iteration + 1
      const queued = RunningTurn.steer(turn, message)
      if (queued === "queued") {
        return Checkpoints.queued(engine, turn).pipe(
          Effect.as<SteerAck>({ _tag: "Admitted", turnId: turn.turnId, iteration }),
          // the turn was stopped while its checkpoint was written: its queued steering became its follow-ups
          Effect.catchTag("NoActiveTurn", () => Effect.succeed<SteerAck>({ _tag: "Queued", reason: "follow_up", turnId: turn.turnId }))
        )
      }
      if (queued === "full") return Effect.fail(new SteeringQueueFull({ sessionKey: turn.sessionKey, capacity: turn.steeringCapacity }))
      return steerAcknowledged(turn.sessionKey, message)
    })

  const steerAcknowledged = (sessionKey: string, message: string): Effect.Effect<SteerAck, SteeringQueueFull> =>
    Effect.flatMap(runner.route(sessionKey, message, reply), (routed): Effect.Effect<SteerAck, SteeringQueueFull> => {
      switch (routed._tag) {
        case "Open":
          return admit(routed.turn, message)
        case "Started":
          return Effect.as(work(routed.drain), nextTurn)
        case "Queued":
          return Effect.succeed(nextTurn)
      }
    })

  const loop: AgentLoopShape = {
    // The typed overloads only narrow `output`, which the decoding Schema guarantees.
    turn: ((sessionKey: string, input: Content, options: TurnOptions = {}) =>
      Effect.suspend(() => {
        const rejected = checkInput(config, options.model ?? config.model, input)
        return rejected ? Effect.fail(rejected) : runner.turn(sessionKey, input, options)
      })) as AgentLoopShape["turn"],
    send: (inbound: Inbound) =>
      Effect.flatMap(runner.route(inbound.sessionKey, inbound.content, reply), (routed) => {
        switch (routed._tag) {
          case "Open":
            // a turn that ended meanwhile took it as a follow-up
            return Effect.catchTag(steer(routed.turn, inbound.content), "NoActiveTurn", () => Effect.void)
          case "Started":
            return work(routed.drain)
          case "Queued":
            return Effect.void
        }
      }),
    outbound: Stream.fromQueue(outbound),
    injectSteering: (sessionKey, message) => Effect.flatMap(activeTurn(sessionKey), (turn) => steer(turn, message)),
    steer: steerAcknowledged,
    injectFollowUp: (sessionKey, message) =>
      Effect.flatMap(activeTurn(sessionKey), (turn) =>
        Effect.suspend(() => {
          RunningTurn.queueFollowUp(turn, message)
          RunningTurn.publish(turn, "FollowUpQueued", { content: message })
          return Checkpoints.queued(engine, turn)
        })),
    interruptGraceful: (sessionKey, hint) =>
      Effect.flatMap(activeTurn(sessionKey), (turn) =>
        Effect.flatMap(RunningTurn.requestGraceful(turn, hint), (first) =>
          first ? RunningTurn.emit(turn, "InterruptReceived", { kind: "graceful", ...(hint === undefined ? {} : { hint }) }) : Effect.void)),
    interruptHard: (sessionKey) => Effect.flatMap(activeTurn(sessionKey), (turn) => HardAbort.fromOutside(turn, "hard")),
    interruptNow: (sessionKey) => Effect.flatMap(activeTurn(sessionKey), (turn) => HardAbort.fromOutside(turn, "now")),
    compact: (sessionKey, options = {}) =>
      Effect.clockWith((clock) =>
        Effect.suspend(() => {
          const keep = options.keepMessages ?? config.summarizeKeepMessages
          if (!Number.isSafeInteger(keep) || keep < 0) {
            return Effect.fail(new CompactionFailed({ sessionKey, message: `keepMessages is a number of messages, 0 or more, not ${keep}; history kept` }))
          }
          // events of the summary carry a turn id of their own; no turn starts or ends
          const run = Effect.suspend(() =>
            summarize(engine, storedSession(store, sessionKey), newTurn(sessionKey, clock, {}, options.model ?? config.model), { force: true, keep })
          )
          return Effect.flatMap(runner.exclusive(sessionKey, run), (outcome) =>
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
        const turn = runner.active(sessionKey)
        return turn ? RunningTurn.info(turn) : undefined
      }),
    activeTurns: Effect.sync(() => [...turns.values()].map(RunningTurn.info))
  }

  runners.set(loop, runner)
  return loop
})

/** The loop as a layer over its services. */
export const layer: Layer.Layer<AgentLoop, never, Engine.Services | SessionStore> = Layer.effect(AgentLoop, make)
