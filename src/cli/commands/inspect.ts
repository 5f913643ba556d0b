/**
 * `agent-loop ui` and the `--inspect PORT` flag of `chat` and `serve`: the inspector page served
 * on its own port (127.0.0.1 unless `--host` says otherwise), its URL with a fresh random token
 * printed, and opened in the browser unless `--no-open`.
 *
 * Loaded only by the commands that serve the page, so that no other command pays for the HTTP
 * server's code.
 */
import { createServer } from "node:http"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Inspector from "../../inspector/Inspector.ts"
import * as EventBusLive from "../../layers/EventBus.ts"
import type { EventBus } from "../../services/EventBus.ts"
import type { SessionStore } from "../../services/SessionStore.ts"
import type { AgentEvent } from "../../domain/Event.ts"
import { dataDir } from "../config/dataDir.ts"
import { readEvents } from "../output/eventsRead.ts"
import * as StoreChoice from "../sessions/storeChoice.ts"
import { fail } from "../terminal/failure.ts"
import { openBrowser } from "../terminal/openBrowser.ts"
import { Screen } from "../terminal/screen.ts"

/** Where the page listens. */
export interface InspectOptions {
  readonly port: number
  readonly host: string
  readonly open: boolean
  /** Recorded events to show as if seen live. */
  readonly events?: ReadonlyArray<AgentEvent>
  /** The cluster view's data (under `serve`). */
  readonly cluster?: Inspector.Options["cluster"]
}

/**
 * Serves the inspector over the store and bus of the context for the life of the scope, prints its
 * URL, and opens it unless told not to. Returns the URL.
 */
export const serveInspector = (options: InspectOptions): Effect.Effect<string, unknown, Scope.Scope | SessionStore | EventBus | Screen> =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const token = Inspector.makeToken()
    const context = yield* Layer.build(
      HttpRouter.serve(Inspector.layer({
        token,
        // `--host NAME`: the page is reached by that name too (the address it resolves to is known to the layer)
        hosts: [options.host],
        ...(options.events === undefined ? {} : { events: options.events }),
        ...(options.cluster === undefined ? {} : { cluster: options.cluster })
      }), { disableLogger: true, disableListenLog: true }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: options.port, host: options.host }))
      )
    ).pipe(Effect.catchTag("ServeError", (error) => fail(`inspector: cannot listen on ${options.host}:${options.port}: ${error.message}`)))
    const origin = HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
    const url = Inspector.url(origin, token)
    yield* screen.line(`agent-loop: inspector at ${url}`)
    if (options.open) openBrowser(url)
    return url
  })

/** The flags of `agent-loop ui`. */
export type UiFlags = StoreChoice.StoreFlags & {
  readonly port: number
  readonly host: string
  readonly open: boolean
  readonly events: ReadonlyArray<string>
}

/** `agent-loop ui`: the inspector over the store of the flags, until stopped. */
export const ui = (flags: UiFlags) =>
  Effect.gen(function*() {
    const choice = yield* StoreChoice.resolve(flags)
    const events = yield* readEvents(flags.events)
    return yield* Effect.scoped(
      serveInspector({ port: flags.port, host: flags.host, open: flags.open, events }).pipe(
        Effect.andThen(Effect.never),
        Effect.provide(Layer.merge(StoreChoice.layer(choice, dataDir()), EventBusLive.layerCapacity()))
      )
    )
  })

/** `--inspect PORT` of `chat` and `serve`: the page on 127.0.0.1 beside the command, not opened (the command owns the terminal). */
export const inspectBeside = (port: Option.Option<number>, cluster?: Inspector.Options["cluster"]) =>
  Option.isNone(port)
    ? Effect.void
    : Effect.asVoid(serveInspector({ port: port.value, host: "127.0.0.1", open: false, ...(cluster === undefined ? {} : { cluster }) }))
