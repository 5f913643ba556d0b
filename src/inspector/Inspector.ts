/**
 * `Inspector`: a web page over the session store and the event bus that shows what the agent did
 * (sessions, conversations, turn timelines) and streams live turns into it. An application mounts
 * `Inspector.layer` on its own `effect/http` router; `agent-loop ui` and `--inspect` serve it on
 * 127.0.0.1.
 *
 * The only way in is the token: in the page's URL (`?token=`) the first time, after which the
 * page's script keeps it in the tab and sends it in a header (`X-Agent-Loop-Token`) for every
 * request of data; the page alone may be opened again by a cookie of this instance's that does not
 * hold the token (`access.ts`: cookies reach every port of a host). A request without the token, or
 * with another, gets 403 and nothing else; one naming another host than this server's gets 421.
 *
 * @example
 * ```ts
 * import { Inspector } from "effect-agent-loop"
 *
 * const token = Inspector.makeToken()
 * // Mount at /inspector on the application's router (it needs the loop's SessionStore and EventBus)
 * const routes = Inspector.layer({ token, prefix: "/inspector" })
 * const open = Inspector.url("http://127.0.0.1:8080", token, "/inspector")
 * ```
 */
import { randomBytes } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type { AgentEvent } from "../domain/Event.ts"
import type { SessionEntry } from "../domain/SessionLog.ts"
import { EventBus } from "../services/EventBus.ts"
import { Secrets, type SecretsShape } from "../services/Secrets.ts"
import { SessionStore } from "../services/SessionStore.ts"
import * as Access from "./access.ts"
import * as Calls from "./calls.ts"
import * as Find from "./find.ts"
import * as Model from "./model.ts"
import * as Page from "./page.ts"
import { type Numbered, Recorder } from "./recorder.ts"
import { deepScrub } from "./scrub.ts"

/** Runners and sessions in flight, for the cluster view. */
export interface ClusterView {
  readonly runners: ReadonlyArray<{ readonly address: string; readonly healthy: boolean; readonly lastHeartbeat?: number }>
  readonly sessions: ReadonlyArray<{ readonly sessionKey: string; readonly runner?: string }>
}

/** How the inspector is mounted. */
export interface Options {
  /** The secret that opens the page (see `makeToken`). */
  readonly token: Redacted.Redacted<string>
  /** Where it is mounted on the router, such as `/inspector`; default the root. */
  readonly prefix?: string
  /** Events kept for pages that reconnect (`Last-Event-ID`); default 10,000. */
  readonly replayEvents?: number
  /**
   * Events a live page may fall behind by (sent but not yet taken by its connection); default
   * 10,000. A page further behind is disconnected, and reconnects from the replay buffer.
   */
  readonly liveBacklog?: number
  /** Turns whose events are kept for their timelines; default 1,000. */
  readonly keptTurns?: number
  /** Events recorded earlier (an events file), kept as if seen live: their turns get timelines with times. */
  readonly events?: ReadonlyArray<AgentEvent>
  /** The cluster view's data, when the application runs in a cluster. */
  readonly cluster?: Effect.Effect<ClusterView, unknown>
  /**
   * More `Host` header values to answer besides the loopback names (`127.0.0.1`, `localhost`,
   * `[::1]`) and the address the server listens on: a name alone (at the server's port) or
   * `name:port` (behind a proxy). A request naming any other host gets 421 (DNS rebinding).
   */
  readonly hosts?: ReadonlyArray<string>
}

export { cookieName, TOKEN_HEADER } from "./access.ts"

/** The largest page of sessions or messages a request can ask for. */
export const MAX_PAGE = 1000

/** A new random token: 32 bytes from the system's secure generator, URL-safe base64. */
export const makeToken = (): Redacted.Redacted<string> => Redacted.make(randomBytes(32).toString("base64url"))

/** The URL that opens the page: `origin` (such as `http://127.0.0.1:4317`), the prefix, and the token. */
export const url = (origin: string, token: Redacted.Redacted<string>, prefix = ""): string =>
  `${origin}${normalize(prefix)}/?token=${encodeURIComponent(Redacted.value(token))}`

const normalize = (prefix: string): string => prefix.replace(/\/+$/, "")

export { exportHtml, type ExportOptions } from "./exportHtml.ts"

const forbidden = HttpServerResponse.text("Forbidden\n", { status: 403 })
const misdirected = HttpServerResponse.text("Misdirected request: this inspector answers only at its own address\n", { status: 421 })
const notFound = HttpServerResponse.text("Not found\n", { status: 404 })
const badRequest = (message: string) => HttpServerResponse.text(`${message}\n`, { status: 400 })

const securityHeaders = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY"
}

