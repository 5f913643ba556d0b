/**
 * One MCP server: started (stdio) or reached (Streamable HTTP, or HTTP+SSE: `sse.ts`), its protocol revision negotiated
 * (`negotiate.ts`), initialised and its tools listed, all within its start-up timeout on the
 * Effect Clock. Everything the server holds lives in a scope of its own, so a server that fails
 * is stopped at once without touching the others; the process of one that starts lives as long as
 * the caller's scope (closing it closes the server's stdin, then SIGTERM, then SIGKILL).
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as McpClient from "effect/ai/McpClient"
import * as McpClientError from "effect/ai/McpClientError"
import type * as McpSchema from "effect/ai/McpSchema"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as ChildProcess from "effect/process/ChildProcess"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import { Secrets } from "../../services/Secrets.ts"
import { connectionFailure } from "../../domain/connectionFailure.ts"
import type { McpServerConfig } from "./config.ts"
import { readEnvFile } from "./envFile.ts"
import { expandConfig } from "./expand.ts"
import { adapterFor, makeClient, negotiate, NEWEST_VERSION } from "./negotiate.ts"
import { sseTransport, suggestsSse } from "./sse.ts"
import { observingSpawner, type StderrTail } from "./stdio.ts"
import { authorizedClient } from "./oauth/client.ts"
import type { OAuthStore } from "./oauth/store.ts"

/** An MCP server could not be started, initialised or listed; `server` is its configured name. */
export class McpError extends Schema.TaggedError<McpError>()("McpError", {
  server: Schema.String,
  message: Schema.String
}) {}

/** A connected server and the tools it listed at start-up. */
export interface McpConnection {
  readonly server: string
  /** Its configuration, `${VAR}`s expanded. */
  readonly config: McpServerConfig
  readonly client: McpClient.McpClient
  readonly tools: ReadonlyArray<McpSchema.Tool>
  /** The MCP revision agreed on (`2025-06-18`, …). */
  readonly version: string
  /** How it is reached: `"sse"` also for an `"http"` server that speaks only HTTP+SSE. */
  readonly transport: "stdio" | "http" | "sse"
  /** The last lines of its stderr (stdio servers; empty otherwise). */
  readonly stderr: StderrTail | undefined
}

/** Options of a connection. */
export interface ConnectOptions {
  /** Bounds starting, initialising and listing, on the Effect Clock, unless the server's config says otherwise. Default 30 s. */
  readonly startupTimeout?: Duration.Input
  /** Where `${VAR}` references are looked up. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** What `${workspaceFolder}` stands for. Default the current directory. */
  readonly workspace?: string
  /** OAuth for remote servers: where their authorizations are kept (`oauth/store.ts`). */
  readonly oauth?: OAuthOptions
}

/** OAuth for remote servers, as the MCP authorization specification has it. */
export interface OAuthOptions {
  /** The authorizations `login` stored; a server with one sends its token, refreshed as needed. */
  readonly store: OAuthStore
  /** What a server that answers 401 tells the user to do, given its name. Default: nothing more. */
  readonly loginHint?: (server: string) => string
}

/** The default start-up timeout: long enough for `npx` to start a cached package, short enough to notice a dead one. */
export const DEFAULT_STARTUP_TIMEOUT = Duration.seconds(30)

/** The largest message accepted from a server, in characters (the transport's own default). */
const MAX_MESSAGE_CHARS = 16 * 1024 * 1024

/**
 * What a server inherits from this process, as the MCP SDKs do: enough to find programs and a home
 * directory, and nothing else, so that the agent's own API keys do not leak into third-party
 * servers. Everything else comes from the server's `env`.
 */
const INHERITED_ENV = [
  "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR", "LANG",
  "APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE"
]

/**
 * And what a program needs to reach the network as its parent does (a server started with
 * `npx -y` downloads itself first): proxies (in any case), CA bundles, and npm's registry, proxy
 * and CA settings. Not npm's auth settings (`npm_config_//host/:_authToken`): those are secrets.
 */
