/**
 * `AgentLoop` backed by a cluster: the same interface, so code written against `AgentLoop` runs
 * unchanged on one process or on many. Every per-session operation is an RPC to the session's
 * entity, on whichever runner has it now.
 *
 * What a client cannot do as a single process does:
 * - `turn` never fails (as locally): when the cluster cannot be reached or answers with an error,
 *   the result has status `failed` and the reason in `error`. A turn whose runner stopped while it
 *   ran is reported as the session log holds it: completed if its commit is there, else `aborted`
 *   with nothing of it saved.
 * - `subscribe`/`events` (and the client's `EventBus`) deliver the events of the sessions this
 *   client has calls running for, streamed from their runners while anyone listens; other sessions'
 *   events stay on their runners (the entity's `Events` RPC watches any one session).
 * - `registerHook` takes observers only (`onEvent`, on those same events). Hooks that decide
 *   (`beforeTool`, `approveTool`, ...) must run where the turn runs: register them in the runners'
 *   layer. Registering one on a client is a defect, so a policy is never silently not applied.
 * - `activeTurn` asks the session's runner; `activeTurns` asks the runners of the sessions this
 *   client has calls running for (root turns only).
 * - Control calls (steering, follow-ups, interrupts, `activeTurn`) wait at most `controlTimeout`
 *   for a runner to answer; past it they die with `ClusterUnavailable`.
 * - With a cluster secret in context (`ClusterSecret`), `Turn` and `Send` requests are signed; a
 *   runner with a secret answers unsigned or wrongly signed ones with status `failed`, unrun.
 */
import { randomUUID } from "node:crypto"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as ClusterError from "effect/cluster/ClusterError"
import type * as Sharding from "effect/cluster/Sharding"
import * as SqlClient from "effect/sql/SqlClient"
import type * as AgentEvent from "../domain/Event.ts"
import type { CompactionFailed, ContentRejected, NoActiveTurn, SteeringQueueFull } from "../domain/errors.ts"
import type { Hook, RegisterOptions } from "../domain/Hook.ts"
import { checkContent, type Content, DEFAULT_MAX_IMAGE_BYTES } from "../domain/Message.ts"
import * as ModelOptions from "../domain/ModelOptions.ts"
import { SUMMARY_TIMEOUT } from "../domain/SessionLog.ts"
import type { CompactResult, Outbound, SteerAck, TurnInfo, TurnResult } from "../domain/Turn.ts"
import { isTransient, retryTransient, transientSchedule } from "../domain/connectionFailure.ts"
import * as EventBusLive from "../layers/EventBus.ts"
import { AgentLoop, type AgentLoopShape, type TurnOptions } from "../services/AgentLoop.ts"
import { EventBus, type EventBusShape } from "../services/EventBus.ts"
import * as Auth from "./auth.ts"
import * as Fates from "./fates.ts"
import * as Mirror from "./mirror.ts"
import * as Outcome from "./outcome.ts"
import { AgentSession, type Finished, type SessionEvent } from "./protocol.ts"
import * as ReplyLog from "./replyLog.ts"

/** The cluster did not answer a control call in time, or answered with an infrastructure error. */
export class ClusterUnavailable extends Schema.TaggedError<ClusterUnavailable>()("ClusterUnavailable", {
  sessionKey: Schema.String,
  operation: Schema.String,
  message: Schema.String
}) {}

/** A hook with handlers that decide was registered on a cluster client. */
export class HookNotSupportedOnClient extends Schema.TaggedError<HookNotSupportedOnClient>()("HookNotSupportedOnClient", {
  name: Schema.String,
  handlers: Schema.Array(Schema.String)
}) {}

