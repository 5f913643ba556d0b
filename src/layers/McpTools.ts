/**
 * `McpTools`: the tools of MCP servers (stdio and Streamable HTTP), added to the `ToolRegistry` for
 * the life of the layer.
 *
 * Each configured server is started (or reached) and spoken to with `effect/ai`'s `McpClient`,
 * in the newest protocol revision both sides know (2025-11-25 down to 2024-11-05); its tools are
 * listed once at start-up and registered as ordinary tools:
 *
 * - **name**: the MCP tool name as the server gives it. When two servers offer the same name, or a
 *   tool of that name is already registered (built-ins), it becomes `server__tool` so that nothing is
 *   shadowed; `prefix: "always"` qualifies every name. Characters providers reject are replaced by `_`.
 * - **which**: all but the server's `deny` list, narrowed by the `enable` filter (`server__tool`,
 *   `server__*`) when one is given.
 * - **approval**: required unless the server marks the tool `readOnlyHint: true`, or its config
 *   says otherwise (`approve`, `allow`): a model cannot write, delete or send through an MCP server
 *   without the user's say.
 * - **parameters**: the server's `inputSchema` is what the model sees; arguments only have to be a
 *   JSON object here, and the server validates them.
 * - **readOnly**: exactly when the annotations say `readOnlyHint: true`, so such calls run in
 *   parallel groups; anything else is mutating. **idempotent** (run again when a crash cut the call
 *   short and its turn resumes) when they say `readOnlyHint: true` or `idempotentHint: true` (the
 *   specification reads the latter only on tools that are not read-only).
 * - **result**: text parts joined, other parts summarised, cut at `maxOutputBytes` with a note;
 *   `isError: true` is an error result the model sees; a JSON-RPC error, a timeout or a dead server
 *   is a `ToolError` naming the server and the tool (and the server's last stderr lines).
 *
 * A server that cannot start, crashes at start, speaks an unknown protocol or does not answer
 * within its start-up timeout is logged as one warning and skipped; the other servers and the
 * built-in tools go on. Closing the layer's scope unregisters the tools and stops the servers.
 *
 * @example
 * ```ts
 * import { NodeServices } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { McpTools, ToolRegistryLive } from "effect-agent-loop"
 *
 * const tools = McpTools.layerFromConfigFile("./mcp.json").pipe(
 *   Layer.provideMerge(ToolRegistryLive.layer([])),
 *   Layer.provide(NodeServices.layer)
 * )
 * ```
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import type { InvalidConfig } from "../domain/errors.ts"
import { ToolError } from "../domain/errors.ts"
import * as Message from "../domain/Message.ts"
import * as Tool from "../domain/Tool.ts"
import { Secrets } from "../services/Secrets.ts"
import { ToolRegistry } from "../services/ToolRegistry.ts"
import { decodeServers, loadConfig, type McpServerConfigInput, type McpServers, type McpSources } from "./mcp/config.ts"
import { connect, describe, McpError, type McpConnection, type OAuthOptions, settle, withStderr } from "./mcp/connect.ts"
import { capOutput, toToolOutput } from "./mcp/content.ts"
import { isDenied, isEnabled, requiresApproval } from "./mcp/policy.ts"
import { type McpSettings, resolveSettings, type SettingsOptions } from "./mcp/settings.ts"

export {
  findWorkspaceConfig,
  loadConfig,
  loadConfigWithOrigins,
  McpConfigFile,
  McpServerConfig,
  type McpServerConfigInput,
  type McpServerOrigin,
  McpServers,
  type McpSources,
  WORKSPACE_CONFIG,
  WORKSPACE_CONFIGS
} from "./mcp/config.ts"
export { connect, isInherited, type McpConnection, McpError, type OAuthOptions } from "./mcp/connect.ts"
export { OAuthError } from "./mcp/oauth/authServer.ts"
export { login, type LoginOptions } from "./mcp/oauth/login.ts"
export { fileStore as oauthFileStore, memoryStore as oauthMemoryStore, OAuthEntry, type OAuthStore, OAuthStoreError } from "./mcp/oauth/store.ts"
export { inputVariable } from "./mcp/expand.ts"
export { SUPPORTED_VERSIONS } from "./mcp/negotiate.ts"
export { matchesPattern, qualifiedName } from "./mcp/policy.ts"

/** Options of the MCP layers. */
export interface McpToolsOptions extends SettingsOptions {
  /** `"on-collision"` (default): `server__tool` only when a name is taken; `"always"`: every tool. */
  readonly prefix?: "on-collision" | "always"
  /**
   * Only the tools these patterns name are registered: `server__tool`, `server__*` (`*` matches any
   * run of characters). Absent: every tool. An empty list registers none.
   */
  readonly enable?: ReadonlyArray<string>
  /** `"warn"` (default): a server that fails to start is logged and skipped; `"fail"`: the whole call fails. */
  readonly onServerFailure?: "warn" | "fail"
  /** How the `enable` filter is named in the warning about a pattern that matches no tool (the CLI: `--tools`). Default `enable`. */
  readonly enableName?: string
  /**
   * OAuth for remote servers: the store of their authorizations (`OAuthStore.fileStore`,
   * filled by `McpOAuth.login`); a server with one sends its access token and refreshes it.
   */
  readonly oauth?: OAuthOptions
}