const NETWORK_ENV = new Set([
  "http_proxy", "https_proxy", "no_proxy", "all_proxy",
  "node_extra_ca_certs", "node_use_env_proxy", "ssl_cert_file", "ssl_cert_dir", "requests_ca_bundle", "curl_ca_bundle"
])
const NPM_NETWORK = /^npm_config_(?:(?:@[\w.-]+:)?registry|proxy|https_proxy|http_proxy|noproxy|no_proxy|cafile|ca|strict_ssl|userconfig|globalconfig|cache|prefer_offline|offline)$/i

/** Whether a variable of this process is passed to stdio servers. */
export const isInherited = (name: string): boolean =>
  INHERITED_ENV.includes(name) || NETWORK_ENV.has(name.toLowerCase()) || NPM_NETWORK.test(name)

const inheritedEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && isInherited(name)) env[name] = value
  }
  return env
}

type StdioConfig = Extract<McpServerConfig, { readonly type: "stdio" }>
type HttpConfig = Extract<McpServerConfig, { readonly type: "http" | "sse" }>

const reveal = (record: Readonly<Record<string, Redacted.Redacted<string>>> | undefined) =>
  Object.fromEntries(Object.entries(record ?? {}).map(([key, value]) => [key, Redacted.value(value)]))

/** The command that starts a configured stdio server. */
export const commandOf = (config: StdioConfig): ChildProcess.Command =>
  ChildProcess.make(config.command, config.args ?? [], {
    env: { ...inheritedEnv(), ...reveal(config.env) },
    extendEnv: false,
    ...(config.cwd === undefined ? {} : { cwd: config.cwd })
  })

/** The reason of a client failure, with the underlying cause when it says more (ENOENT, exit code). */
export const describe = (error: McpClientError.McpClientError): string => {
  const reason = error.reason
  // only over HTTP (a target): a stdio server's broken pipe is no network failure
  const failure = connectionFailure(error)
  if (failure?.target !== undefined) return `${reason.message.replace(/: Transport error \(.*\)$/, "")}: ${failure.text}`
  const cause = "cause" in reason && reason.cause instanceof Error ? reason.cause.message : undefined
  return cause === undefined || cause === reason.message ? reason.message : `${reason.message}: ${cause}`
}

/** `message`, then the server's last stderr (and stray stdout) lines, indented, when it wrote any. */
export const withStderr = (message: string, stderr: StderrTail | undefined): string => {
  const lines = stderr?.lines().filter((line) => line.replace(/^std(?:err|out): /, "").trim() !== "") ?? []
  return lines.length === 0 ? message : `${message}\n${lines.map((line) => `  ${line}`).join("\n")}`
}

/** Waits (briefly, on the Clock) for a dead server's last stderr lines to be read. */
export const settle = (stderr: StderrTail | undefined) =>
  stderr === undefined ? Effect.void : Effect.timeoutOption(stderr.ended, "1 second").pipe(Effect.asVoid)

/** A transport to a stdio server, observed as `stdio.ts` says; the process belongs to the current scope. */
const stdioTransport = (config: Extract<McpServerConfig, { readonly type: "stdio" }>, spawner: ChildProcessSpawner.ChildProcessSpawner["Service"]) =>
  McpClient.stdio({ command: commandOf(config), protocol: adapterFor(NEWEST_VERSION), maxMessageBytes: MAX_MESSAGE_CHARS }).pipe(
    Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, spawner),
    Effect.flatMap(negotiate),
    Effect.map((negotiated) => ({ ...negotiated, kind: "stdio" as const }))
  )

/** Over HTTP+SSE, negotiated on the one stream (no version travels in a header there). */
const legacyTransport = (config: HttpConfig) =>
  sseTransport({ url: config.url, headers: reveal(config.headers), maxMessageChars: MAX_MESSAGE_CHARS, protocol: adapterFor(NEWEST_VERSION) }).pipe(
    Effect.flatMap(negotiate),
    Effect.map((negotiated) => ({ ...negotiated, kind: "sse" as const }))
  )