/** Options of the client. */
export interface ClientOptions {
  /** Buffer of each subscriber of the client's bus; default 16. */
  readonly eventBufferCapacity?: number
  /** The longest a control call waits for a runner; default 30 seconds. */
  readonly controlTimeout?: Duration.Input
  /**
   * The largest image a turn's input may hold, checked here before the request is stored in the
   * cluster; default 5 MiB. The runner checks again with its own configuration (and its model).
   */
  readonly maxImageBytes?: number
  /**
   * How long a `turn` waits without progress (no answer, no event of its session, no turn running
   * on its session's runner) before it gives up; default 10 minutes. A request no runner started
   * by then is cancelled in the same step and never runs (`fates.ts`); the turn is `failed`.
   */
  readonly progressTimeout?: Duration.Input
}

/** The default of `ClientOptions.progressTimeout`. */
export const DEFAULT_PROGRESS_TIMEOUT = Duration.minutes(10)

/** What the cluster itself can fail a call with (as opposed to the operation's own errors). */
type ClusterErrors = ClusterError.MailboxFull | ClusterError.AlreadyProcessingMessage | ClusterError.PersistenceError | ClusterError.EntityNotAssignedToRunner

const clusterErrorTags: ReadonlySet<string> = new Set(["MailboxFull", "AlreadyProcessingMessage", "PersistenceError", "EntityNotAssignedToRunner"])

const isClusterError = (error: unknown): error is ClusterErrors =>
  typeof error === "object" && error !== null && "_tag" in error && clusterErrorTags.has(String(error._tag))

const errorText = (error: unknown): string =>
  typeof error === "object" && error !== null && "_tag" in error
    ? `${String(error._tag)}${"message" in error && error.message ? `: ${String(error.message)}` : ""}`
    : String(error)

/** A result for a turn the cluster could not run. */
const failed = (sessionKey: string, turnId: string, error: string): TurnResult => Outcome.unrun(turnId, sessionKey, "failed", error)

/** Why a turn asking for a typed answer (`TurnOptions.output`) fails on a cluster. */
export const OUTPUT_UNSUPPORTED = "a typed answer (the output option) is not supported on a cluster: run the turn on a local loop"


/**
 * Why a client's request failed to be stored may pass: a transient failure of the database. The
 * request carries its own key, so storing it again never stores a second one (`protocol.ts`).
 */
const storeAgain = (error: { readonly _tag: string }): boolean => error._tag === "PersistenceError" && isTransient(error)

/** A persisted request, signed when the cluster has a secret, so that runners know it came from the cluster. */
const signed = <P extends object>(secret: Redacted.Redacted<string> | undefined, rpc: string, sessionKey: string, payload: P): Effect.Effect<P> =>
  secret === undefined ? Effect.succeed(payload) : Auth.signRequest(secret, rpc, sessionKey, payload)

/**
 * Builds the client; needs a `Sharding` (a client-only node or a runner) and the cluster's
 * database, where it reads the messages a reply left in the session log.
 */
