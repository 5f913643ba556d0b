/**
 * `Server`: the loop as a service. `Server.layer` mounts the HTTP API (`Api.ts`: sessions, turns,
 * steering, follow-ups, interrupts, approvals, server-sent events with replay, models, tools, the
 * AI SDK's UI message stream for `useChat`, and `GET /openapi.json`) on an application's
 * `effect/http` router; `agent-loop serve` serves it on 127.0.0.1.
 *
 * Every route but `/openapi.json` needs `Authorization: Bearer TOKEN` (an empty 401 otherwise,
 * before anything else is looked at); a body over `maxBodyBytes` gets an empty 413; a body that
 * does not decode gets a 400 problem whose `errors` name the field; an unknown session a 404.
 * CORS is off unless `corsOrigins` names the origins that may call it.
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { HttpRouter } from "effect/http"
 * import { NodeHttpServer } from "@effect/platform-node"
 * import { createServer } from "node:http"
 * import { Server } from "effect-agent-loop"
 *
 * const token = Server.makeToken()
 * // needs the loop's services (AgentLoop, SessionStore, EventBus, ToolRegistry, LoopConfig)
 * const app = HttpRouter.serve(Server.layer({ token })).pipe(
 *   Layer.provide(NodeHttpServer.layer(createServer, { port: 4318, host: "127.0.0.1" }))
 * )
 * ```
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import * as ByteSize from "effect/ByteSize"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import * as HttpMiddleware from "effect/http/HttpMiddleware"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpApiError from "effect/http-api/HttpApiError"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import type * as Hook from "../domain/Hook.ts"
import { builtinModels } from "../domain/Models.ts"
import { AgentLoop } from "../services/AgentLoop.ts"
import { EventBus } from "../services/EventBus.ts"
import { EventJournal, type EventJournalShape } from "../services/EventJournal.ts"
import { LoopConfig } from "../services/LoopConfig.ts"
import { Secrets } from "../services/Secrets.ts"
import { SessionStore } from "../services/SessionStore.ts"
import { ToolRegistry } from "../services/ToolRegistry.ts"
import {
  AgentLoopApi,
  Authorization,
  type FollowUpAnswer,
  SessionNotFound,
  SteeringFull,
  type SteerAnswer,
  StoreFailed,
  TurnNotFound,
  TurnNotRunning
} from "./Api.ts"
import { Approvals } from "./approvals.ts"
import { makeChat } from "./chat.ts"
import { EventFeed, type FeedEvent, type Frame } from "./eventFeed.ts"
import * as FeedRecorder from "./feedRecorder.ts"
import { PausedTurns } from "./paused.ts"
import { pollJournal } from "./storeFollow.ts"
import { Turns } from "./turns.ts"

/** How the server is mounted. */
export interface Options {
  /** The bearer token every request must carry (see `makeToken`). */
  readonly token: Redacted.Redacted<string>
  /** The largest request body, in bytes; default 1 MiB. A larger one gets 413. */
  readonly maxBodyBytes?: number
  /** Origins allowed to call the API from a browser (CORS); default none, and CORS stays off. */
  readonly corsOrigins?: ReadonlyArray<string>
  /** Protocols served beside the API on the same router and token (`agent-loop serve` mounts A2A's). */
  readonly protocols?: ReadonlyArray<Protocol>
  /** Events kept for clients that reconnect (`Last-Event-ID`); default 10,000. */
  readonly replayEvents?: number
  /** Events one client may fall behind by before it is sent a `gap` event; default 10,000. */
  readonly clientBuffer?: number
  /**
   * Whether the server decides the tool calls that need approval (its hook on the loop); default
   * true. False for a loop whose turns run in other processes (a cluster client, which takes no
   * deciding hooks): the runners' own policy decides, and `GET /v1/approvals` stays empty.
   */
  readonly approvals?: boolean
  /**
   * How long a call that needs approval waits for a decision before it is denied (the approval
   * ends `timeout`); default the loop's `approvalTimeout` (60 s).
   */
  readonly approvalTimeout?: Duration.Input
  /**
   * Read a session's stream (`GET /v1/sessions/{key}/events`) from the store's journal every
   * interval, instead of following this process's own events: for a server whose sessions run in
   * other processes (a cluster's runners). Default: follow this process's `EventJournal`.
   */
  readonly pollJournal?: Duration.Input
}