/**
 * A transport to a Streamable HTTP server. Its revision travels in a header of every request, so
 * when the server chose an older one the probing session is closed and a transport for that
 * revision starts afresh. A server that answers the first POST with a 4xx (other than 401/403)
 * may speak only the older HTTP+SSE transport: that is tried next, as the specification says.
 */
const streamableTransport = (config: HttpConfig) =>
  Effect.gen(function*() {
    const open = (version: typeof NEWEST_VERSION) =>
      McpClient.http({ url: config.url, protocol: adapterFor(version), headers: reveal(config.headers) })
    // The probe's session is the connection when the server speaks the newest revision.
    const probeScope = yield* Scope.fork(yield* Effect.scope, "sequential")
    const probe = yield* open(NEWEST_VERSION).pipe(Effect.flatMap(negotiate), Scope.provide(probeScope), Effect.result)
    if (Result.isFailure(probe)) {
      yield* Scope.close(probeScope, Exit.void)
      if (!suggestsSse(probe.failure)) return yield* probe.failure
      return yield* legacyTransport(config).pipe(
        Effect.mapError((error) =>
          new McpClientError.McpClientError({
            reason: new McpClientError.TransportError({
              description: `Streamable HTTP: ${describe(probe.failure)}; HTTP+SSE: ${describe(error)}`
            })
          })
        )
      )
    }
    const negotiated = probe.success
    if (negotiated.version === NEWEST_VERSION) return { ...negotiated, kind: "http" as const }
    yield* Scope.close(probeScope, Exit.void)
    return { version: negotiated.version, transport: yield* open(negotiated.version), kind: "http" as const }
  })

/** Whether the config gives its own `Authorization` header (OAuth then stays out of the way). */
const hasAuthorization = (config: HttpConfig) => Object.keys(config.headers ?? {}).some((name) => name.toLowerCase() === "authorization")

/**
 * An `"http"` server (Streamable HTTP, or HTTP+SSE after a 4xx) or an `"sse"` one, with its stored
 * OAuth authorization applied when there is one and the config sets no `Authorization` itself.
 */
const httpTransport = (config: HttpConfig, oauth: OAuthOptions | undefined) =>
  (config.type === "sse" ? legacyTransport(config) : streamableTransport(config)).pipe(
    Effect.provideServiceEffect(
      HttpClient.HttpClient,
      oauth === undefined || hasAuthorization(config)
        ? thirdPartyClient
        : Effect.gen(function*() {
          return yield* authorizedClient(yield* thirdPartyClient, config.url, oauth.store, yield* Secrets)
        })
    )
  )

/** A 401 (or 403 asking for a scope): the server wants authorization. */
const wantsAuthorization = (error: McpClientError.McpClientError) =>
  error.reason._tag === "HttpError" && (error.reason.status === 401 || (error.reason.status === 403 && /insufficient_scope/.test(error.reason.wwwAuthenticate ?? "")))

/**
 * The context's `HttpClient` (or `fetch` when there is none), sending no trace context: a
 * third-party server learns nothing about the caller's tracing. `fetch` follows no redirect, as
 * the CLI's client does not: a server's redirect would carry its configured headers, credentials
 * included, to wherever it points.
 */
export const thirdPartyClient: Effect.Effect<HttpClient.HttpClient> = Effect.serviceOption(HttpClient.HttpClient).pipe(
  Effect.flatMap((client) =>
    Option.isSome(client)
      ? Effect.succeed(client.value)
      : Effect.provide(Effect.gen(function*() {
        return yield* HttpClient.HttpClient
      }), FetchHttpClient.layer).pipe(
        Effect.map(HttpClient.transform((effect) => Effect.provideService(effect, FetchHttpClient.RequestInit, { redirect: "manual" })))
      )
  ),
  Effect.map(HttpClient.transform((effect) => Effect.provideService(effect, HttpClient.TracerPropagationEnabled, false)))
)

/**
 * Starts the server, negotiates, initialises and lists its tools within the start-up timeout. The
 * server's `env` and `headers` values are registered with `Secrets` first. On failure everything
 * the server holds is released before the `McpError` (with its last stderr lines) is returned.
 */
