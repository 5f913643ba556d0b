/**
 * The MCP server configuration in the common `{"mcpServers": {...}}` format (Claude Desktop, Cursor,
 * VS Code and others read the same shape), and its decoding into values the connector uses.
 *
 * @example
 * ```json
 * { "mcpServers": { "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
 *   "env": { "LOG_LEVEL": "warn" } } } }
 * ```
 */
import { Effect, Schema, SchemaIssue } from "effect"
import { ConfigError } from "../../domain/errors.ts"

/**
 * One stdio server. `env` values are `Redacted` once decoded: they often hold tokens, and must not
 * reach events, logs or errors.
 */
export const McpServerConfig = Schema.Struct({
  command: Schema.NonEmptyString,
  args: Schema.optionalKey(Schema.Array(Schema.String)),
  env: Schema.optionalKey(Schema.Record(Schema.String, Schema.RedactedFromValue(Schema.String))),
  cwd: Schema.optionalKey(Schema.String)
})
export type McpServerConfig = typeof McpServerConfig.Type
/** A server as written in a config file or passed to `McpTools.layer`. */
export type McpServerConfigInput = typeof McpServerConfig.Encoded

/** Servers by name; the name qualifies tool names on collisions and labels errors. */
export const McpServers = Schema.Record(Schema.String, McpServerConfig)
export type McpServers = typeof McpServers.Type

/** The whole config file. */
export const McpConfigFile = Schema.Struct({ mcpServers: McpServers })
export type McpConfigFile = typeof McpConfigFile.Type

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Turns a decode failure into a `ConfigError` naming the first bad field (`mcpServers.files.command`).
 * Values under `env` are not echoed, since they may be secrets.
 */
const toConfigError = (prefix: ReadonlyArray<string>, source: string) => (error: Schema.SchemaError): ConfigError => {
  const first = formatter(error.issue).issues[0]
  const path = [...prefix, ...(first?.path ?? []).map(String)]
  const field = path.length === 0 ? "mcpServers" : path.join(".")
  const secret = path.includes("env")
  const detail = secret ? "expected a string" : first?.message ?? error.message
  return new ConfigError({ field, message: `Invalid MCP config${source} at ${field}: ${detail}` })
}

/** Decodes the `mcpServers` record itself (what `McpTools.layer` takes). */
export const decodeServers = (input: unknown): Effect.Effect<McpServers, ConfigError> =>
  Schema.decodeUnknownEffect(McpServers)(input).pipe(Effect.mapError(toConfigError(["mcpServers"], "")))

/** Decodes the text of a config file; `source` names the file in the message. */
export const decodeFile = (text: string, source: string): Effect.Effect<McpServers, ConfigError> =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    // The parser's message quotes the text, which may hold secrets: it is left out.
    catch: () => new ConfigError({ field: "mcpServers", message: `MCP config ${source} is not valid JSON` })
  }).pipe(
    Effect.flatMap((json) =>
      Schema.decodeUnknownEffect(McpConfigFile)(json).pipe(Effect.mapError(toConfigError([], ` ${source}`)))
    ),
    Effect.map((file) => file.mcpServers)
  )