/** The default largest request body: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/**
 * What the server hands a protocol served beside it: its token and body cap, and its approvals,
 * so that a tool call waits for one decision, taken through whichever door.
 */
export interface Shared {
  readonly token: Redacted.Redacted<string>
  readonly maxBodyBytes: number
  readonly approvals: Approvals
}

/** A protocol served beside the API: adds its routes to the router, for the server's scope. */
export type Protocol = (shared: Shared) => Effect.Effect<void, never, HttpRouter.HttpRouter | AgentLoop | SessionStore | EventBus | Scope.Scope>

/** A new random token: 32 bytes from the system's secure generator, URL-safe base64. */
export const makeToken = (): Redacted.Redacted<string> => Redacted.make(randomBytes(32).toString("base64url"))

const digest = (text: string) => createHash("sha256").update(text).digest()

/** Compares in constant time (of the digests), so the answer's timing tells nothing of the token. */
const sameToken = (expected: Buffer, given: string) => timingSafeEqual(expected, digest(given))

const tooLarge = HttpServerResponse.empty({ status: 413 })

/** The token check and the body cap, as the API's security middleware. */
const authorization = (options: Options) => {
  const expected = digest(Redacted.value(options.token))
  const cap = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  return Layer.succeed(Authorization, {
    bearer: (httpEffect, { credential }) =>
      Effect.gen(function*() {
        if (!sameToken(expected, Redacted.value(credential))) return yield* new HttpApiError.Unauthorized()
        const request = yield* HttpServerRequest.HttpServerRequest
        const length = Number(request.headers["content-length"] ?? 0)
        if (length > cap) return tooLarge
        // a body without a length (chunked) is cut at the cap while it is read
        return yield* httpEffect.pipe(
          Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(cap)),
          Effect.catchDefect((defect) => isTooLarge(defect) ? Effect.succeed(tooLarge) : Effect.die(defect))
        )
      })
  })
}

/** How long an approval waits for the feed to record what its turn published before it. */
const FEED_WAIT = Duration.seconds(2)

/**
 * The approval hook, asking only once the feed has recorded what the turn published before: the
 * request comes after the response with its call, and after the calls of the batch already started.
 */
const afterFeed = (hook: Hook.Hook, caughtUp: Effect.Effect<void>): Hook.Hook => ({
  approveTool: (input) =>
    // bounded: a feed that cannot catch up (its recorder gone) costs the order, never the question
    Effect.andThen(Effect.timeoutOption(caughtUp, FEED_WAIT), Effect.suspend(() => {
      const answer = hook.approveTool!(input)
      return Effect.isEffect(answer) ? answer : Effect.succeed(answer)
    }))
})

/** A body read cut at the cap, as the platform reports it. */
const isTooLarge = (defect: unknown): boolean => JSON.stringify(defect ?? null).includes("BodyTooLarge") || String(defect).includes("maxBytes")

/**
 * The API's routes on the application's `HttpRouter`, for the life of the router: it subscribes
 * to the event bus at once (lossless) and registers its approval hook on the loop.
 */
