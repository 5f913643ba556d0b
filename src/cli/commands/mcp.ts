/**
 * `agent-loop mcp list|add|remove`: the MCP servers a run would start, as Claude Code's `claude mcp`
 * commands do it.
 *
 * - `list` starts (or reaches) every configured server, as `run` would, and prints each one's
 *   status, transport, protocol revision and where it was defined, then its tools with their
 *   approval class; no model is involved.
 * - `add NAME -- COMMAND ARGS…` (or `--url URL`) writes a server into the user's settings
 *   (`--scope user`, the default) or the workspace's `.mcp.json` (`--scope workspace`, the file
 *   Claude Code's `--scope project` writes, so both tools see it). `remove NAME` takes it out
 *   again. The rest of each file is kept as it was.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as McpSchema from "effect/ai/McpSchema"
import { loadConfigWithOrigins, McpServerConfig, WORKSPACE_CONFIG } from "../../layers/mcp/config.ts"
import { userMcpFiles } from "../config/userMcpFiles.ts"
import { cliOAuth } from "../config/mcpOAuth.ts"
import { connect } from "../../layers/mcp/connect.ts"
import { isDenied, requiresApproval } from "../../layers/mcp/policy.ts"
import { resolveSettings } from "../../layers/mcp/settings.ts"
import { readConfined, textOf } from "../../layers/internal/readConfined.ts"
import { Secrets } from "../../services/Secrets.ts"
import * as SettingsFile from "../config/settingsFile.ts"
import * as Trust from "../config/trust.ts"
import * as SandboxPolicy from "../sandbox/sandboxPolicy.ts"
import * as SandboxSpawner from "../sandbox/sandboxSpawner.ts"
import * as Settings from "../settings/settings.ts"
import { fail } from "../terminal/failure.ts"
import { clean } from "../terminal/safeText.ts"
import { Screen } from "../terminal/screen.ts"

/** Where `list` looks, as `run` would. */
export interface ListFlags {
  readonly workspace: Option.Option<string>
  readonly settings: boolean
  readonly mcpConfig: Option.Option<string>
  readonly mcpWorkspace: boolean
}

/** How a tool is treated when the model calls it. */
export const approvalClass = (config: McpServerConfig, tool: McpSchema.Tool): string => {
  if (isDenied(config, tool)) return "denied: never offered (deny)"
  if (requiresApproval(config, tool)) return "asks for approval"
  return tool.annotations?.readOnlyHint === true && (config.approve ?? "auto") === "auto"
    ? "read-only: runs without approval"
    : "runs without approval (allow/approve)"
}

/** The servers `run` would start in `workspace`, and where each was defined. */
export const configured = (flags: ListFlags) =>
  Effect.gen(function*() {
    const workspace = nodePath.resolve(Option.getOrElse(flags.workspace, () => "."))
    const trusted = yield* Trust.isTrusted(workspace)
    const files = flags.settings
      ? [
        ...Option.toArray(yield* SettingsFile.load(SettingsFile.userSettingsPath(), { within: SettingsFile.configDir() })),
        ...(trusted
          ? Option.toArray(yield* SettingsFile.load(SettingsFile.projectSettingsPath(workspace), { within: workspace, ownedByUser: true }))
          : [])
      ]
      : []
    const servers = SettingsFile.merge(files).mcpServers
    const origins = yield* loadConfigWithOrigins({
      userFiles: userMcpFiles(),
      project: workspace,
      servers,
      files: Option.toArray(flags.mcpConfig),
      ...(flags.mcpWorkspace && trusted ? { workspace } : {})
    }).pipe(Effect.catch((error) => fail(error.message)))
    // servers given inline came from the settings files: the last one naming a server defined it
    const settingsSource = (name: string) => [...files].reverse().find((file) => Object.hasOwn(file.mcpServers, name))?.path ?? "settings"
    const untrusted = trusted ? undefined : yield* Trust.skippedWarning(workspace)
    return {
      workspace,
      untrusted,
      servers: Object.entries(origins).map(([name, { config, source }]) => ({
        name,
        config,
        source: source === "inline" ? settingsSource(name) : source
      }))
    }
  })