/** An MCP tool needs nothing from the context: it closes over its server's connection. */
export type McpTool = Tool.Tool<never>

const MAX_NAME = 64

const sanitise = (name: string): string => name.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, MAX_NAME)

/** The arguments of an MCP call: any JSON object; the server checks it against its own schema. */
const Arguments = Schema.Record(Schema.String, Schema.Unknown)

const toTool = (
  connection: McpConnection,
  descriptor: McpConnection["tools"][number],
  name: string,
  settings: McpSettings
): McpTool => {
  const config = connection.config
  const toolTimeout = config.toolTimeout ?? settings.toolTimeout
  const maxOutputBytes = config.maxOutputBytes ?? settings.maxOutputBytes
  const failed = (reason: string) =>
    `MCP server "${connection.server}" tool "${descriptor.name}" ${reason}`
  return Tool.make({
    name,
    mcp: { server: connection.server, tool: descriptor.name },
    description: descriptor.description ?? descriptor.title ?? "",
    parameters: Arguments,
    jsonSchema: descriptor.inputSchema,
    readOnly: descriptor.annotations?.readOnlyHint === true,
    // MCP: `idempotentHint` is meaningful only when not read-only; a call that changes nothing is idempotent
    idempotent: descriptor.annotations?.readOnlyHint === true || descriptor.annotations?.idempotentHint === true,
    requiresApproval: requiresApproval(config, descriptor),
    execute: (args) =>
      connection.client.callTool({ tool: descriptor, arguments: args }, { timeout: toolTimeout }).pipe(
        Effect.map((result) => {
          const output = capOutput(toToolOutput(result, settings.maxImageBytes), maxOutputBytes)
          return { ...output, content: Message.mapStrings(output.content, settings.scrub) }
        }),
        Effect.catch((error) =>
          Effect.gen(function*() {
            const reason = error.reason
            if (reason._tag === "TimeoutError") {
              return yield* new ToolError({ message: failed(`did not answer within ${Duration.format(toolTimeout)}`) })
            }
            // A server that died: its last words say why.
            const dead = reason._tag === "TransportError" || reason._tag === "ClosedError"
            if (dead) yield* settle(connection.stderr)
            const message = failed(`failed: ${describe(error)}`)
            return yield* new ToolError({ message: settings.scrub(dead ? withStderr(message, connection.stderr) : message) })
          })
        )
      )
  })
}

/**
 * The tools of connected servers, filtered and named as described in the module doc. `taken`
 * holds names already in use (the registry's); a name that stays ambiguous even when qualified
 * fails with `McpError`.
 */
export const toolsOf = (
  connections: ReadonlyArray<McpConnection>,
  settings: McpSettings,
  options: { readonly taken?: ReadonlySet<string>; readonly prefix?: "on-collision" | "always"; readonly enable?: ReadonlyArray<string> } = {}
): Effect.Effect<ReadonlyArray<McpTool>, McpError> =>
  Effect.gen(function*() {
    const taken = options.taken ?? new Set<string>()
    const offered = connections.map((connection) => ({
      connection,
      tools: connection.tools.filter((tool) =>
        !isDenied(connection.config, tool) && isEnabled(options.enable, connection.server, tool.name)
      )
    }))
    const counts = new Map<string, number>()
    for (const { tools } of offered) {
      for (const tool of tools) counts.set(sanitise(tool.name), (counts.get(sanitise(tool.name)) ?? 0) + 1)
    }
    const used = new Set(taken)
    const out: Array<McpTool> = []
    for (const { connection, tools } of offered) {
      for (const descriptor of tools) {
        const plain = sanitise(descriptor.name)
        const qualify = options.prefix === "always" || (counts.get(plain) ?? 0) > 1 || taken.has(plain)
        const name = qualify ? sanitise(`${connection.server}__${descriptor.name}`) : plain
        if (used.has(name)) {
          return yield* new McpError({
            server: connection.server,
            message: `MCP server "${connection.server}": tool name "${name}" is already in use`
          })
        }
        used.add(name)
        out.push(toTool(connection, descriptor, name, settings))
      }
    }
    return out
  })