export const layer = (options: Options): Layer.Layer<never, never, HttpRouter.HttpRouter | AgentLoop | SessionStore | EventBus | ToolRegistry | LoopConfig> => {
  const handlers = Layer.unwrap(Effect.gen(function*() {
    const loop = yield* AgentLoop
    const store = yield* SessionStore
    const bus = yield* EventBus
    const tools = yield* ToolRegistry
    const config = yield* LoopConfig
    const secrets = yield* Secrets
    const journal = yield* Effect.serviceOption(EventJournal)
    const feed = new EventFeed(options.replayEvents ?? 10_000)
    const recorder = yield* FeedRecorder.start(bus, feed)
    // with a store that keeps paused turns (SQL), a turn waiting for approval outlives the server (`paused.ts`)
    const paused = options.approvals !== false && store.paused !== undefined ? new PausedTurns(store.paused) : undefined
    const approvals = new Approvals({ publish: (event) => feed.record(event), scrub: secrets.scrub, ...(paused === undefined ? {} : { durable: paused.durable }) })
    if (options.approvals !== false) yield* loop.registerHook(afterFeed(approvals.hook, recorder.caughtUp), {
        name: "server approvals",
        source: "server",
        ...(options.approvalTimeout === undefined ? {} : { timeout: options.approvalTimeout })
      })
    const poll = options.pollJournal === undefined ? undefined : Duration.fromInputUnsafe(options.pollJournal)
    const storeJournal = store.journal
    // where a session's stream is read: the store, polled, when sessions run elsewhere; else this process's journal
    const source: JournalSource | undefined = poll !== undefined && storeJournal !== undefined
      ? { last: storeJournal.last, follow: (key, after) => pollJournal(storeJournal, key, after ?? 0, poll) }
      : Option.getOrUndefined(journal)
    const turns = new Turns(loop, yield* FiberSet.make<void>(), undefined, paused)
    if (paused !== undefined) {
      // runs before the turns are interrupted (the last finalizer added runs first): a turn cut by the stop keeps its paused calls
      yield* Effect.addFinalizer(() => Effect.sync(() => paused.stop()))
      paused.continueTurn = (key, checkpoint) => Effect.asVoid(turns.resume(key, checkpoint))
      const calls = yield* paused.restore()
      for (const call of calls) approvals.restore(call.approval)
      yield* paused.continueDecided(calls)
    }
    const clientBuffer = options.clientBuffer ?? 10_000
    const chat = makeChat({ loop, feed, approvals, turns, clientBuffer, scrub: secrets.scrub })
    const storeFailed = (error: { readonly message: string }) => new StoreFailed({ message: secrets.scrub(error.message) })
    const existing = (key: string) =>
      store.log(key).pipe(
        Effect.mapError(storeFailed),
        Effect.flatMap((entries) => entries.length === 0 ? Effect.fail(new SessionNotFound({ sessionKey: key })) : Effect.succeed(entries))
      )
    const events = (request: HttpServerRequest.HttpServerRequest, filter: (event: FeedEvent) => boolean) =>
      eventStream(feed.frames({ lastId: lastEventId(request), buffer: clientBuffer, filter }), secrets.scrub)

    /** Steering, acknowledged by the loop: admitted to the running turn, or queued; never dropped. */
    const steer = (key: string, message: string): Effect.Effect<SteerAnswer, SteeringFull> =>
      loop.steer(key, message).pipe(
        Effect.map((ack): SteerAnswer =>
          ack._tag === "Admitted"
            ? { status: "admitted", turnId: ack.turnId, iteration: ack.iteration }
            : { status: "queued", reason: ack.reason, ...(ack.turnId === undefined ? {} : { turnId: ack.turnId }) }
        ),
        Effect.catchTag("SteeringQueueFull", () => Effect.fail(new SteeringFull({ sessionKey: key })))
      )
    /**
     * A follow-up: a turn of its own, after the session's running and waiting ones (the loop runs
     * a session's turns in order), so its id is known at once.
     */
    const followUp = (key: string, message: string): Effect.Effect<FollowUpAnswer> =>
      Effect.gen(function*() {
        const active = yield* loop.activeTurn(key)
        const turnId = yield* turns.start(key, message)
        return { status: active === undefined ? "started" : "queued", turnId }
      })

    const shared: Shared = { token: options.token, maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, approvals }
    yield* Effect.forEach(options.protocols ?? [], (protocol) => protocol(shared), { discard: true })

    return Layer.mergeAll(
      HttpApiBuilder.group(AgentLoopApi, "sessions", (h) =>
        h
          .handle("list", () =>
            Effect.map(Effect.mapError(store.list, storeFailed), (infos) =>
              infos.map((info) => ({
                sessionKey: info.sessionKey,
                ...(info.updatedAt === undefined ? {} : { updatedAt: info.updatedAt }),
                ...(info.messages === undefined ? {} : { messages: info.messages }),
                ...(info.turns === undefined ? {} : { turns: info.turns }),
                ...(info.preview === undefined ? {} : { preview: secrets.scrub(info.preview) })
              }))))
          .handle("history", ({ params }) => Effect.map(existing(params.key), (entries) => ({ sessionKey: params.key, entries: scrubDeep(entries, secrets.scrub) })))
          .handle("remove", ({ params }) => Effect.andThen(existing(params.key), Effect.mapError(store.remove(params.key), storeFailed)))
          .handle("send", ({ params, payload }) => Effect.map(turns.start(params.key, payload.message), (turnId) => ({ turnId })))
          .handle("steer", ({ params, payload }) => steer(params.key, payload.message))
          .handle("followUp", ({ params, payload }) => followUp(params.key, payload.message))
          .handle("events", ({ params, request }) =>
            source !== undefined
              ? Effect.map(
                sessionStream(source, feed, params.key, lastEventId(request)),
                (frames) => frameResponse(frames, secrets.scrub)
              ).pipe(Effect.mapError(storeFailed))
              : Effect.succeed(events(request, (event) => event.sessionKey === params.key)))),
      HttpApiBuilder.group(AgentLoopApi, "turns", (h) =>
        h
          .handle("get", ({ params, query }) =>
            Effect.flatMap(turns.awaitEnd(params.turnId, Duration.seconds(query.wait ?? 0)), (state) =>
              state === undefined ? Effect.fail(new TurnNotFound({ turnId: params.turnId })) : Effect.succeed(scrubDeep(state, secrets.scrub))))
          .handle("interrupt", ({ params, payload }) => {
            const state = turns.get(params.turnId)
            if (state === undefined) return Effect.fail(new TurnNotFound({ turnId: params.turnId }))
            if (state.status === "done") return Effect.fail(new TurnNotRunning({ turnId: params.turnId, status: state.result?.status ?? "done" }))
            const interrupt = payload.mode === "graceful"
              ? loop.interruptGraceful(state.sessionKey, payload.hint)
              : payload.mode === "now"
              ? loop.interruptNow(state.sessionKey)
              : loop.interruptHard(state.sessionKey)
            // a turn still queued behind another has nothing to interrupt yet
            return Effect.catchTag(interrupt, "NoActiveTurn", () => Effect.fail(new TurnNotRunning({ turnId: params.turnId, status: "queued" })))
          })),
      HttpApiBuilder.group(AgentLoopApi, "approvals", (h) =>
        h
          .handle("list", () => Effect.sync(() => approvals.list()))
          .handle("decide", ({ params, payload }) => approvals.decide(params.id, payload))),
      HttpApiBuilder.group(AgentLoopApi, "chat", (h) => h.handle("send", ({ payload }) => chat(payload))),
      HttpApiBuilder.group(AgentLoopApi, "server", (h) =>
        h
          .handle("events", ({ request }) => Effect.succeed(events(request, () => true)))
          .handle("models", () =>
            Effect.succeed({
              ...(config.model === undefined ? {} : { default: config.model }),
              models: builtinModels.map((model) => ({ name: model.id, provider: model.provider }))
            }))
          .handle("tools", () =>
            Effect.map(tools.list, (list) =>
              list.map((tool) => ({ name: tool.name, description: tool.description, requiresApproval: tool.requiresApproval === true })))))
    ).pipe(Layer.provide(Layer.mergeAll(authorization(options), HttpApiMiddleware.layerProblemDetails({ includeDetails: true }))))
  }))
  const api = HttpApiBuilder.layer(AgentLoopApi, { openapiPath: "/openapi.json" }).pipe(Layer.provide(handlers))
  const cors = options.corsOrigins !== undefined && options.corsOrigins.length > 0
    ? HttpRouter.middleware(HttpMiddleware.cors({
      allowedOrigins: options.corsOrigins,
      allowedHeaders: ["authorization", "content-type", "last-event-id"]
    }), { global: true })
    : Layer.empty
  return Layer.mergeAll(api, cors) as never
}

