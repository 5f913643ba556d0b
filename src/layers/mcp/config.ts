/**
 * The MCP server configuration in the shapes the common clients write, its decoding, and where it
 * is read from: `{"mcpServers": {...}}` (Claude Code's `.mcp.json`, Claude Desktop, Cursor,
 * Windsurf) and VS Code's `{"servers": {...}, "inputs": [...]}` (`.vscode/mcp.json`).
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
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { DurationSetting } from "../../domain/Config.ts"
import { InvalidConfig } from "../../domain/errors.ts"
import { problemOf, readConfined, textOf } from "../internal/readConfined.ts"

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
 * - `disabled`: `true` keeps the server from starting (Claude Desktop, Cursor and Windsurf write it).
 */
const Common = {
  disabled: Schema.optionalKey(Schema.Boolean),
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
  /** VS Code's: a dotenv file of variables beneath `env`'s (`envFile.ts`), relative to the workspace. */
  envFile: Schema.optionalKey(Schema.String),
  cwd: Schema.optionalKey(Schema.String),
  ...Common
})

/**
 * A server reached over Streamable HTTP, or over the older HTTP+SSE transport when the server
 * answers Streamable HTTP with a 4xx status (as the specification's backwards compatibility says);
 * `headers` (say, `Authorization`) are secrets like `env`.
 */
export const McpHttpServer = Schema.Struct({
  type: Schema.Literal("http"),
  url: Schema.NonEmptyString,
  headers: Schema.optionalKey(SecretValues),
  ...Common
})

/** An entry that gives only `url` (as Cursor writes them): an `"http"` server. */
const McpUrlServer = Schema.Struct({
  type: Schema.Literal("http").pipe(Schema.withDecodingDefaultKey(Effect.succeed("http" as const))),
  url: Schema.NonEmptyString,
  headers: Schema.optionalKey(SecretValues),
  ...Common
})

/** The older HTTP+SSE transport (a GET event stream, and POSTs to the endpoint it names), used directly. */
export const McpSseServer = Schema.Struct({
  type: Schema.Literal("sse"),
  url: Schema.NonEmptyString,
  headers: Schema.optionalKey(SecretValues),
  ...Common
})

/**
 * One server. The members that carry a required `type` come first, so a bad `"http"` entry is
 * reported by its own fields, not as "not stdio"; an entry with only `url` is tried last.
 */
export const McpServerConfig = Schema.Union([McpHttpServer, McpSseServer, McpStdioServer, McpUrlServer])
export type McpServerConfig = typeof McpServerConfig.Type
/** A server as written in a config file or passed to `McpTools.layer`. */
export type McpServerConfigInput = typeof McpServerConfig.Encoded

/** Servers by name; the name qualifies tool names (`server__tool`) and labels errors and warnings. */
export const McpServers = Schema.Record(Schema.String, McpServerConfig)
export type McpServers = typeof McpServers.Type

/** The whole config file, once `normaliseFile` has given it the common shape. */
export const McpConfigFile = Schema.Struct({ mcpServers: McpServers })
export type McpConfigFile = typeof McpConfigFile.Type

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * A file in any of the common shapes as `{"mcpServers": {...}}`: VS Code's `servers` is taken for
 * `mcpServers`, and Windsurf's `serverUrl` for `url`. Anything else is left for the decoding to
 * report. (VS Code's `inputs` need no copying: `${input:ID}` is answered from the environment.)
 */
export const normaliseFile = (json: unknown): unknown => {
  if (!isRecord(json)) return json
  const servers = json["mcpServers"] ?? json["servers"]
  if (!isRecord(servers)) return servers === undefined ? json : { mcpServers: servers }
  const entries = Object.entries(servers).map(([name, entry]) =>
    [name, isRecord(entry) && entry["url"] === undefined && typeof entry["serverUrl"] === "string"
      ? (({ serverUrl, ...rest }) => ({ ...rest, url: serverUrl }))(entry)
      : entry] as const
  )
  return { mcpServers: Object.fromEntries(entries) }
}

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Turns a decode failure into an `InvalidConfig` naming the first bad field (`mcpServers.files.command`).
 * Values under `env` and `headers` are not echoed, since they may be secrets.
 */
const toConfigError = (prefix: ReadonlyArray<string>, source: string) => (error: Schema.SchemaError): InvalidConfig => {
  const first = formatter(error.issue).issues[0]
  const path = [...prefix, ...(first?.path ?? []).map(String)]
  const field = path.length === 0 ? "mcpServers" : path.join(".")
  const secret = path.includes("env") || path.includes("headers")
  const detail = secret ? "expected a string" : first?.message ?? error.message
  return new InvalidConfig({ field, message: `Invalid MCP config${source} at ${field}: ${detail}` })
}

/** Decodes the `mcpServers` record itself (what `McpTools.layer` takes). */
export const decodeServers = (input: unknown): Effect.Effect<McpServers, InvalidConfig> =>
  Schema.decodeUnknownEffect(McpServers)(input).pipe(Effect.mapError(toConfigError(["mcpServers"], "")))

/**
 * JSON with comments (`//`, `/* *\/`) and trailing commas, as VS Code writes its `mcp.json`, made
 * plain JSON: one pass that leaves strings alone.
 */
export const stripJsonComments = (text: string): string => {
  const out: Array<string> = []
  // where the last comma outside strings was put, while nothing but blanks and comments follow it
  let comma = -1
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (c === "\"") {
      let j = i + 1
      while (j < text.length && text[j] !== "\"") j += text[j] === "\\" ? 2 : 1
      out.push(text.slice(i, j + 1))
      comma = -1
      i = j + 1
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2)
      i = end < 0 ? text.length : end + 2
    } else {
      if ((c === "}" || c === "]") && comma >= 0) out[comma] = ""
      if (c === ",") comma = out.length
      else if (!/\s/.test(c)) comma = -1
      out.push(c)
      i++
    }
  }
  return out.join("")
}

