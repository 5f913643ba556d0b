/**
 * The MCP server configuration in the common `{"mcpServers": {...}}` format (Claude Code's
 * `.mcp.json`, Claude Desktop, Cursor and VS Code read the same shape), its decoding, and where it
 * is read from.
 *
 * @example
 * ```json
 * { "mcpServers": {
 *   "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
 *              "approve": "auto", "deny": ["move_file"] },
 *   "github": { "type": "http", "url": "https://api.githubcopilot.com/mcp/",
 *               "headers": { "Authorization": "Bearer ${GITHUB_TOKEN}" }, "allow": ["get_*", "list_*"] } } }
 * ```
 */
import * as nodePath from "node:path"
import { Effect, FileSystem, Option, Schema, SchemaIssue } from "effect"
import { DurationSetting } from "../../domain/Config.ts"
import { ConfigError } from "../../domain/errors.ts"
import { problemOf, readConfined, textOf } from "../readConfined.ts"

/** A tool-name pattern: an exact name, or `*` for any run of characters (`read_*`). */
const Patterns = Schema.Array(Schema.String)

/**
 * What every server entry may say besides how to reach it.
 *
 * - `approve`: `"auto"` (default): a tool needs the user's approval unless the server marks it
 *   `readOnlyHint: true`; `"always"`: every tool needs approval; `"never"`: none does.
 * - `allow`: tools (patterns of the server's own tool names) that run without approval.
 * - `deny`: tools that are never offered to the model. `deny` wins over `allow`.
 * - `startupTimeout`: how long the server may take to start, initialise and list its tools.
 * - `toolTimeout`: how long one tool call may take.
 * - `maxOutputBytes`: the longest tool result kept; the rest is cut, with a note saying how much.
 */
const Common = {
  approve: Schema.optionalKey(Schema.Literals(["auto", "always", "never"])),
  allow: Schema.optionalKey(Patterns),
  deny: Schema.optionalKey(Patterns),
  startupTimeout: Schema.optionalKey(DurationSetting),
  toolTimeout: Schema.optionalKey(DurationSetting),
  maxOutputBytes: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)))
}

/** Values that often hold tokens: `Redacted` once decoded, so they reach no event, log or error. */
const SecretValues = Schema.Record(Schema.String, Schema.RedactedFromValue(Schema.String))

/** A server started as a child process and spoken to over stdin/stdout (the default `type`). */
export const McpStdioServer = Schema.Struct({
  type: Schema.Literal("stdio").annotate({ message: "Expected \"stdio\", \"http\" or \"sse\"" }).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed("stdio" as const))
  ),
  command: Schema.NonEmptyString,
  args: Schema.optionalKey(Schema.Array(Schema.String)),
  env: Schema.optionalKey(SecretValues),
  cwd: Schema.optionalKey(Schema.String),
  ...Common
})

/** A server reached over Streamable HTTP; `headers` (say, `Authorization`) are secrets like `env`. */
export const McpHttpServer = Schema.Struct({
  type: Schema.Literal("http"),
  url: Schema.NonEmptyString,
  headers: Schema.optionalKey(SecretValues),
  ...Common
})

/**
 * The legacy HTTP+SSE transport (two endpoints). Accepted in the file so that a config written
 * for other clients loads, but such a server is skipped with an error saying to use `"http"`.
 */
export const McpSseServer = Schema.Struct({
  type: Schema.Literal("sse"),
  url: Schema.NonEmptyString,
  headers: Schema.optionalKey(SecretValues),
  ...Common
})

/**
 * One server. The members that carry a required `type` come first, so a bad `"http"` entry is
 * reported by its own fields, not as "not stdio".
 */
export const McpServerConfig = Schema.Union([McpHttpServer, McpSseServer, McpStdioServer])
export type McpServerConfig = typeof McpServerConfig.Type
/** A server as written in a config file or passed to `McpTools.layer`. */
export type McpServerConfigInput = typeof McpServerConfig.Encoded

/** Servers by name; the name qualifies tool names (`server__tool`) and labels errors and warnings. */
export const McpServers = Schema.Record(Schema.String, McpServerConfig)
export type McpServers = typeof McpServers.Type

