/**
 * One MCP server over stdio: spawned as a child process and spoken to with `effect/ai`'s
 * `McpClient` (protocol 2025-11-25, line-delimited JSON-RPC). The process lives as long as the
 * scope: closing it closes the server's stdin, then escalates to SIGTERM and SIGKILL.
 */
import { Duration, Effect, Schema, type Scope } from "effect"
import { McpClient, type McpClientError, McpProtocol, type McpSchema } from "effect/ai"
import { ChildProcess, type ChildProcessSpawner } from "effect/process"
import type { McpServerConfig } from "./config.ts"

/** An MCP server could not be started, initialised or listed; `server` is its configured name. */
export class McpError extends Schema.TaggedError<McpError>()("McpError", {
  server: Schema.String,
  message: Schema.String
}) {}

/** A connected server and the tools it listed at start-up. */
export interface McpConnection {
  readonly server: string
  readonly client: McpClient.McpClient
  readonly tools: ReadonlyArray<McpSchema.Tool>
}

/** Options of a connection. */
export interface ConnectOptions {
  /** Bounds initialisation and `tools/list` on the Effect Clock. Default 60 seconds. */
  readonly startTimeout?: Duration.Input
}

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

/** The command that starts a configured server. */
export const commandOf = (config: McpServerConfig): ChildProcess.Command =>
  ChildProcess.make(config.command, config.args ?? [], {
    env: { ...inheritedEnv(), ...config.env },
    extendEnv: false,
    ...(config.cwd === undefined ? {} : { cwd: config.cwd })
  })

/** The reason of a client failure, with the underlying cause when it says more (ENOENT, exit code). */
export const describe = (error: McpClientError.McpClientError): string => {
  const reason = error.reason
  const cause = "cause" in reason && reason.cause instanceof Error ? reason.cause.message : undefined
  return cause === undefined || cause === reason.message ? reason.message : `${reason.message}: ${cause}`
}

/** Starts the server, initialises the session and lists its tools; all owned by the scope. */
export const connect = (
  server: string,
  config: McpServerConfig,
  options: ConnectOptions = {}
): Effect.Effect<McpConnection, McpError, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.gen(function*() {
    const timeout = options.startTimeout ?? Duration.seconds(60)
    const client = yield* McpClient.make({ name: "effect-agent-loop", version: "0.1.0", timeout }).pipe(
      Effect.provideServiceEffect(
        McpClient.Transport,
        McpClient.stdio({ command: commandOf(config), protocol: McpProtocol.v2025_11_25 })
      )
    )
    const tools = yield* client.listTools()
    return { server, client, tools }
  }).pipe(
    Effect.mapError((error) => new McpError({ server, message: `MCP server "${server}" failed to start: ${describe(error)}` }))
  )