/** Decodes the text of a config file (comments and trailing commas allowed); `source` names the file in the message. */
export const decodeFile = (text: string, source: string): Effect.Effect<McpServers, InvalidConfig> =>
  Effect.try({
    try: () => JSON.parse(stripJsonComments(text)) as unknown,
    // The parser's message quotes the text, which may hold secrets: it is left out.
    catch: () => new InvalidConfig({ field: "mcpServers", message: `MCP config ${source} is not valid JSON` })
  }).pipe(
    Effect.flatMap((json) => {
      // the field named in an error is the file's own: `servers.x.command` in a VS Code file
      const key = isRecord(json) && json["mcpServers"] === undefined && json["servers"] !== undefined ? "servers" : "mcpServers"
      if (isRecord(json) && json["mcpServers"] === undefined && json["servers"] === undefined) {
        return Effect.fail(new InvalidConfig({
          field: "mcpServers",
          message: `Invalid MCP config ${source}: expected "mcpServers" (Claude Code, Cursor, Windsurf) or "servers" (VS Code)`
        }))
      }
      const normalised = normaliseFile(json)
      return isRecord(normalised)
        ? Schema.decodeUnknownEffect(McpServers)(normalised["mcpServers"]).pipe(Effect.mapError(toConfigError([key], ` ${source}`)))
        : Schema.decodeUnknownEffect(McpConfigFile)(normalised).pipe(
          Effect.map((file) => file.mcpServers),
          Effect.mapError(toConfigError([], ` ${source}`))
        )
    })
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
): Effect.Effect<Option.Option<McpServers>, InvalidConfig> =>
  Effect.gen(function*() {
    const read = yield* readConfined(path, { ...options, maxBytes: MAX_CONFIG_BYTES })
    if (read._tag === "Skipped") return Option.none()
    const problem = problemOf(read, MAX_CONFIG_BYTES)
    if (problem !== undefined) {
      return yield* Effect.fail(new InvalidConfig({ field: "mcpServers", message: `Cannot read MCP config ${path}: ${problem}` }))
    }
    return Option.some(yield* decodeFile(textOf(read) ?? "", path))
  })

/** The file a workspace keeps its MCP servers in, as Claude Code does. */
export const WORKSPACE_CONFIG = ".mcp.json"

/**
 * The MCP files a workspace may hold, lowest precedence first: VS Code's, Cursor's, then Claude
 * Code's `.mcp.json` (the one shared by most clients), so a server defined in several is taken from
 * the last.
 */
export const WORKSPACE_CONFIGS: ReadonlyArray<string> = [nodePath.join(".vscode", "mcp.json"), nodePath.join(".cursor", "mcp.json"), WORKSPACE_CONFIG]

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

/** Claude Code's user file, `~/.claude.json`: its `mcpServers` (user scope) and `projects[DIR].mcpServers` (local scope). */
export const CLAUDE_USER_FILE = ".claude.json"

/** The largest `~/.claude.json` read: Claude Code keeps its projects' history in it too. */
const MAX_CLAUDE_USER_BYTES = 64 * 1024 * 1024

/**
 * The servers of a user-level file, when it exists: Claude Code's `~/.claude.json` (the user's
 * servers, then those it keeps for `project`, which win), or a file of the common shapes
 * (`~/.cursor/mcp.json`). A file that cannot be used is a warning naming it, never a failure: it
 * is the user's other tool's file, which agent-loop must not stop on.
 */