/** `agent-loop mcp list`. */
export const list = (flags: ListFlags) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const { servers, untrusted, workspace } = yield* configured(flags)
    if (untrusted !== undefined) yield* screen.line(`agent-loop: warn: ${clean(untrusted)}`)
    if (servers.length === 0) {
      yield* screen.raw("no MCP servers configured (agent-loop mcp add NAME -- COMMAND ARGS adds one)\n")
      return
    }
    const settings = yield* resolveSettings({}, (yield* Secrets).scrub).pipe(Effect.catch((error) => fail(error.message)))
    // stdio servers start in the sandbox as a run's would (sandbox.mcpServers)
    const run = yield* Settings.resolveSandbox({
      workspace: Option.some(workspace),
      settings: flags.settings,
      claudeSettings: true,
      allow: [],
      deny: [],
      sandbox: Option.none(),
      verbose: false
    })
    const inputs = run.sandbox.mcpServers
      ? yield* SandboxPolicy.compile({ workspace: run.workspace, rules: run.rules, sandbox: run.sandbox })
      : { allowWrite: [], denyWrite: [], denyRead: [], allowedHosts: [], notes: [] }
    const results = yield* SandboxSpawner.asRunWould(
      Effect.forEach(servers, (server) =>
        Effect.map(
          server.config.disabled === true
            ? Effect.succeed(undefined)
            : Effect.result(connect(server.name, server.config, { startupTimeout: settings.startupTimeout, workspace, oauth: cliOAuth() })),
          (result) => ({ server, result })
        ), { concurrency: "unbounded" }),
      { workspace: run.workspace, sandbox: run.sandbox, inputs }
    )
    const lines: Array<string> = []
    for (const { result, server } of results) {
      const from = `from ${server.source}`
      if (result === undefined) {
        lines.push(`${server.name}: disabled, ${from}`)
      } else if (result._tag === "Failure") {
        const [first, ...rest] = result.failure.message.replace(`MCP server "${server.name}" `, "").split("\n")
        lines.push(`${server.name}: ${first}; ${from}`, ...rest)
      } else {
        const connection = result.success
        lines.push(`${server.name}: connected (${connection.transport}, MCP ${connection.version}), ${connection.tools.length} tools, ${from}`)
        const width = Math.max(0, ...connection.tools.map((tool) => tool.name.length))
        for (const tool of connection.tools) lines.push(`  ${tool.name.padEnd(width)}  ${approvalClass(connection.config, tool)}`)
      }
    }
    yield* screen.raw(`${lines.map(clean).join("\n")}\n`)
  }).pipe(Effect.scoped)

/** What `add` is given. */
export interface AddFlags {
  readonly name: string
  readonly commandLine: ReadonlyArray<string>
  readonly url: Option.Option<string>
  readonly transport: Option.Option<"http" | "sse">
  readonly scope: "user" | "workspace"
  readonly env: ReadonlyArray<string>
  readonly header: ReadonlyArray<string>
  readonly workspace: Option.Option<string>
}

/** The file a scope writes: the user's settings, or the workspace's `.mcp.json`; and the directory it must stay in. */
const scopeFile = (scope: "user" | "workspace", workspace: Option.Option<string>) => {
  if (scope === "user") return { path: SettingsFile.userSettingsPath(), within: SettingsFile.configDir(), mode: 0o600 }
  const dir = nodePath.resolve(Option.getOrElse(workspace, () => "."))
  return { path: nodePath.join(dir, WORKSPACE_CONFIG), within: dir, mode: 0o644 }
}

type JsonObject = Record<string, unknown>

const isObject = (value: unknown): value is JsonObject => typeof value === "object" && value !== null && !Array.isArray(value)

/** The JSON object in `path` (`{}` when there is none); anything else fails, leaving the file alone. */
const readObject = (file: { readonly path: string; readonly within: string }) =>
  Effect.gen(function*() {
    const read = yield* readConfined(file.path, { within: file.within, maxBytes: SettingsFile.MAX_SETTINGS_BYTES, warn: false })
    if (read._tag === "Missing") return {} as JsonObject
    const text = textOf(read)
    if (text === undefined || read._tag !== "Read" || read.truncated) {
      return yield* fail(`${file.path}: cannot read it${read._tag === "Skipped" ? `: ${read.reason}` : ""}; nothing was changed`)
    }
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      return yield* fail(`${file.path}: not valid JSON; nothing was changed`)
    }
    if (!isObject(json)) return yield* fail(`${file.path}: does not hold a JSON object; nothing was changed`)
    return json
  })

/** Writes the object whole through a temporary file renamed into place. */
const writeObject = (file: { readonly path: string; readonly mode: number }, value: JsonObject) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const temp = `${file.path}.${process.pid}.tmp`
    yield* fs.makeDirectory(nodePath.dirname(file.path), { recursive: true })
    yield* fs.writeFileString(temp, `${JSON.stringify(value, null, 2)}\n`, { mode: file.mode })
    yield* fs.rename(temp, file.path)
  }).pipe(Effect.catch((error) => fail(`cannot write ${file.path}: ${error.message}`)))

/** `KEY=VALUE` (or `Name: value` for headers) pairs as a record; a malformed one fails naming the flag. */
const pairs = (values: ReadonlyArray<string>, separator: "=" | ":", flag: string) =>
  Effect.gen(function*() {
    const out: Record<string, string> = {}
    for (const value of values) {
      const at = value.indexOf(separator)
      const key = at <= 0 ? "" : value.slice(0, at).trim()
      if (key === "") return yield* fail(`${flag} expects ${separator === "=" ? "KEY=VALUE" : "\"Name: value\""}, got ${JSON.stringify(clean(value.slice(0, 40)))}`)
      out[key] = value.slice(at + 1).trim()
    }
    return out
  })

