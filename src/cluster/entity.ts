/**
 * The runner's side of the session entity: each RPC calls the runner's own `AgentLoop`. A session
 * lives on one runner at a time, so that loop's per-session FIFO, steering and interrupts hold for
 * the whole cluster.
 *
 * The entity handles its requests concurrently (steering and interrupts must reach a running turn);
 * the loop serialises the turns of the session. A `Send` request's turns follow one another as a
 * drain of the session runner (`programs/internal/sessionRunner.ts`): its turn, then the follow-ups
 * each turn queues, one reply each; here each turn is also made durable, fenced and recorded.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as Entity from "effect/cluster/Entity"
import * as SqlClient from "effect/sql/SqlClient"
import { type ContentRejected, NoActiveTurn, type SteeringQueueFull } from "../domain/errors.ts"
import { outboundOf, type SteerAck, type TurnResult } from "../domain/Turn.ts"
import * as SessionRunner from "../programs/internal/sessionRunner.ts"
import { AgentLoop } from "../services/AgentLoop.ts"
import { EventBus } from "../services/EventBus.ts"
import { LoopConfig } from "../services/LoopConfig.ts"
import { CommitTicket } from "../services/SessionFencing.ts"
import { Secrets } from "../services/Secrets.ts"
import { SessionStore } from "../services/SessionStore.ts"
import * as Auth from "./auth.ts"
import * as Backlogs from "./backlogs.ts"
import * as Claims from "./claims.ts"
import * as Fates from "./fates.ts"
import * as Lanes from "./lanes.ts"
import * as Nonces from "./nonces.ts"
import * as Fence from "./fence.ts"
import * as Outcome from "./outcome.ts"
import * as Once from "./once.ts"
import * as ReplyLog from "./replyLog.ts"
import { AgentSession, type Finished, type SendProgress } from "./protocol.ts"
import * as Resume from "./resume.ts"

export { LOST_TURN_ERROR } from "./outcome.ts"

/** Hands a `Send` request's progress to its stream. */
type Emit = (progress: SendProgress) => Effect.Effect<unknown>

/** How many session events a remote observer may fall behind by before it loses some. */
const EVENTS_CAPACITY = 1024