/** Where a session's journaled events are read: this process's `EventJournal`, or the store polled (`storeFollow.ts`). */
type JournalSource = Pick<EventJournalShape, "last" | "follow">

/**
 * A session's stream from its event journal: the `id:` of each event is its sequence number in the
 * session, kept beside the session's log, so a client resumes with `Last-Event-ID` across server
 * restarts for as long as the log is kept, and one that falls behind reads on from the store (the
 * journal is a cursor, not a buffer: no gap). Without `Last-Event-ID` it starts from now. The
 * server's approval events of the session come between them as `event: approval` frames without
 * an id (they are not journaled; `GET /v1/approvals` has them after a reconnect).
 */
const sessionStream = (journal: JournalSource, feed: EventFeed, sessionKey: string, lastId: number | undefined) =>
  Effect.map(lastId === undefined ? journal.last(sessionKey) : Effect.succeed(lastId), (after) =>
    Stream.merge(
      Stream.map(journal.follow(sessionKey, after), (item) => ({ _tag: "Journaled" as const, item })),
      feed.frames({ lastId: undefined, buffer: 1000, filter: (event) => event.sessionKey === sessionKey && event._tag.startsWith("Approval") }).pipe(
        Stream.flatMap((frame) => frame._tag === "Event" ? Stream.make({ _tag: "Approval" as const, event: frame.item.event }) : Stream.empty)
      )
    ).pipe(
      Stream.orDie,
      Stream.map((frame) =>
        frame._tag === "Journaled"
          ? `id: ${frame.item.seq}\ndata: ${JSON.stringify(frame.item.event)}\n\n`
          : `event: approval\ndata: ${JSON.stringify(frame.event)}\n\n`
      )
    ))