/** The whole config file. */
export const McpConfigFile = Schema.Struct({ mcpServers: McpServers })
export type McpConfigFile = typeof McpConfigFile.Type

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Turns a decode failure into a `ConfigError` naming the first bad field (`mcpServers.files.command`).
 * Values under `env` and `headers` are not echoed, since they may be secrets.
 */
const toConfigError = (prefix: ReadonlyArray<string>, source: string) => (error: Schema.SchemaError): ConfigError => {
  const first = formatter(error.issue).issues[0]
  const path = [...prefix, ...(first?.path ?? []).map(String)]
  const field = path.length === 0 ? "mcpServers" : path.join(".")
  const secret = path.includes("env") || path.includes("headers")
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

/** The largest MCP config file read. */
export const MAX_CONFIG_BYTES = 1024 * 1024

/**
 * Reads and decodes a config file, at most `MAX_CONFIG_BYTES` of it. With `within` (a workspace's
 * `.mcp.json`) a file leading outside that directory by a link is skipped with a warning naming it
 * (`readConfined`): `None`; so is one of another user with `ownedByUser`.
 */
export const readConfigFile = (
  path: string,
  options: { readonly within?: string; readonly ownedByUser?: boolean } = {}
): Effect.Effect<Option.Option<McpServers>, ConfigError> =>
  Effect.gen(function*() {
    const read = yield* readConfined(path, { ...options, maxBytes: MAX_CONFIG_BYTES })
    if (read._tag === "Skipped") return Option.none()
    const problem = problemOf(read, MAX_CONFIG_BYTES)
    if (problem !== undefined) {
      return yield* Effect.fail(new ConfigError({ field: "mcpServers", message: `Cannot read MCP config ${path}: ${problem}` }))
    }
    return Option.some(yield* decodeFile(textOf(read) ?? "", path))
  })

/** The file a workspace keeps its MCP servers in, as Claude Code does. */
export const WORKSPACE_CONFIG = ".mcp.json"

/**
 * The path of `dir`'s `.mcp.json` when there is one. The servers of a workspace run programs the
 * workspace names, so whoever calls this decides whether the workspace is trusted enough.
 */
export const findWorkspaceConfig = (dir: string): Effect.Effect<Option.Option<string>, never, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = nodePath.join(dir, WORKSPACE_CONFIG)
    const exists = yield* fs.exists(path).pipe(Effect.orElseSucceed(() => false))
    return exists ? Option.some(path) : Option.none()
  })

/** Where MCP servers come from: servers given inline, a workspace's `.mcp.json` (if any), then config files, in order. */
export interface McpSources {
  /** Servers as written (a host's own settings, say); the lowest precedence. */
  readonly servers?: Readonly<Record<string, McpServerConfigInput>>
  /** Files that must exist (`--mcp-config`). */
  readonly files?: ReadonlyArray<string>
  /** A workspace whose `.mcp.json` is read when present. Pass it only for a trusted workspace. */
  readonly workspace?: string
}

/**
 * The servers of every source, merged: a name defined again by a later source replaces the
 * earlier definition (so an explicit file overrides the workspace's, which overrides inline ones). Bad files fail with
 * `ConfigError` naming the file and the field.
 */
export const loadConfig = (sources: McpSources): Effect.Effect<McpServers, ConfigError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const workspaceFile = sources.workspace === undefined
      ? Option.none<string>()
      : yield* findWorkspaceConfig(sources.workspace)
    let servers: McpServers = sources.servers === undefined ? {} : yield* decodeServers(sources.servers)
    const fromWorkspace = Option.isSome(workspaceFile) && sources.workspace !== undefined
      ? yield* readConfigFile(workspaceFile.value, { within: sources.workspace, ownedByUser: true })
      : Option.none()
    if (Option.isSome(workspaceFile) && Option.isSome(fromWorkspace)) {
      servers = { ...servers, ...fromWorkspace.value }
      yield* Effect.logInfo(`MCP servers from ${workspaceFile.value}: ${Object.keys(fromWorkspace.value).join(", ") || "none"}`)
    }
    for (const file of sources.files ?? []) {
      servers = { ...servers, ...Option.getOrElse(yield* readConfigFile(file), () => ({})) }
    }
    return servers
  })