/**
 * The session entity over the runner's `AgentLoop`. `Send` turns run at most `maxParallelTurns` at
 * once on this runner, as the loop's own router would. Requests are claimed in the cluster's
 * database (`claims.ts`) before their turn starts; a request's claim and start run once per
 * request id on this runner, in its scope (`once.ts`), so a delivery arriving meanwhile joins them.
 */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* LoopConfig
  const workers = yield* Semaphore.make(config.maxParallelTurns)
  const claims = yield* Claims.make
  const nonces = yield* Nonces.make
  const fates = yield* Fates.make
  const backlogs = yield* Backlogs.make
  const secrets = yield* Secrets
  const turns = yield* Fence.make(yield* SessionStore)
  const resume = yield* Resume.make
  const secret = yield* Auth.currentSecret
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const steps = yield* Once.make<typeof Finished.Type, ContentRejected>()
  const routings = yield* Once.makeStream<SendProgress, SteeringQueueFull>()
  const lanes = Lanes.make()

  return AgentSession.toLayer(
    Effect.gen(function*() {
      const sessionKey = (yield* Entity.CurrentAddress).entityId
      const address = yield* Entity.CurrentRunnerAddress
      const runner = `${address.host}:${address.port}`
      const loop = yield* AgentLoop
      const bus = yield* EventBus
      // this runner's ownership of the session: commits of an earlier owner are rejected from now on
      const epoch = yield* turns.take(sessionKey)

      /**
       * The request claimed by a new attempt: whether it starts here for the first time (false: a
       * runner started it before, and this attempt takes it over). Under this runner's ownership of
       * the session: a request a later owner claimed is not run here (the step is interrupted).
       */
      const claim = (requestId: string): Effect.Effect<Claims.Claimed> =>
        Effect.flatMap(Clock.currentTimeMillis, (at) => claims.claim(requestId, sessionKey, at, epoch)).pipe(
          // a later owner of the session claimed it (this runner froze and woke up): not run here, not answered here
          Effect.flatMap((claimed) =>
            claimed._tag === "Claimed" ? Effect.succeed(claimed) : Effect.andThen(
              Effect.logWarning(`cluster: request ${requestId} of session ${sessionKey} is another runner's now: not run here`),
              Effect.interrupt
            ))
        )

      /**
       * A turn that a runner started and none answered: its outcome as the store tells it (its
       * commit's result, or `aborted` with nothing saved), or as the caller already read it (no
       * late commit can land since this runner took the session); `TurnEnd` tells this runner's observers.
       */
      const lost = (requestId: string, known?: TurnResult, from?: number) =>
        Effect.gen(function*() {
          const result = known ?? (yield* turns.outcome(requestId, sessionKey, from)).result
          yield* bus.publish(Outcome.turnEnd(result, yield* Clock.currentTimeMillis))
          return result
        })

      /** Under the session's ticket (recorded under the request, if any); a request's follow-up turns extend its commit record. */
      const fenced = <A, E, R>(requestId: string | undefined, turn: Effect.Effect<A, E, R>) =>
        epoch === undefined ? turn : Effect.provideService(turn, CommitTicket, { epoch, requestId })

      /**
       * Why a persisted request may not run: its signature (`Auth.verify`), then, with a secret, its
       * nonce (a copy of a request admitted under another id, or one made too long ago), then its
       * client's cancellation (`fates.ts`); undefined when it may, and a keyed request is then started.
       */
      const admission = (rpc: "Turn" | "Send", requestId: string, payload: Partial<Auth.Signed> & { readonly key?: string | undefined }) =>
        Effect.flatMap(signedAdmission(rpc, requestId, payload), (refusal) => refusal !== undefined ? Effect.succeed(refusal) : started(payload.key))

      const signedAdmission = (rpc: "Turn" | "Send", requestId: string, payload: Partial<Auth.Signed>): Effect.Effect<string | undefined> => {
        const refusal = Auth.verify(secret, rpc, sessionKey, payload)
        if (refusal !== undefined || secret === undefined) return Effect.succeed(refusal)
        const { issuedAt, nonce } = payload
        if (nonce === undefined || issuedAt === undefined) return Effect.succeed(Nonces.UNBOUND)
        return Effect.map(
          Effect.flatMap(Clock.currentTimeMillis, (now) => nonces.admit(nonce, requestId, issuedAt, now)),
          (admitted) => admitted === "admitted" ? undefined : Nonces.refusal(admitted)
        )
      }

      /** A keyed request is started here unless its client cancelled it first (`fates.ts`); why not, when it was. */
      const started = (key: string | undefined): Effect.Effect<string | undefined> =>
        key === undefined || key.length > Fates.MAX_KEY ? Effect.succeed(undefined) : Effect.map(
          Effect.flatMap(Clock.currentTimeMillis, (now) => fates.decide(key, "started", now)),
          (fate) => fate === "cancelled" ? Fates.CANCELLED : undefined
        )

      /** A request the cluster's secret does not vouch for (written into its database by someone else): it fails, unrun. */
      const refused = (requestId: string, reason: string) =>
        Effect.gen(function*() {
          yield* Effect.logWarning(`cluster: refused request ${requestId} of session ${sessionKey}: ${reason}`)
          const result = Outcome.unrun(`refused-${requestId}`, sessionKey, "failed", Auth.refusedRequest(reason))
          yield* bus.publish(Outcome.turnEnd(result, yield* Clock.currentTimeMillis))
          return result
        })

      /**
       * The reply without the turn's messages when they are in the cluster's database: the client
       * reads them from the log (`replyLog.ts`), and the persisted reply holds no second copy. A
       * store that does not fence records no commits: nothing to look up.
       */
      const referenced = (requestId: string, finished: typeof Finished.Type) =>
        epoch === undefined ? Effect.succeed(finished) : Effect.map(ReplyLog.locate(sql, requestId), (range): typeof Finished.Type =>
          Option.isNone(range) ? finished : { ...finished, ...ReplyLog.slim(finished.result, range.value) })

      /** One routed turn of a `Send` request, made durable (`resume.ts`), under a worker and the session's ticket. */
      const routedTurn = (requestId: string, input: string, durable: Resume.Durable) =>
        workers.withPermits(1)(fenced(requestId, durable.turn(loop.turn(sessionKey, input, { checkpoint: durable.checkpoint }))))

      /** The request's commit record so far, when the store fences (its entries are then in the cluster's database). */
      const recorded = (requestId: string) => epoch === undefined ? Effect.succeed(Option.none()) : ReplyLog.locate(sql, requestId)

      /**
       * A routed turn's reply; without the turn's messages when they are in the cluster's database:
       * the entries its commit added to the request's record (`prior`, the record before the turn) say where.
       */
      const replied = (
        requestId: string,
        prior: Option.Option<Omit<ReplyLog.LogRange, "final">>,
        result: TurnResult,
        resumed?: Resume.Durable
      ): Effect.Effect<SendProgress> =>
        Effect.map(recorded(requestId), (after) => {
          const event = resumed?.resumed()
          const reply = { _tag: "Replied", outbound: outboundOf(result), lost: false, ...(event === undefined ? {} : { resumed: event }) } as const
          if (Option.isNone(after) || (Option.isSome(prior) && prior.value.generation !== after.value.generation)) return reply
          const first = Option.isSome(prior) ? prior.value.end : after.value.first
          const slim = ReplyLog.slim(result, { generation: after.value.generation, first, end: after.value.end })
          return slim.log === undefined ? reply : { ...reply, outbound: { ...reply.outbound, result: slim.result }, log: slim.log }
        })

      /** Stores the follow-ups waiting behind a routed turn of the request (none: forgets them). */
      const keepWaiting = (requestId: string, attempt: string, waiting: ReadonlyArray<string>) =>
        Effect.flatMap(Clock.currentTimeMillis, (at) => backlogs.save(requestId, attempt, waiting.map(secrets.scrub), at))

      /**
       * A routed turn of the request as it starts fresh, then its reply: where it starts among the
       * request's entries (its checkpoint's key: `before`, committed by the request's earlier turns;
       * `index` without commit records), and the follow-ups waiting behind it stored while it runs
       * (`backlogs.ts`; `kept`: some are stored already, to be replaced or removed).
       */
      const freshTurn = (requestId: string, attempt: string, step: SessionRunner.Step, index: number, kept: boolean, emit: Emit) =>
        Effect.gen(function*() {
          const before = index === 0 ? 0 : (yield* turns.entries(requestId)) ?? index
          // where this turn starts among the request's entries, for a runner that finds it lost
          if (index > 0) yield* claims.running(requestId, attempt, before)
          if (step.waiting.length > 0 || kept) yield* keepWaiting(requestId, attempt, step.waiting.map((message) => message.text))
          const prior = yield* recorded(requestId)
          const result = yield* routedTurn(requestId, step.message.text, yield* resume.start(Resume.sendKey(requestId, before), requestId, sessionKey, attempt, runner))
          yield* emit(yield* replied(requestId, prior, result))
          return result
        })

      /**
       * A `Send` request's turns, one reply each: a drain of its own (`sessionRunner.ts`) — its turn,
       * then the follow-ups each turn queues and those waiting behind it. When the request is taken
       * over from a runner that stopped (`resuming`), `first` runs and replies to its first turn (resumed,
       * or lost with that runner), `waiting` are the follow-ups it stored behind that turn, and `offset`
       * counts the request's turns before it.
       */
      const routed = (
        requestId: string,
        attempt: string,
        content: string,
        resuming: { readonly first: (emit: Emit) => Effect.Effect<TurnResult>; readonly waiting: ReadonlyArray<string>; readonly offset: number } | undefined
      ): Stream.Stream<SendProgress> =>
        Stream.callback<SendProgress>((queue) => {
          const line = SessionRunner.makeLine()
          const first = line.offer({ text: content })!
          for (const text of resuming?.waiting ?? []) line.offer({ text })
          let kept = (resuming?.waiting.length ?? 0) > 0
          const emit: Emit = (progress) => Queue.offer(queue, progress)
          const each = (step: SessionRunner.Step) =>
            step.index === 0 && resuming !== undefined
              ? resuming.first(emit)
              : Effect.tap(freshTurn(requestId, attempt, step, (resuming?.offset ?? 0) + step.index, kept, emit), () =>
                Effect.sync(() => {
                  kept = step.waiting.length > 0
                }))
          return Effect.andThen(SessionRunner.drain(first, line, each), Queue.end(queue))
        })

      /**
       * A routed turn lost with its runner: the store tells its outcome, from the entries the request
       * had committed before it (`from`: those are its earlier turns', already answered).
       */
      const lostReply = (requestId: string, from: number) => (emit: Emit) =>
        Effect.tap(lost(requestId, undefined, from), (result) => emit({ _tag: "Replied", outbound: outboundOf(result), lost: true }))

      /**
       * A `Send` request a runner started and did not finish: its latest turn resumes from its
       * checkpoint unless the log has its commit, then the follow-ups it queues run; otherwise the
       * store tells the outcome. The follow-ups that waited behind it run after it.
       */
      const resumeRouted = (requestId: string, content: string, claimed: Claims.Claimed): Stream.Stream<SendProgress> =>
        Stream.unwrap(Effect.gen(function*() {
          const waiting = yield* backlogs.load(requestId)
          const after = (first: (emit: Emit) => Effect.Effect<TurnResult>, offset = 0) => routed(requestId, claimed.attempt, content, { first, waiting, offset })
          const latest = yield* resume.latestSend(requestId)
          // no checkpoint: where the running turn started is in the request's claim
          if (Option.isNone(latest)) return after(lostReply(requestId, yield* claims.runningFrom(requestId)))
          const { key, before } = latest.value
          const committed = yield* turns.entries(requestId)
          // the turn committed just before its runner died: not run again
          if (committed !== undefined && committed > before) return yield* Effect.as(resume.forget(key), after(lostReply(requestId, before)))
          const durable = yield* resume.prepare(requestId, sessionKey, claimed, runner, key)
          if (durable === undefined) return after(lostReply(requestId, before))
          // the input is in the checkpoint: the content only fills the argument
          return after((emit) =>
            Effect.gen(function*() {
              const prior = yield* recorded(requestId)
              const result = yield* routedTurn(requestId, content, durable)
              yield* emit(yield* replied(requestId, prior, result, durable))
              return result
            }), before)
        }))

      return AgentSession.of({
        Turn: (request) => {
          const requestId = String(request.requestId)
          // its place in the session's lane, taken on arrival: no await before it reorders the session's requests
          const place = lanes.take(sessionKey)
          const admitted = (refusal: string | undefined) =>
            refusal !== undefined
              ? Effect.map(refused(requestId, refusal), (result) => ({ _tag: "Finished", result, lost: false } as const))
              : Effect.flatMap(Effect.gen(function*() {
                // delivered again after this runner's entity was interrupted: the turn went on here
                const running = turns.known(requestId)
                if (Option.isSome(running)) return { _tag: "Finished", result: yield* running.value, lost: false } as const
                // delivered again: a runner started it and did not answer; unless the store has its commit,
                // it resumes from its checkpoint if it has one (`resume.ts`), or, with none and a store that
                // fences, runs again from the start (no call of it ran)
                const claimed = yield* claim(requestId)
                const stored = claimed.fresh ? undefined : yield* turns.outcome(requestId, sessionKey)
                const durable = stored === undefined || stored.lost
                  ? yield* resume.prepare(requestId, sessionKey, claimed, runner, undefined, epoch !== undefined)
                  : yield* resume.forget(requestId)
                if (durable === undefined) return { _tag: "Finished", result: yield* lost(requestId, stored?.result), lost: true } as const
                const { input, signature: _signature, nonce: _nonce, issuedAt: _issuedAt, key: _key, ...options } = request.payload
                const result = yield* turns.run(requestId, fenced(requestId, durable.turn(loop.turn(sessionKey, input, { ...options, checkpoint: durable.checkpoint }))))
                const resumed = durable.resumed()
                return { _tag: "Finished", result, lost: false, ...(resumed === undefined ? {} : { resumed }) } as const
              }), (finished) => referenced(requestId, finished))
          // a delivery that joined one under way gives its place up
          return Effect.ensuring(steps.once(requestId, place.run(Effect.flatMap(admission("Turn", requestId, request.payload), admitted))), place.pass)
        },
        Send: (request) => {
          const requestId = String(request.requestId)
          // its place in the session's lane, taken on arrival; its routed turns hold it until the last ends
          const place = lanes.take(sessionKey)
          return Stream.unwrap(Effect.map(admission("Send", requestId, request.payload), (refusal): Stream.Stream<SendProgress, SteeringQueueFull> => {
            if (refusal !== undefined) {
              // `Accepted` first: the caller of `send` returns on it, then gets the refusal as the turn's reply
              return Stream.concat(
                Stream.make({ _tag: "Accepted" } as const),
                Stream.fromEffect(Effect.map(refused(requestId, refusal), (result) => ({ _tag: "Replied", outbound: outboundOf(result), lost: false } as const)))
              )
            }
            /** After `Accepted` was acknowledged: the routed turns, or, if a runner started them before, the rest of them (`resume.ts`). */
            const claimed = routings.once(requestId, place.runStream(Stream.unwrap(Effect.map(claim(requestId), (claim): Stream.Stream<SendProgress, SteeringQueueFull> =>
              claim.fresh ? routed(requestId, claim.attempt, request.payload.content, undefined) : resumeRouted(requestId, request.payload.content, claim)))))
            const previous = request.lastSentChunkValue as Option.Option<SendProgress>
            if (Option.isSome(previous)) {
              // delivered again: replay a steering answer; otherwise its turns ran, or never started
              return previous.value._tag === "Steered" ? Stream.make(previous.value) : claimed
            }
            return Stream.unwrap(Effect.gen(function*() {
              if (yield* loop.activeTurn(sessionKey)) {
                const steered = yield* Effect.result(loop.injectSteering(sessionKey, request.payload.content))
                if (steered._tag === "Success") return Stream.make({ _tag: "Steered" } as const)
                // the turn ended meanwhile: the message runs as the next turn, as the router's backlog does
                if (steered.failure._tag === "SteeringQueueFull") return Stream.fail(steered.failure)
              }
              return Stream.concat(Stream.make({ _tag: "Accepted" } as const), claimed)
            }))
          })).pipe(Stream.ensuring(place.pass))
        },
        InjectSteering: ({ payload }) => loop.injectSteering(sessionKey, payload.message),
        InjectFollowUp: ({ payload }) => loop.injectFollowUp(sessionKey, payload.message),
        InterruptGraceful: ({ payload }) => loop.interruptGraceful(sessionKey, payload.hint),
        InterruptHard: () => loop.interruptHard(sessionKey),
        InterruptNow: () => loop.interruptNow(sessionKey),
        // only a running turn is steered here: a message for no turn goes through `Send`, so its reply reaches its client
        Steer: ({ payload }) =>
          Effect.flatMap(loop.activeTurn(sessionKey), (active): Effect.Effect<SteerAck, NoActiveTurn | SteeringQueueFull> =>
            active === undefined ? Effect.fail(new NoActiveTurn({ sessionKey })) : loop.steer(sessionKey, payload.message)),
        // the summary's commit is fenced like a turn's: a runner that lost the session cannot write it
        Compact: ({ payload }) => fenced(undefined, loop.compact(sessionKey, payload)),
        ActiveTurn: () => loop.activeTurn(sessionKey),
        Events: () =>
          Stream.unwrap(Effect.gen(function*() {
            const subscription = yield* bus.subscribe({ capacity: EVENTS_CAPACITY })
            // after subscribing: a resumed turn's `Resumed` may come twice, never not at all (clients drop the second)
            const resumed = yield* resume.running(sessionKey)
            return Stream.concat(
              Stream.make({ _tag: "Subscribed" } as const, ...resumed),
              Stream.filter(subscription.stream, (event) => event.sessionKey === sessionKey)
            )
          }))
      })
    }),
    { concurrency: "unbounded" }
  )
}))