export const connect = (
  server: string,
  given: McpServerConfig,
  options: ConnectOptions = {}
): Effect.Effect<McpConnection, McpError, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.gen(function*() {
    const fail = (message: string) => new McpError({ server, message: `MCP server "${server}" ${message}` })
    const expanded = expandConfig(given, options.env ?? process.env, options.workspace === undefined ? {} : { workspaceFolder: options.workspace })
    if (Result.isFailure(expanded)) {
      const { field, input, variable } = expanded.failure
      return yield* fail(
        input === undefined
          ? `cannot start: environment variable ${variable} is not set (used in ${field})`
          : `cannot start: it asks for input "${input}" (used in ${field}), and there is no editor to prompt in: set ${variable} to answer it`
      )
    }
    let config = expanded.success
    if (config.type === "stdio" && config.envFile !== undefined) {
      const read = readEnvFile(config.envFile, options.workspace ?? process.cwd())
      if (typeof read === "string") return yield* fail(`cannot start: ${read}`)
      // the server's own env wins over its envFile's
      const fromFile = Object.fromEntries(Object.entries(read).map(([name, value]) => [name, Redacted.make(value)]))
      config = { ...config, env: { ...fromFile, ...config.env } }
    }
    const secrets = yield* Secrets
    secrets.add(Object.values(config.type === "stdio" ? config.env ?? {} : config.headers ?? {}))
    const timeout = Duration.fromInputUnsafe(config.startupTimeout ?? options.startupTimeout ?? DEFAULT_STARTUP_TIMEOUT)
    const outer = yield* Effect.scope
    const own = yield* Scope.fork(outer, "sequential")
    // The observer exists before the process, so even a server that dies at once leaves its stderr.
    const plan = config.type === "stdio"
      ? {
        _tag: "stdio",
        config,
        observed: yield* observingSpawner({
          inner: yield* ChildProcessSpawner.ChildProcessSpawner,
          server,
          readerScope: outer,
          maxMessageChars: MAX_MESSAGE_CHARS,
          scrub: secrets.scrub
        })
      } as const
      : { _tag: "http", config } as const
    const stderr = plan._tag === "stdio" ? plan.observed.stderr : undefined
    let timedOut = false
    const start = Effect.gen(function*() {
      const negotiated = plan._tag === "stdio"
        ? yield* stdioTransport(plan.config, plan.observed.spawner)
        : yield* httpTransport(plan.config, options.oauth)
      const client = yield* makeClient(negotiated.transport, timeout)
      return { client, tools: yield* client.listTools(), version: negotiated.version, kind: negotiated.kind }
    }).pipe(
      Scope.provide(own),
      Effect.mapError((error) => {
        const hint = plan._tag === "http" && wantsAuthorization(error) ? options.oauth?.loginHint?.(server) : undefined
        return fail(`failed to start: ${describe(error)}${hint === undefined ? "" : `: ${hint}`}`)
      }),
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () =>
          Effect.suspend(() => {
            timedOut = true
            return Effect.fail(fail(`did not start within ${Duration.format(timeout)}`))
          })
      })
    )
    const started = yield* Effect.exit(start)
    if (Exit.isFailure(started)) {
      yield* Scope.close(own, started)
      yield* settle(stderr)
      // a process whose transport had not failed was alive: waiting for something (a download, the network, input)
      const stillRunning = (message: string) =>
        !timedOut || stderr === undefined ? message : `${message}: it was still running (now stopped); raise startupTimeout or MCP_TIMEOUT if it needs longer; ${
          withStderr("", stderr) === "" ? "it printed nothing" : "it printed the lines below"
        }`
      return yield* Effect.failCause(started.cause).pipe(
        Effect.mapError((error) => new McpError({ server, message: secrets.scrub(withStderr(stillRunning(error.message), stderr)) }))
      )
    }
    const { client, kind, tools, version } = started.value
    return { server, config, client, tools, version, transport: kind, stderr }
  })
