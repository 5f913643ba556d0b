/**
 * `agent-loop serve` without a cluster database: the loop's HTTP API (`Server.layer`) served
 * in-process on `--host`/`--port` (loopback by default), over the sessions of the usual store and
 * the loop built from the usual flags and settings, until SIGTERM or Ctrl-C.
 *
 * Every request needs the bearer token (`serverToken.ts`); a generated one is printed once, with
 * the file it is kept in. CORS stays off unless `--cors-origin` names origins. Tool calls that need
 * approval wait for a decision over the API (`POST /v1/approvals/{id}`), within `approvalTimeout`.
 *
 * Loaded only by `serve`, so that no other command pays for the HTTP server's code.
 */
import { createServer } from "node:http"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import packageJson from "../../../package.json" with { type: "json" }
import * as A2a from "../../protocols/a2a/server.ts"
import * as Server from "../../server/Server.ts"
import type { AgentLoop } from "../../services/AgentLoop.ts"
import type { EventBus } from "../../services/EventBus.ts"
import type { LoopConfig } from "../../services/LoopConfig.ts"
import type { SessionStore } from "../../services/SessionStore.ts"
import type { ToolRegistry } from "../../services/ToolRegistry.ts"
import * as OutputSchema from "../output/outputSchema.ts"
import type { ProviderKeys } from "../providers/providerKeys.ts"
import * as App from "../runtime/app.ts"
import * as Settings from "../settings/settings.ts"
import { fail } from "../terminal/failure.ts"
import { Screen } from "../terminal/screen.ts"
import type { ServeFlags } from "./serve.ts"
import * as ServerToken from "./serverToken.ts"

/** The flags only the API uses. */
export interface ApiFlags {
  readonly tokenFile: Option.Option<string>
  readonly corsOrigin: ReadonlyArray<string>
  /** With `--database-url`: the port the runner serves the API on, for the whole cluster. */
  readonly apiPort: Option.Option<number>
  readonly apiHost: string
}

/**
 * Serves `Server.layer` over the loop's services in `context` on `host:port` for the scope, and
 * says where, with where its token comes from. `server` adds options (a cluster runner's).
 */
export const mount = (
  context: Context.Context<AgentLoop | SessionStore | EventBus | ToolRegistry | LoopConfig>,
  options: { readonly token: ServerToken.ServerToken; readonly corsOrigins: ReadonlyArray<string>; readonly host: string; readonly port: number; readonly model: string; readonly what: string },
  server: Partial<Server.Options> = {}
) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const say = (text: string) => Effect.flatMap(Clock.currentTimeMillis, (now) => screen.line(`${new Date(now).toISOString()} ${text}`))
    // "localhost" may resolve to an address other than loopback's IPv4 one: bind what it means
    const host = options.host === "localhost" ? "127.0.0.1" : options.host
    const { token } = options
    const served = yield* Layer.build(
      HttpRouter.serve(Server.layer({ ...server, token: token.token, corsOrigins: options.corsOrigins, protocols: [A2a.protocol({ version: packageJson.version, outputSchema: OutputSchema.fromJson })] }), { disableLogger: true, disableListenLog: true }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: options.port, host })),
        Layer.provide(Layer.succeedContext(context))
      )
    ).pipe(Effect.catchTag("ServeError", (error) => fail(`serve: cannot listen on ${host}:${options.port}: ${error.message}`)))
    const origin = HttpServer.formatAddress(Context.get(served, HttpServer.HttpServer).address)
    yield* say(`agent-loop: API at ${origin}/v1 (OpenAPI at ${origin}/openapi.json), ${options.what} (model ${options.model})`)
    yield* say(`agent-loop: A2A agent at ${origin}/a2a (its card at ${origin}${A2a.CARD_PATH})`)
    yield* say(
      token.source === "environment"
        ? `agent-loop: the token is ${ServerToken.TOKEN_ENV}'s`
        : token.source === "generated"
        ? `agent-loop: token (printed this once; kept in ${token.path}): ${Redacted.value(token.token)}`
        : `agent-loop: the token is in ${token.path}`
    )
    if (options.corsOrigins.length > 0) yield* say(`agent-loop: browsers may call it from ${options.corsOrigins.join(", ")}`)
  })

/** Serves the API until the process is stopped. */
export const serveApi = (flags: ServeFlags & ApiFlags) =>
  Effect.gen(function*() {
    const settings = yield* Settings.resolve(flags)
    const token = yield* ServerToken.resolve({ tokenFile: flags.tokenFile, dataDir: settings.dataDir })
    yield* Settings.announce(settings)
    return yield* Effect.scoped(Effect.gen(function*() {
      const local = yield* Layer.build(App.layer(settings))
      yield* mount(
        local,
        { token, corsOrigins: flags.corsOrigin, host: flags.host, port: flags.port, model: settings.model, what: "sessions" },
        // --approval-timeout (or the settings') bounds the wait for a decision over the API and A2A
        settings.approvalTimeout === undefined ? {} : { approvalTimeout: settings.approvalTimeout }
      )
      return yield* Effect.never
    }))
  }) satisfies Effect.Effect<void, unknown, Screen | App.Platform | ProviderKeys>