export const readUserFile = (path: string, project: string | undefined): Effect.Effect<Option.Option<McpServers>, never, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    if (!(yield* fs.exists(path).pipe(Effect.orElseSucceed(() => false)))) return Option.none()
    const claude = nodePath.basename(path) === CLAUDE_USER_FILE
    const maxBytes = claude ? MAX_CLAUDE_USER_BYTES : MAX_CONFIG_BYTES
    const read = yield* readConfined(path, { ownedByUser: true, maxBytes })
    if (read._tag === "Skipped") return Option.none()
    const problem = problemOf(read, maxBytes)
    const decoded = problem !== undefined
      ? Effect.fail(new InvalidConfig({ field: "mcpServers", message: `Cannot read MCP config ${path}: ${problem}` }))
      : !claude
      ? decodeFile(textOf(read) ?? "", path)
      : Effect.try({
        try: () => JSON.parse(textOf(read) ?? "") as unknown,
        catch: () => new InvalidConfig({ field: "mcpServers", message: `MCP config ${path} is not valid JSON` })
      }).pipe(Effect.flatMap((json) => {
        const top = isRecord(json) && isRecord(json["mcpServers"]) ? json["mcpServers"] : {}
        const projects = isRecord(json) && isRecord(json["projects"]) ? json["projects"] : {}
        const own = project !== undefined && isRecord(projects[project]) ? projects[project] : {}
        const local = isRecord(own["mcpServers"]) ? own["mcpServers"] : {}
        const field = Object.keys(local).length > 0 ? ["projects", project!, "mcpServers"] : ["mcpServers"]
        return Schema.decodeUnknownEffect(McpServers)({ ...top, ...local }).pipe(Effect.mapError(toConfigError(field, ` ${path}`)))
      }))
    return yield* decoded.pipe(
      Effect.map(Option.some),
      Effect.catch((error) => Effect.as(Effect.logWarning(`${error.message}; its servers are left out`), Option.none()))
    )
  })

/**
 * Where MCP servers come from, lowest precedence first: the user's files of other tools, servers
 * given inline, a workspace's MCP files, then config files.
 */
export interface McpSources {
  /**
   * The user's own files of other tools, read when present (`readUserFile`): Cursor's
   * `~/.cursor/mcp.json`, then Claude Code's `~/.claude.json`.
   */
  readonly userFiles?: ReadonlyArray<string>
  /** The directory whose servers `~/.claude.json` keeps under `projects` (local scope): the workspace. */
  readonly project?: string
  /** Servers as written (a host's own settings, say); the lowest precedence. */
  readonly servers?: Readonly<Record<string, McpServerConfigInput>>
  /** Files that must exist (`--mcp-config`). */
  readonly files?: ReadonlyArray<string>
  /**
   * A workspace whose MCP files (`WORKSPACE_CONFIGS`: `.vscode/mcp.json`, `.cursor/mcp.json`,
   * `.mcp.json`) are read when present. Pass it only for a trusted workspace.
   */
  readonly workspace?: string
}

/** A server and the file (or `"inline"`) it was defined in. */
export interface McpServerOrigin {
  readonly config: McpServerConfig
  readonly source: string
}

/**
 * The servers of every source with where each was defined: a name defined again by a later source
 * replaces the earlier definition (so an explicit file overrides the workspace's, which overrides
 * inline ones). Bad files fail with `InvalidConfig` naming the file and the field.
 */
export const loadConfigWithOrigins = (
  sources: McpSources
): Effect.Effect<Readonly<Record<string, McpServerOrigin>>, InvalidConfig, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const servers: Record<string, McpServerOrigin> = {}
    const add = (found: McpServers, source: string) => {
      for (const [name, config] of Object.entries(found)) {
        delete servers[name]
        servers[name] = { config, source }
      }
    }
    for (const file of sources.userFiles ?? []) {
      const found = yield* readUserFile(file, sources.project)
      if (Option.isSome(found)) add(found.value, file)
    }
    if (sources.servers !== undefined) add(yield* decodeServers(sources.servers), "inline")
    const workspace = sources.workspace
    for (const relative of workspace === undefined ? [] : WORKSPACE_CONFIGS) {
      const path = nodePath.join(workspace!, relative)
      if (!(yield* fs.exists(path).pipe(Effect.orElseSucceed(() => false)))) continue
      const found = yield* readConfigFile(path, { within: workspace!, ownedByUser: true })
      if (Option.isNone(found)) continue
      add(found.value, path)
      yield* Effect.logInfo(`MCP servers from ${path}: ${Object.keys(found.value).join(", ") || "none"}`)
    }
    for (const file of sources.files ?? []) {
      const found = yield* readConfigFile(file)
      if (Option.isSome(found)) add(found.value, file)
    }
    return servers
  })

/** The servers of every source, merged as `loadConfigWithOrigins` says. */
export const loadConfig = (sources: McpSources): Effect.Effect<McpServers, InvalidConfig, FileSystem.FileSystem> =>
  Effect.map(loadConfigWithOrigins(sources), (servers) =>
    Object.fromEntries(Object.entries(servers).map(([name, { config }]) => [name, config])))