const number = (text: string | null, fallback: number, max = Number.MAX_SAFE_INTEGER): number => {
  const n = text === null ? fallback : Number(text)
  return Number.isSafeInteger(n) && n >= 0 ? Math.min(n, max) : fallback
}

/**
 * The inspector's routes on the application's `HttpRouter`, for the life of the router. It
 * subscribes to the event bus at once (lossless), so turns that run from then on have timelines.
 */
export const layer = (options: Options): Layer.Layer<never, never, HttpRouter.HttpRouter | SessionStore | EventBus> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const router = yield* HttpRouter.HttpRouter
    const store = yield* SessionStore
    const bus = yield* EventBus
    const secrets = yield* Secrets
    const recorder = new Recorder({ replay: Math.max(1, options.replayEvents ?? 10_000), turns: Math.max(1, options.keptTurns ?? 1_000) })
    for (const event of options.events ?? []) recorder.record(event)
    const subscription = yield* bus.subscribe({ strategy: "lossless" })
    yield* subscription.stream.pipe(Stream.runForEach((event) => Effect.sync(() => recorder.record(event))), Effect.forkScoped)
    const prefix = normalize(options.prefix ?? "")
    const access = Access.make(options.token)
    const hostAllowed = Access.hostCheck(options.hosts ?? [], yield* listeningAddress)
    const page = Page.html({ title: "agent-loop inspector" })
    const json = (value: unknown) => HttpServerResponse.json(deepScrub(value, secrets.scrub), { headers: securityHeaders })
    const frame = frames(secrets)

    const logOf = (key: string): Effect.Effect<ReadonlyArray<SessionEntry>, unknown> => store.log(key)
    const finder = Find.makeFinder()

    const api = (segments: ReadonlyArray<string>, query: URLSearchParams, request: HttpServerRequest.HttpServerRequest) => {
      const [what, ...rest] = segments
      switch (what) {
        case "sessions":
          return Effect.flatMap(store.list, (infos) => {
            const usage = recorder.usageBySession()
            const rows = infos.map((info): Model.SessionRow => {
              const used = usage.get(info.sessionKey)
              return used === undefined ? info : { ...info, usage: used }
            })
            // full-text and filters first (reading logs only when the query needs them), then one page, newest first
            return Effect.flatMap(finder.find(recorder.withLive(rows), query.get("q") ?? "", Find.filtersOf(query), logOf), (found) =>
              json(Model.sessionPage(found, "", number(query.get("offset"), 0), number(query.get("limit"), 50, MAX_PAGE))))
          })
        case "session":
          if (rest.length !== 1) return Effect.succeed(notFound)
          return Effect.flatMap(logOf(rest[0]!), (entries) => {
            const offset = number(query.get("offset"), 0)
            const limit = number(query.get("limit"), 200, MAX_PAGE)
            const page = Model.conversation(rest[0]!, entries, recorder.sessionTurns(rest[0]!), offset, limit)
            return json({ ...page, calls: Calls.callsOn(entries, offset, offset + limit, recorder.byTurn(), rest[0]!) })
          })
        case "timeline": {
          if (rest.length !== 2) return Effect.succeed(notFound)
          const [key, turnId] = rest as [string, string]
          const recorded = Find.inFlight(Model.timelineOfEvents(turnId, recorder.byTurn()), Date.now())
          // a recorded turn's calls are found in the log, for their details (a sub-turn's are not there)
          if (recorded !== undefined) return Effect.flatMap(logOf(key), (entries) => json(Calls.locate(recorded, entries)))
          const index = Model.logTurnIndex(turnId)
          if (index === undefined) return Effect.succeed(notFound)
          return Effect.flatMap(logOf(key), (entries) => {
            const timeline = Model.timelineOfLog(key, entries, index)
            return timeline === undefined ? Effect.succeed(notFound) : json(timeline)
          })
        }
        case "events":
          return Effect.succeed(events(recorder, lastEventId(request, query), frame, Math.max(1, options.liveBacklog ?? 10_000)))
        case "cluster":
          return options.cluster === undefined ? json({}) : Effect.flatMap(options.cluster, json)
        default:
          return Effect.succeed(notFound)
      }
    }

    const handle = (request: HttpServerRequest.HttpServerRequest) => {
      if (!hostAllowed(request.headers["host"])) return Effect.succeed(misdirected)
      const target = new URL(request.url, "http://inspector.invalid")
      const viaQuery = access.query(target.searchParams.get("token"))
      // the data needs the token itself, in a header; the query and the cookie open the page only
      const viaHeader = access.header(request.headers)
      if (!viaQuery && !viaHeader && !access.cookie(request.cookies)) return Effect.succeed(forbidden)
      if (!target.pathname.startsWith(`${prefix}/`)) return Effect.succeed(HttpServerResponse.redirect(`${prefix}/${target.search}`))
      let segments: Array<string>
      try {
        segments = target.pathname.slice(prefix.length + 1).split("/").map(decodeURIComponent)
      } catch {
        return Effect.succeed(badRequest("bad path"))
      }
      if (segments.length === 1 && segments[0] === "") {
        const response = HttpServerResponse.html(page).pipe(
          HttpServerResponse.setHeaders({ ...securityHeaders, "content-security-policy": Page.livePolicy })
        )
        return Effect.succeed(viaQuery ? HttpServerResponse.setHeader(response, "set-cookie", access.setCookie(`${prefix}/`)) : response)
      }
      if (segments[0] !== "api") return Effect.succeed(notFound)
      if (!viaHeader) return Effect.succeed(forbidden)
      return api(segments.slice(1), target.searchParams, request).pipe(
        Effect.catch((error) => Effect.succeed(HttpServerResponse.text(`${secrets.scrub(String((error as { message?: unknown }).message ?? error))}\n`, { status: 500 })))
      )
    }
    // `PREFIX/*` also matches the bare prefix (which redirects to PREFIX/); the root needs "/" itself
    if (prefix === "") yield* router.add("GET", "/", handle)
    yield* router.add("GET", `${prefix}/*` as HttpRouter.PathInput, handle)
  }))