/** A server name as tool names use it (`server__tool`): letters, digits, `-` and `_`, no `__`. */
const checkName = (name: string) =>
  /^[A-Za-z0-9_-]{1,64}$/.test(name) && !name.includes("__")
    ? Effect.void
    : fail(`server name ${JSON.stringify(clean(name))}: use letters, digits, - and _ (no "__"), at most 64 characters`)

const decodeServer = Schema.decodeUnknownOption(McpServerConfig)

/** `agent-loop mcp add`. */
export const add = (flags: AddFlags) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    yield* checkName(flags.name)
    const [command, ...args] = flags.commandLine
    const url = Option.getOrUndefined(flags.url)
    if ((url === undefined) === (command === undefined)) {
      return yield* fail("give either a command (agent-loop mcp add NAME -- COMMAND ARGS…) or --url URL")
    }
    const env = yield* pairs(flags.env, "=", "-e/--env")
    const headers = yield* pairs(flags.header, ":", "-H/--header")
    if (url !== undefined && Object.keys(env).length > 0) return yield* fail("-e/--env is for servers started with a command; use -H/--header with --url")
    if (url === undefined && (Object.keys(headers).length > 0 || Option.isSome(flags.transport))) {
      return yield* fail("-H/--header and --transport are for --url servers")
    }
    const entry: JsonObject = url === undefined
      ? { command: command!, ...(args.length > 0 ? { args } : {}), ...(Object.keys(env).length > 0 ? { env } : {}) }
      : { type: Option.getOrElse(flags.transport, () => "http" as const), url, ...(Object.keys(headers).length > 0 ? { headers } : {}) }
    if (Option.isNone(decodeServer(entry))) return yield* fail(`the server ${flags.name} is not valid: check its command or URL`)
    const file = scopeFile(flags.scope, flags.workspace)
    const current = yield* readObject(file)
    const servers = current["mcpServers"] ?? {}
    if (!isObject(servers)) return yield* fail(`${file.path}: "mcpServers" is not an object; nothing was changed`)
    if (Object.hasOwn(servers, flags.name)) {
      return yield* fail(`${file.path} already has a server named ${flags.name}: remove it first (agent-loop mcp remove ${flags.name} --scope ${flags.scope})`)
    }
    yield* writeObject(file, { ...current, mcpServers: { ...servers, [flags.name]: entry } })
    // values of env and headers are often tokens: only their names are shown
    const what = url === undefined ? [command!, ...args].join(" ") : `${String(entry["type"])} ${url}`
    const secrets = [...Object.keys(env), ...Object.keys(headers)]
    yield* screen.raw(`${clean(`added ${flags.name} (${what}${secrets.length > 0 ? `; ${secrets.join(", ")} set` : ""}) to ${file.path}`)}\n`)
    if (flags.scope === "workspace") {
      const trusted = yield* Trust.isTrusted(file.within)
      if (!trusted) yield* screen.line(clean(`agent-loop: note: ${file.within} is not trusted: its servers start once you run agent-loop trust ${file.within}`))
    }
  })

/** What `remove` is given. */
export interface RemoveFlags {
  readonly name: string
  readonly scope: Option.Option<"user" | "workspace">
  readonly workspace: Option.Option<string>
}

/** `agent-loop mcp remove`: from the scope given, or from the one scope that has the server. */
export const remove = (flags: RemoveFlags) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const scopes = Option.match(flags.scope, { onNone: () => ["user", "workspace"] as const, onSome: (scope) => [scope] as const })
    const holding: Array<{ readonly scope: "user" | "workspace"; readonly file: ReturnType<typeof scopeFile>; readonly current: JsonObject }> = []
    for (const scope of scopes) {
      const file = scopeFile(scope, flags.workspace)
      const current = yield* readObject(file)
      if (isObject(current["mcpServers"]) && Object.hasOwn(current["mcpServers"], flags.name)) holding.push({ scope, file, current })
    }
    if (holding.length === 0) {
      return yield* fail(`no server named ${clean(flags.name)} in ${scopes.map((scope) => scopeFile(scope, flags.workspace).path).join(" or ")}`)
    }
    if (holding.length > 1) {
      return yield* fail(`${clean(flags.name)} is defined in ${holding.map((h) => h.file.path).join(" and ")}: pass --scope user or --scope workspace`)
    }
    const { current, file } = holding[0]!
    const { [flags.name]: _removed, ...rest } = current["mcpServers"] as JsonObject
    yield* writeObject(file, { ...current, mcpServers: rest })
    yield* screen.raw(`${clean(`removed ${flags.name} from ${file.path}`)}\n`)
  })
