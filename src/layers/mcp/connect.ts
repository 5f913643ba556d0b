/**
 * One MCP server: started (stdio) or reached (Streamable HTTP), its protocol revision negotiated
 * (`negotiate.ts`), initialised and its tools listed, all within its start-up timeout on the
 * Effect Clock. Everything the server holds lives in a scope of its own, so a server that fails
 * is stopped at once without touching the others; the process of one that starts lives as long as
 * the caller's scope (closing it closes the server's stdin, then SIGTERM, then SIGKILL).
 */
import { Duration, Effect, Exit, Option, Redacted, Result, Schema, Scope } from "effect"
import { McpClient, type McpClientError, type McpSchema } from "effect/ai"
import { FetchHttpClient, HttpClient } from "effect/http"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { Secrets } from "../../services/Secrets.ts"
import type { McpServerConfig } from "./config.ts"
import { expandConfig } from "./expand.ts"
import { adapterFor, makeClient, negotiate, NEWEST_VERSION } from "./negotiate.ts"
import { observingSpawner, type StderrTail } from "./stdio.ts"

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
  /** The last lines of its stderr (stdio servers; empty otherwise). */
  readonly stderr: StderrTail | undefined
}

/** Options of a connection. */
export interface ConnectOptions {
  /** Bounds starting, initialising and listing, on the Effect Clock, unless the server's config says otherwise. Default 30 s. */
  readonly startupTimeout?: Duration.Input
  /** Where `${VAR}` references are looked up. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>
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

const inheritedEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const name of INHERITED_ENV) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  return env
}

type StdioConfig = Extract<McpServerConfig, { readonly type: "stdio" }>
type HttpConfig = Extract<McpServerConfig, { readonly type: "http" }>

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
  const cause = "cause" in reason && reason.cause instanceof Error ? reason.cause.message : undefined
  return cause === undefined || cause === reason.message ? reason.message : `${reason.message}: ${cause}`
}

/** `message`, then the server's last stderr lines, indented, when it wrote any. */
export const withStderr = (message: string, stderr: StderrTail | undefined): string => {
  const lines = stderr?.lines().filter((line) => line.trim() !== "") ?? []
  return lines.length === 0 ? message : `${message}\n${lines.map((line) => `  stderr: ${line}`).join("\n")}`
}

/** Waits (briefly, on the Clock) for a dead server's last stderr lines to be read. */
export const settle = (stderr: StderrTail | undefined) =>
  stderr === undefined ? Effect.void : Effect.timeoutOption(stderr.ended, "1 second").pipe(Effect.asVoid)

/** A transport to a stdio server, observed as `stdio.ts` says; the process belongs to the current scope. */
const stdioTransport = (config: StdioConfig, spawner: ChildProcessSpawner.ChildProcessSpawner["Service"]) =>
  McpClient.stdio({ command: commandOf(config), protocol: adapterFor(NEWEST_VERSION), maxMessageBytes: MAX_MESSAGE_CHARS }).pipe(
    Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, spawner),
    Effect.flatMap(negotiate),
    Effect.map((negotiated) => negotiated.transport)
  )

/**
 * A transport to a Streamable HTTP server. Its revision travels in a header of every request, so
 * when the server chose an older one the probing session is closed and a transport for that
 * revision starts afresh.
 */
const httpTransport = (config: HttpConfig) =>
  Effect.gen(function*() {
    const open = (version: typeof NEWEST_VERSION) =>
      McpClient.http({ url: config.url, protocol: adapterFor(version), headers: reveal(config.headers) })
    // The probe's session is the connection when the server speaks the newest revision.
    const probeScope = yield* Scope.fork(yield* Effect.scope, "sequential")
    const negotiated = yield* open(NEWEST_VERSION).pipe(Effect.flatMap(negotiate), Scope.provide(probeScope))
    if (negotiated.version === NEWEST_VERSION) return negotiated.transport
    yield* Scope.close(probeScope, Exit.void)
    return yield* open(negotiated.version)
  }).pipe(Effect.provideServiceEffect(HttpClient.HttpClient, thirdPartyClient))

/**
 * The context's `HttpClient` (or `fetch` when there is none), sending no trace context: a
 * third-party server learns nothing about the caller's tracing.
 */
const thirdPartyClient: Effect.Effect<HttpClient.HttpClient> = Effect.serviceOption(HttpClient.HttpClient).pipe(
  Effect.flatMap((client) =>
    Option.isSome(client)
      ? Effect.succeed(client.value)
      : Effect.provide(Effect.gen(function*() {
        return yield* HttpClient.HttpClient
      }), FetchHttpClient.layer)
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
    const expanded = expandConfig(given, options.env ?? process.env)
    if (Result.isFailure(expanded)) {
      const { field, variable } = expanded.failure
      return yield* fail(`cannot start: environment variable ${variable} is not set (used in ${field})`)
    }
    const config = expanded.success
    const secrets = yield* Secrets
    secrets.add(Object.values(config.type === "stdio" ? config.env ?? {} : config.headers ?? {}))
    if (config.type === "sse") {
      return yield* fail("cannot start: the legacy HTTP+SSE transport (\"type\": \"sse\") is not supported; use \"type\": \"http\" (Streamable HTTP)")
    }
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
    const start = Effect.gen(function*() {
      const transport = plan._tag === "stdio"
        ? yield* stdioTransport(plan.config, plan.observed.spawner)
        : yield* httpTransport(plan.config)
      const client = yield* makeClient(transport, timeout)
      return { client, tools: yield* client.listTools() }
    }).pipe(
      Scope.provide(own),
      Effect.mapError((error) => fail(`failed to start: ${describe(error)}`)),
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () => Effect.fail(fail(`did not start within ${Duration.format(timeout)}`))
      })
    )
    const started = yield* Effect.exit(start)
    if (Exit.isFailure(started)) {
      yield* Scope.close(own, started)
      yield* settle(stderr)
      return yield* Effect.failCause(started.cause).pipe(
        Effect.mapError((error) => new McpError({ server, message: secrets.scrub(withStderr(error.message, stderr)) }))
      )
    }
    return { server, config, client: started.value.client, tools: started.value.tools, stderr }
  })