/** Where the server this is mounted on listens, when it has a TCP address (not under a bare web handler). */
const listeningAddress: Effect.Effect<Access.Listening | undefined> = Effect.map(
  Effect.serviceOption(HttpServer.HttpServer),
  (server) => {
    if (Option.isNone(server)) return undefined
    try {
      const url = new URL(HttpServer.formatAddress(server.value.address))
      return { hostname: url.hostname, port: url.port }
    } catch {
      return undefined
    }
  }
)

const lastEventId = (request: HttpServerRequest.HttpServerRequest, query: URLSearchParams): number | undefined => {
  const given = request.headers["last-event-id"] ?? query.get("lastEventId") ?? undefined
  const n = given === undefined ? NaN : Number(given)
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined
}

const encoder = new TextEncoder()

/**
 * An event as a server-sent event, scrubbed once for every page that receives it (the same
 * recorded item goes to each), and again only when secrets became known since.
 */
const frames = (secrets: SecretsShape) => {
  const made = new WeakMap<Numbered, { readonly secrets: number; readonly text: string }>()
  return (item: Numbered): string => {
    const known = made.get(item)
    if (known !== undefined && known.secrets === secrets.size()) return known.text
    const text = `id: ${item.id}\ndata: ${JSON.stringify(deepScrub(item.event, secrets.scrub))}\n\n`
    made.set(item, { secrets: secrets.size(), text })
    return text
  }
}

/**
 * The live events as server-sent events, each with its number as `id`. A page that reconnects
 * with `Last-Event-ID` first gets a `reset` event if some events after it had already left the
 * buffer (or the id is from an earlier server), then the buffered events after it; a new page gets
 * only what happens from now on. A comment every 15
 * seconds keeps proxies from closing an idle connection. A page that falls `backlog` events behind
 * (it stopped reading) is disconnected rather than buffered for without end: its browser reconnects
 * with `Last-Event-ID` and catches up from the replay buffer, or is told to reload.
 */
const events = (recorder: Recorder, lastId: number | undefined, frame: (item: Numbered) => string, backlog: number) => {
  const body = Stream.callback<string>((queue) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        // an id past the last one comes from a page of an earlier server: it starts afresh, told to reload
        const stale = lastId !== undefined && lastId > recorder.lastId
        // listen first, then replay: nothing recorded in between is missed, and ids dedupe the overlap
        let sent = lastId === undefined || stale ? recorder.lastId : lastId
        const send = (item: Numbered) => {
          if (item.id <= sent) return
          sent = item.id
          if (!Queue.offerUnsafe(queue, frame(item))) {
            stop()
            Queue.endUnsafe(queue)
          }
        }
        const stop = recorder.listen(send)
        Queue.offerUnsafe(queue, ": connected\n\n")
        if (stale) Queue.offerUnsafe(queue, `event: reset\ndata: {}\n\n`)
        else if (lastId !== undefined) {
          const replay = recorder.since(lastId)
          if (replay.gap) Queue.offerUnsafe(queue, `event: reset\ndata: {}\n\n`)
          for (const item of replay.events) send(item)
        }
        return stop
      }),
      (stop) => Effect.sync(stop)
    ), { bufferSize: backlog + 3, strategy: "dropping" }
  ).pipe(Stream.merge(Stream.tick("15 seconds").pipe(Stream.map(() => ": keep-alive\n\n")), { haltStrategy: "left" }))
  return HttpServerResponse.stream(Stream.map(body, (text) => encoder.encode(text)), {
    contentType: "text/event-stream",
    headers: { ...securityHeaders, connection: "keep-alive" }
  })
}