const lastEventId = (request: HttpServerRequest.HttpServerRequest): number | undefined => {
  const given = request.headers["last-event-id"] ?? new URL(request.url, "http://server.invalid").searchParams.get("lastEventId") ?? undefined
  const n = given === undefined ? NaN : Number(given)
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined
}

/** A value with every string scrubbed of the secrets known now. */
const scrubDeep = <A>(value: A, scrub: (text: string) => string): A => JSON.parse(scrub(JSON.stringify(value))) as A

const encoder = new TextEncoder()

/** A frame as the SSE wire carries it: events with their `id:`, gaps as `event: gap`. */
const frameText = (frame: Frame, scrub: (text: string) => string): string =>
  frame._tag === "Event"
    ? `id: ${frame.item.id}\ndata: ${scrub(JSON.stringify(frame.item.event))}\n\n`
    : `event: gap\ndata: ${JSON.stringify({ missed: frame.missed, cause: frame.cause })}\n\n`

/** The frames as a `text/event-stream` response; a comment every 15 s keeps proxies from closing an idle one. */
const eventStream = (frames: Stream.Stream<Frame>, scrub: (text: string) => string) =>
  frameResponse(Stream.map(frames, (frame) => frameText(frame, scrub)), scrub)

/** Text frames as a `text/event-stream` response, after a first comment that says the stream is live. */
const frameResponse = (frames: Stream.Stream<string>, _scrub: (text: string) => string) =>
  HttpServerResponse.stream(
    Stream.make(": connected\n\n").pipe(
      Stream.concat(frames),
      Stream.merge(Stream.tick("15 seconds").pipe(Stream.map(() => ": keep-alive\n\n")), { haltStrategy: "left" }),
      Stream.map((text) => encoder.encode(text))
    ),
    { contentType: "text/event-stream", headers: { "cache-control": "no-store", "x-accel-buffering": "no" } }
  )

