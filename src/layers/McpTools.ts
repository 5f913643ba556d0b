/**
 * `McpTools`: the tools of MCP servers (stdio), added to the `ToolRegistry` for the life of the layer.
 *
 * Each configured server is started as a child process and spoken to with `effect/ai`'s
 * `McpClient`; its tools are listed once at start-up and registered as ordinary tools:
 *
 * - **name**: the MCP tool name as the server gives it. When two servers offer the same name, or a
 *   tool of that name is already registered (built-ins), it becomes `server__tool` so that nothing is
 *   shadowed; `prefix: "always"` qualifies every name. Characters providers reject are replaced by `_`.
 * - **parameters**: the server's `inputSchema` is what the model sees; arguments only have to be a
 *   JSON object here, and the server validates them.
 * - **readOnly**: exactly when the tool's annotations say `readOnlyHint: true`, so such calls run in
 *   parallel groups; anything else is mutating.
 * - **result**: text parts joined, other parts summarised; `isError: true` is an error result the
 *   model sees; a JSON-RPC error or a dead server is a `ToolError` naming the server and the tool.
 *
 * Closing the layer's scope unregisters the tools and stops the servers (stdin closed, then SIGTERM).
 *
 * @example
 * ```ts
 * import { NodeServices } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { McpTools, ToolRegistry } from "effect-agent-loop"
 *
 * const tools = McpTools.layerFromConfigFile("./mcp.json").pipe(
 *   Layer.provideMerge(ToolRegistry.layer([])),
 *   Layer.provide(NodeServices.layer)
 * )
 * ```
 */
import { Effect, FileSystem, Layer, Schema, type Scope } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import { ConfigError, ToolError } from "../domain/errors.ts"
import * as Tool from "../domain/Tool.ts"
import { ToolRegistry } from "../services/ToolRegistry.ts"
import { decodeFile, decodeServers, type McpServerConfigInput, type McpServers } from "./mcp/config.ts"
import { connect, type ConnectOptions, describe, McpError, type McpConnection } from "./mcp/connect.ts"
import { toToolOutput } from "./mcp/content.ts"

export { McpConfigFile, McpServerConfig, type McpServerConfigInput, McpServers } from "./mcp/config.ts"
export { connect, type McpConnection, McpError } from "./mcp/connect.ts"

/** Options of the MCP layers. */
export interface McpToolsOptions extends ConnectOptions {
  /** `"on-collision"` (default): `server__tool` only when a name is taken; `"always"`: every tool. */
  readonly prefix?: "on-collision" | "always"
}

/** An MCP tool needs nothing from the context: it closes over its server's connection. */
export type McpTool = Tool.Tool<never>

const MAX_NAME = 64

const sanitise = (name: string): string => name.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, MAX_NAME)

/** The arguments of an MCP call: any JSON object; the server checks it against its own schema. */
const Arguments = Schema.Record(Schema.String, Schema.Unknown)

const toTool = (connection: McpConnection, descriptor: McpConnection["tools"][number], name: string): McpTool =>
  Tool.make({
    name,
    description: descriptor.description ?? descriptor.title ?? "",
    parameters: Arguments,
    jsonSchema: descriptor.inputSchema,
    readOnly: descriptor.annotations?.readOnlyHint === true,
    execute: (args) =>
      connection.client.callTool({ tool: descriptor, arguments: args }).pipe(
        Effect.map(toToolOutput),
        Effect.mapError((error) =>
          new ToolError({
            message: `MCP server "${connection.server}" tool "${descriptor.name}" failed: ${describe(error)}`
          })
        )
      )
  })

/**
 * The tools of connected servers, named as described in the module doc. `taken` holds names already
 * in use (the registry's); a name that stays ambiguous even when qualified fails with `McpError`.
 */
export const toolsOf = (
  connections: ReadonlyArray<McpConnection>,
  taken: ReadonlySet<string> = new Set(),
  prefix: "on-collision" | "always" = "on-collision"
): Effect.Effect<ReadonlyArray<McpTool>, McpError> =>
  Effect.gen(function*() {
    const counts = new Map<string, number>()
    for (const connection of connections) {
      for (const tool of connection.tools) {
        const name = sanitise(tool.name)
        counts.set(name, (counts.get(name) ?? 0) + 1)
      }
    }
    const used = new Set(taken)
    const tools: Array<McpTool> = []
    for (const connection of connections) {
      for (const descriptor of connection.tools) {
        const plain = sanitise(descriptor.name)
        const qualify = prefix === "always" || (counts.get(plain) ?? 0) > 1 || taken.has(plain)
        const name = qualify ? sanitise(`${connection.server}__${descriptor.name}`) : plain
        if (used.has(name)) {
          return yield* new McpError({
            server: connection.server,
            message: `MCP server "${connection.server}": tool name "${name}" is already in use`
          })
        }
        used.add(name)
        tools.push(toTool(connection, descriptor, name))
      }
    }
    return tools
  })

/** Starts every (decoded) server concurrently and returns their tools; the processes live as long as the scope. */
export const connectAll = (
  servers: McpServers,
  options: McpToolsOptions & { readonly taken?: ReadonlySet<string> } = {}
): Effect.Effect<ReadonlyArray<McpTool>, McpError, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.forEach(Object.entries(servers), ([name, config]) => connect(name, config, options), { concurrency: "unbounded" })
    .pipe(Effect.flatMap((connections) => toolsOf(connections, options.taken, options.prefix)))

/** `connectAll` over the `mcpServers` record as written; a bad entry fails with `ConfigError` naming the field. */
export const tools = (
  servers: Readonly<Record<string, McpServerConfigInput>>,
  options: McpToolsOptions & { readonly taken?: ReadonlySet<string> } = {}
): Effect.Effect<
  ReadonlyArray<McpTool>,
  McpError | ConfigError,
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
): Layer.Layer<never, McpError | ConfigError, ToolRegistry | ChildProcessSpawner.ChildProcessSpawner> =>
  register(decodeServers(servers), options)

/** `layer` over a `{"mcpServers": {...}}` JSON file; a bad file fails with `ConfigError` naming the field. */
export const layerFromConfigFile = (
  path: string,
  options: McpToolsOptions = {}
): Layer.Layer<
  never,
  McpError | ConfigError,
  ToolRegistry | ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem
> =>
  register(
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const text = yield* fs.readFileString(path).pipe(
        Effect.mapError((error) =>
          new ConfigError({ field: "mcpServers", message: `Cannot read MCP config ${path}: ${error.message}` })
        )
      )
      return yield* decodeFile(text, path)
    }),
    options
  )
