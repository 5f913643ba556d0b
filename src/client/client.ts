/**
 * The client of the loop's HTTP API: the typed endpoints (`api`, one method per route of
 * `server/Api.ts`), the common calls by name (`sessions.send`, `turns.wait`, `approvals.decide`),
 * and `events`, a stream of server-sent events that resumes after a cut from the last id it gave.
 */
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Sse from "effect/encoding/Sse"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as HttpApiClient from "effect/http-api/HttpApiClient"
import type { TurnResult } from "../domain/Turn.ts"
import { AgentLoopApi } from "../server/Api.ts"

/** Where the server is and how to get in. */
export interface Options {
  /** The server's origin, such as `http://127.0.0.1:4318`. */
  readonly baseUrl: string
  /** The bearer token. */
  readonly token: string | Redacted.Redacted<string>
  /** How long to wait between reconnects of `events`; default 250 ms. */
  readonly retryDelay?: Duration.Input
}

/** A frame of the event stream: an event (the loop's or the server's, as JSON) with its id, or a gap. */
export type EventFrame =
  | { readonly _tag: "Event"; readonly id: number; readonly event: { readonly _tag: string; readonly sessionKey?: string } & Record<string, unknown> }
  /** Events the server no longer had for this client: `overflow` (it read too slowly) or `replay` (gone from the buffer). */
  | { readonly _tag: "Gap"; readonly missed: number; readonly cause: "overflow" | "replay" }
  /** An approval of the session's stream (requested or resolved); not numbered: `approvals.list` has them after a reconnect. */
  | { readonly _tag: "Approval"; readonly event: { readonly _tag: string } & Record<string, unknown> }

/** The event stream ended or failed; `events` reconnects after it. */
export class Disconnected extends Data.TaggedError("Disconnected")<{ readonly cause?: unknown }> {}

const makeApi = (options: Options) =>
  HttpApiClient.make(AgentLoopApi, {
    baseUrl: options.baseUrl,
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(options.token))
  })

/** Makes the client. */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const api = yield* makeApi(options)
    const http = (yield* HttpClient.HttpClient).pipe(
      HttpClient.mapRequest(HttpClientRequest.bearerToken(options.token)),
      HttpClient.filterStatusOk
    )
    const delay = Duration.fromInputUnsafe(options.retryDelay ?? "250 millis")

    /** The frames after `after` (the last id given), reconnecting after every cut. */
    const events = (path: string, after?: number): Stream.Stream<EventFrame> => {
      let last = after
      const connect = () => Stream.unwrap(Effect.map(
        http.get(`${options.baseUrl}${path}`, { headers: last === undefined ? {} : { "last-event-id": String(last) } }),
        (response) => response.stream
      )).pipe(
        Stream.decodeText,
        Stream.pipeThroughChannel(Sse.decode()),
        Stream.map((event): EventFrame =>
          event.event === "gap"
            ? { _tag: "Gap", ...(JSON.parse(event.data) as { missed: number; cause: "overflow" | "replay" }) }
            : event.event === "approval"
            ? { _tag: "Approval", event: JSON.parse(event.data) }
            : { _tag: "Event", id: Number(event.id), event: JSON.parse(event.data) }
        ),
        Stream.tap((frame) => Effect.sync(() => {
          if (frame._tag === "Event") last = frame.id
        })),
        // a stream the server ended is a cut too: the next connection resumes after `last`
        Stream.concat(Stream.fail(new Disconnected({}))),
        Stream.mapError((cause) => cause instanceof Disconnected ? cause : new Disconnected({ cause }))
      )
      // each connection is made afresh, asking for what came after the last event given
      return Stream.suspend(connect).pipe(Stream.retry(Schedule.spaced(delay)), Stream.orDie)
    }

    /** A turn's result: asks the server to answer when the turn ends (30 s at a time), again until it has. */
    const wait = (turnId: string): Effect.Effect<TurnResult, unknown> =>
      api.turns.get({ params: { turnId }, query: { wait: 30 } }).pipe(
        Effect.flatMap((state) => state.status === "done" && state.result !== undefined ? Effect.succeed(state.result) : Effect.fail("running" as const)),
        Effect.retry({ while: (error) => error === "running" })
      )

    return {
      /** Every endpoint, typed by the API's declaration. */
      api,
      sessions: {
        list: api.sessions.list(),
        history: (key: string) => Effect.map(api.sessions.history({ params: { key } }), (answer) => answer.entries),
        remove: (key: string) => api.sessions.remove({ params: { key } }),
        /** Starts a turn; its id at once. */
        send: (key: string, message: string) => Effect.map(api.sessions.send({ params: { key }, payload: { message } }), (answer) => answer.turnId),
        steer: (key: string, message: string) => api.sessions.steer({ params: { key }, payload: { message } }),
        followUp: (key: string, message: string) => api.sessions.followUp({ params: { key }, payload: { message } }),
        /** The session's events after `after`, resumed after every cut. */
        events: (key: string, after?: number) => events(`/v1/sessions/${encodeURIComponent(key)}/events`, after)
      },
      turns: {
        get: (turnId: string) => api.turns.get({ params: { turnId }, query: {} }),
        wait,
        interrupt: (turnId: string, mode: "graceful" | "now" | "hard", hint?: string) =>
          api.turns.interrupt({ params: { turnId }, payload: { mode, ...(hint === undefined ? {} : { hint }) } })
      },
      approvals: {
        list: api.approvals.list(),
        decide: (id: string, decision: "allow" | "deny", reason?: string) =>
          api.approvals.decide({ params: { id }, payload: { decision, ...(reason === undefined ? {} : { reason }) } })
      },
      /** Every event after `after`, resumed after every cut. */
      events: (after?: number) => events("/v1/events", after)
    }
  })

/** The client of `make`. */
export type Client = Effect.Success<ReturnType<typeof make>>

/**
 * The client for Promise code, on `fetch`: each call a Promise, `events` an async iterable that
 * resumes after cuts. `close` stops every event stream it gave.
 */
export const connect = async (options: Options) => {
  const client = await Effect.runPromise(Effect.provide(make(options), FetchHttpClient.layer))
  const run = <A, E>(effect: Effect.Effect<A, E, HttpClient.HttpClient>): Promise<A> => Effect.runPromise(Effect.provide(effect, FetchHttpClient.layer))
  const iterate = (stream: Stream.Stream<EventFrame, never, HttpClient.HttpClient>): AsyncIterable<EventFrame> =>
    Stream.toAsyncIterable(Stream.provide(stream, FetchHttpClient.layer))
  return {
    sessions: {
      list: () => run(client.sessions.list),
      history: (key: string) => run(client.sessions.history(key)),
      remove: (key: string) => run(client.sessions.remove(key)),
      send: (key: string, message: string) => run(client.sessions.send(key, message)),
      steer: (key: string, message: string) => run(client.sessions.steer(key, message)),
      followUp: (key: string, message: string) => run(client.sessions.followUp(key, message)),
      events: (key: string, after?: number) => iterate(client.sessions.events(key, after))
    },
    turns: {
      get: (turnId: string) => run(client.turns.get(turnId)),
      wait: (turnId: string) => run(client.turns.wait(turnId)),
      interrupt: (turnId: string, mode: "graceful" | "now" | "hard", hint?: string) => run(client.turns.interrupt(turnId, mode, hint))
    },
    approvals: {
      list: () => run(client.approvals.list),
      decide: (id: string, decision: "allow" | "deny", reason?: string) => run(client.approvals.decide(id, decision, reason))
    },
    events: (after?: number) => iterate(client.events(after))
  }
}