/** The patterns of `enable` that name no tool of the connected servers. */
export const unmatched = (
  enable: ReadonlyArray<string> | undefined,
  connections: ReadonlyArray<Pick<McpConnection, "server" | "tools">>
): ReadonlyArray<string> =>
  (enable ?? []).filter((pattern) =>
    !connections.some((connection) => connection.tools.some((tool) => isEnabled([pattern], connection.server, tool.name)))
  )

/** `message` with "; skipped" after its first line (the server's stderr lines follow it). */
const skipped = (message: string) => {
  const [first, ...rest] = message.split("\n")
  return [`${first}; skipped`, ...rest].join("\n")
}

/**
 * Starts every (decoded) server concurrently and returns the tools of those that started; the
 * processes live as long as the scope. A server that fails is a warning (or, with
 * `onServerFailure: "fail"`, the failure). A bad `MCP_TIMEOUT`/`MCP_TOOL_TIMEOUT` is an `InvalidConfig`.
 */
export const connectAll = (
  servers: McpServers,
  options: McpToolsOptions & { readonly taken?: ReadonlySet<string> } = {}
): Effect.Effect<ReadonlyArray<McpTool>, McpError | InvalidConfig, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.gen(function*() {
    const settings = yield* resolveSettings(options, (yield* Secrets).scrub)
    const enabled = Object.entries(servers).filter(([, config]) => config.disabled !== true)
    const results = yield* Effect.forEach(
      enabled,
      ([name, config]) =>
        Effect.result(connect(name, config, {
          startupTimeout: settings.startupTimeout,
          ...(options.env ? { env: options.env } : {}),
          ...(options.workspace ? { workspace: options.workspace } : {}),
          ...(options.oauth ? { oauth: options.oauth } : {})
        })),
      { concurrency: "unbounded" }
    )
    const connections: Array<McpConnection> = []
    for (const result of results) {
      if (result._tag === "Success") connections.push(result.success)
      else if (options.onServerFailure === "fail") return yield* result.failure
      else yield* Effect.logWarning(skipped(result.failure.message))
    }
    // a filter pattern that names nothing is most likely a typo: say so (unless its server failed, which was said)
    const failed = new Set(enabled.filter((_, i) => results[i]!._tag === "Failure").map(([name]) => name))
    for (const pattern of unmatched(options.enable, connections)) {
      if (![...failed].some((server) => pattern.startsWith(`${server}__`))) {
        yield* Effect.logWarning(`${options.enableName ?? "enable"} pattern "${pattern}" matches no MCP tool`)
      }
    }
    return yield* toolsOf(connections, settings, options)
  })

/** `connectAll` over the `mcpServers` record as written; a bad entry fails with `InvalidConfig` naming the field. */
export const tools = (
  servers: Readonly<Record<string, McpServerConfigInput>>,
  options: McpToolsOptions & { readonly taken?: ReadonlySet<string> } = {}
): Effect.Effect<
  ReadonlyArray<McpTool>,
  McpError | InvalidConfig,
  Scope.Scope | ChildProcessSpawner.ChildProcessSpawner
> => Effect.flatMap(decodeServers(servers), (decoded) => connectAll(decoded, options))

/** Registers the tools of the servers `load` gives, for the life of the layer. */
const register = <E, R>(load: Effect.Effect<McpServers, E, R>, options: McpToolsOptions) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const servers = yield* load
    const registry = yield* ToolRegistry
    const taken = new Set((yield* registry.list).map((tool) => tool.name))
    yield* registry.register(yield* connectAll(servers, { ...options, taken }))
  }))

/** Adds the tools of `servers` (the `mcpServers` record) to the registry for the life of the layer. */
export const layer = (
  servers: Readonly<Record<string, McpServerConfigInput>>,
  options: McpToolsOptions = {}
): Layer.Layer<never, McpError | InvalidConfig, ToolRegistry | ChildProcessSpawner.ChildProcessSpawner> =>
  register(decodeServers(servers), options)

/**
 * `layer` over config files and a workspace's `.mcp.json` (see `loadConfig`): the one entry point
 * for a host such as the CLI, which decides whether the workspace is trusted enough to pass.
 */
export const layerFromSources = (
  sources: McpSources,
  options: McpToolsOptions = {}
): Layer.Layer<
  never,
  McpError | InvalidConfig,
  ToolRegistry | ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem
> => register(loadConfig(sources), options)

/** `layer` over a `{"mcpServers": {...}}` JSON file; a bad file fails with `InvalidConfig` naming the field. */
export const layerFromConfigFile = (
  path: string,
  options: McpToolsOptions = {}
): Layer.Layer<
  never,
  McpError | InvalidConfig,
  ToolRegistry | ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem
> => layerFromSources({ files: [path] }, options)