export const make = (options: ClientOptions = {}) =>
  Effect.gen(function*() {
    const clientFor = yield* AgentSession.client
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const secret = yield* Auth.currentSecret
    const scope = yield* Effect.scope
    const bus = yield* EventBusLive.make(options.eventBufferCapacity ?? 16)
    const controlTimeout = Duration.fromInputUnsafe(options.controlTimeout ?? Duration.seconds(30))
    const progressTimeout = Duration.fromInputUnsafe(options.progressTimeout ?? DEFAULT_PROGRESS_TIMEOUT)
    // made on first use: a client that never gives up on a turn never touches the fates' table
    const fates = yield* Effect.cached(Fates.make.pipe(Effect.provideService(SqlClient.SqlClient, sql)))
    /** When an event of each session this client watches last arrived (epoch milliseconds): its progress. */
    const lastEvent = new Map<string, number>()
    const outbound = yield* Queue.unbounded<Outbound>()
    const inFlight = new Map<string, number>()
    let failures = 0

    /** A reply's result with its messages: read back from the session log, in the cluster's database, when the reply left them there. */
    const withMessages = (result: TurnResult, log: ReplyLog.LogRange | undefined): Effect.Effect<TurnResult> =>
      log === undefined ? Effect.succeed(result) : retryTransient(ReplyLog.restore(sql, result, log)).pipe(
        Effect.catchCause((cause) =>
          Effect.as(Effect.logWarning(`cluster: could not read turn ${result.turnId}'s messages from the session log`, cause), result)
        )
      )

    const sessionEvents = (sessionKey: string): Stream.Stream<SessionEvent, unknown> =>
      clientFor(sessionKey).Events().pipe(
        Stream.tap(() => Effect.flatMap(Clock.currentTimeMillis, (at) => Effect.sync(() => lastEvent.set(sessionKey, at))))
      )
    const mirror = yield* Mirror.make(bus, sessionEvents)

    /** Marks a call of the session as running (for `activeTurns`) and mirrors its events, for the scope. */
    const running = (sessionKey: string) =>
      Effect.andThen(
        Effect.acquireRelease(
          Effect.sync(() => inFlight.set(sessionKey, (inFlight.get(sessionKey) ?? 0) + 1)),
          () =>
            Effect.sync(() => {
              const left = (inFlight.get(sessionKey) ?? 1) - 1
              if (left === 0) inFlight.delete(sessionKey)
              else inFlight.set(sessionKey, left)
            })
        ),
        mirror.watch(sessionKey)
      )

    /** A control call: its own errors pass, the cluster's die, and it has a deadline. */
    const control = <A, E>(
      sessionKey: string,
      operation: string,
      call: Effect.Effect<A, E | ClusterErrors>,
      deadline: Duration.Duration = controlTimeout
    ): Effect.Effect<A, E> =>
      call.pipe(
        Effect.catchIf(isClusterError, (error) => Effect.die(new ClusterUnavailable({ sessionKey, operation, message: errorText(error) }))),
        Effect.timeoutOrElse({
          duration: deadline,
          orElse: () =>
            Effect.die(new ClusterUnavailable({ sessionKey, operation, message: `no runner answered within ${Duration.format(deadline)}` }))
        })
      ) as Effect.Effect<A, E>

    /**
     * Waits until the turn keyed `key` has made no progress for `progressTimeout`, then gives up on
     * it: its request is cancelled unless a runner started it, and the result says which. Progress
     * is the client's own wait being younger than the timeout, an event of the session mirrored
     * since, or a turn running on the session's runner (asked when the time is up, before the
     * request is cancelled: a request waits on its runner, unstarted, behind the session's turns).
     */
    const stalled = (sessionKey: string, key: string): Effect.Effect<TurnResult> =>
      Effect.gen(function*() {
        const timeout = Duration.toMillis(progressTimeout)
        let since = yield* Clock.currentTimeMillis
        while (true) {
          const now = yield* Clock.currentTimeMillis
          const last = Math.max(since, lastEvent.get(sessionKey) ?? 0)
          if (now - last < timeout) {
            yield* Effect.sleep(Duration.millis(last + timeout - now))
            continue
          }
          // a turn running on the session's runner (this one, or one it waits behind): progress
          const running = yield* Effect.exit(control<TurnInfo | undefined, never>(sessionKey, "activeTurn", clientFor(sessionKey).ActiveTurn()))
          if (Exit.isSuccess(running) && running.value !== undefined) {
            since = yield* Clock.currentTimeMillis
            continue
          }
          const at = yield* Clock.currentTimeMillis
          const fate = yield* Effect.flatMap(fates, (table) => table.decide(key, "cancelled", at))
          const waited = Duration.format(progressTimeout)
          if (fate === "cancelled") {
            return failed(sessionKey, `failed-${++failures}`, `the turn made no progress for ${waited}: no runner had started it, so it was cancelled and will not run`)
          }
          return failed(
            sessionKey,
            `failed-${++failures}`,
            `the turn made no progress for ${waited}: a runner started it, and no turn of the session runs now; the session log holds what it completed`
          )
        }
      })

    const finish = (result: TurnResult, lost: boolean, resumed?: AgentEvent.AgentEvent) =>
      Effect.flatMap(Clock.currentTimeMillis, (at) =>
        mirror.settle(result.turnId, lost || resumed ? Outcome.turnEnd(result, at) : undefined, resumed, Outcome.turnEnd(result, at)))

    const turn = (sessionKey: string, input: Content, turnOptions: TurnOptions = {}): Effect.Effect<TurnResult, ContentRejected> =>
      Effect.scoped(Effect.gen(function*() {
        const rejected = checkContent(input, options.maxImageBytes ?? DEFAULT_MAX_IMAGE_BYTES)
        if (rejected) return yield* rejected
        // A Schema cannot travel to a runner: rather than answer untyped, say so.
        if (turnOptions.output !== undefined) return failed(sessionKey, `failed-${++failures}`, OUTPUT_UNSUPPORTED)
        yield* running(sessionKey)
        const payload = {
          ...ModelOptions.pick(turnOptions),
          ...(turnOptions.model === undefined ? {} : { model: turnOptions.model }),
          ...(turnOptions.tools === undefined ? {} : { tools: turnOptions.tools }),
          input
        }
        const key = randomUUID()
        const request = yield* signed(secret, "Turn", sessionKey, { ...payload, key })
        // the cluster's database blipped while the request was stored: stored again under its key, it is stored once
        const call = Effect.retry(clientFor(sessionKey).Turn(request), { while: storeAgain, schedule: transientSchedule() })
        const raced = yield* Effect.exit(Effect.raceFirst(Effect.map(call, (finished) => ({ finished })), Effect.map(stalled(sessionKey, key), (gaveUp) => ({ gaveUp }))))
        if (Exit.isSuccess(raced) && "gaveUp" in raced.value) {
          yield* finish(raced.value.gaveUp, true)
          return raced.value.gaveUp
        }
        const outcome = Exit.map(raced, (won) => (won as { readonly finished: typeof Finished.Type }).finished)
        if (Exit.isFailure(outcome)) {
          const refused = Cause.findErrorOption(outcome.cause)
          if (refused._tag === "Some" && refused.value._tag === "ContentRejected") return yield* refused.value
          return failed(sessionKey, `failed-${++failures}`, `the cluster could not run the turn: ${errorText(Cause.squash(outcome.cause))}`)
        }
        const { lost, resumed, log } = outcome.value
        const result = yield* withMessages(outcome.value.result, log)
        yield* finish(result, lost, resumed)
        return result
      }))

    const send: AgentLoopShape["send"] = (inbound) =>
      Effect.gen(function*() {
        const { sessionKey, content } = inbound
        const first = yield* Deferred.make<void, SteeringQueueFull>()
        yield* Effect.scoped(Effect.gen(function*() {
          yield* running(sessionKey)
          const request = yield* signed(secret, "Send", sessionKey, { content, key: randomUUID() })
          // stored again under its key while nothing came back: the database blipped as it was stored
          let answered = false
          yield* clientFor(sessionKey).Send(request).pipe(
            Stream.runForEach((chunk) =>
              Effect.andThen(
                Effect.sync(() => (answered = true)),
                chunk._tag === "Replied"
                  ? Effect.flatMap(withMessages(chunk.outbound.result, chunk.log), (result) =>
                    Effect.andThen(finish(result, chunk.lost, chunk.resumed), Queue.offer(outbound, { ...chunk.outbound, result })))
                  : Deferred.succeed(first, undefined)
              )
            ),
            Effect.retry({ while: (error) => !answered && storeAgain(error), schedule: transientSchedule() }),
            Effect.catchTag("SteeringQueueFull", (error) => Deferred.fail(first, error)),
            Effect.catchCause((cause) =>
              Deferred.die(first, new ClusterUnavailable({ sessionKey, operation: "send", message: errorText(Cause.squash(cause)) }))
            )
          )
        })).pipe(Effect.forkIn(scope))
        yield* Deferred.await(first)
      })

    const loop: AgentLoopShape = {
      turn: turn as AgentLoopShape["turn"],
      send,
      outbound: Stream.fromQueue(outbound),
      injectSteering: (sessionKey, message) =>
        control<void, NoActiveTurn | SteeringQueueFull>(sessionKey, "injectSteering", clientFor(sessionKey).InjectSteering({ message })),
      injectFollowUp: (sessionKey, message) =>
        control<void, NoActiveTurn>(sessionKey, "injectFollowUp", clientFor(sessionKey).InjectFollowUp({ message })),
      interruptGraceful: (sessionKey, hint) =>
        control<void, NoActiveTurn>(sessionKey, "interruptGraceful", clientFor(sessionKey).InterruptGraceful(hint === undefined ? {} : { hint })),
      interruptHard: (sessionKey) => control<void, NoActiveTurn>(sessionKey, "interruptHard", clientFor(sessionKey).InterruptHard()),
      interruptNow: (sessionKey) => control<void, NoActiveTurn>(sessionKey, "interruptNow", clientFor(sessionKey).InterruptNow()),
      steer: (sessionKey, message) =>
        control<SteerAck, NoActiveTurn | SteeringQueueFull>(sessionKey, "steer", clientFor(sessionKey).Steer({ message })).pipe(
          // no turn runs: the message is sent, and runs as the session's next turn
          Effect.catchTag("NoActiveTurn", () => Effect.as(send({ sessionKey, content: message }), { _tag: "Queued", reason: "next_turn" } as const))
        ),
      // a summary is a provider call (bounded on the runner): more than a control's deadline
      compact: (sessionKey, compactOptions = {}) =>
        control<CompactResult, CompactionFailed>(sessionKey, "compact", clientFor(sessionKey).Compact(compactOptions), Duration.sum(SUMMARY_TIMEOUT, controlTimeout)),
      subscribe: (subscribeOptions) => mirror.subscribe(subscribeOptions),
      events: (subscribeOptions) => mirror.stream(subscribeOptions),
      registerHook: (hook: Hook, registerOptions?: RegisterOptions) => {
        const deciding = Object.keys(hook).filter((name) => name !== "onEvent" && hook[name as keyof Hook] !== undefined)
        if (deciding.length > 0) {
          return Effect.die(new HookNotSupportedOnClient({ name: registerOptions?.name ?? "hook", handlers: deciding }))
        }
        const onEvent = hook.onEvent
        if (onEvent === undefined) return Effect.void
        return Effect.gen(function*() {
          const subscription = yield* mirror.subscribe({ capacity: 1024 })
          yield* subscription.stream.pipe(
            Stream.runForEach((event) => Effect.ignore(Effect.suspend(() => {
              const returned = onEvent(event)
              return Effect.isEffect(returned) ? returned : Effect.void
            }))),
            Effect.forkScoped
          )
        })
      },
      activeTurn: (sessionKey) => control<TurnInfo | undefined, never>(sessionKey, "activeTurn", clientFor(sessionKey).ActiveTurn()),
      activeTurns: Effect.suspend(() =>
        Effect.forEach([...inFlight.keys()], (sessionKey) => loop.activeTurn(sessionKey), { concurrency: "unbounded" })
      ).pipe(Effect.map((infos) => infos.filter((info): info is TurnInfo => info !== undefined)))
    }
    /** The client's bus as a service: what subscribes through it counts as listening, as through the loop. */
    const events: EventBusShape = {
      publish: bus.publish,
      publishUnsafe: bus.publishUnsafe,
      subscribe: mirror.subscribe,
      stream: mirror.stream,
      dropped: bus.dropped,
      subscribers: bus.subscribers
    }
    return { loop, events }
  })

/** `AgentLoop` over the cluster, and the client's `EventBus` (the events of its running calls). */
export const layer = (options: ClientOptions = {}): Layer.Layer<AgentLoop | EventBus, never, Sharding.Sharding | SqlClient.SqlClient> =>
  Layer.effectContext(Effect.map(make(options), ({ events, loop }) => Context.make(AgentLoop, loop).pipe(Context.add(EventBus, events))))
