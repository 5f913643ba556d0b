/**
 * The `sandbox` settings, in Claude Code's shape, and where each may come from. The keys are read
 * from the user's own files (`$XDG_CONFIG_HOME/agent-loop/settings.json`, Claude Code's
 * `~/.claude/settings.json`) and from a trusted workspace's (`.agent-loop/settings.json`,
 * `.claude/settings.json`, `.claude/settings.local.json`), later files winning key by key and lists
 * adding up. An untrusted workspace's files give nothing: a key there that would weaken the sandbox
 * (`enabled: false`, `excludedCommands`, more hosts or paths, …) is named in one notice line, so
 * a cloned repository cannot turn the boundary off. Keys the loop does not honour get one warning
 * line each.
 */
import * as os from "node:os"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { problemOf, readConfined, textOf } from "../../layers/internal/readConfined.ts"

/** `sandbox.network`. */
export const SandboxNetwork = Schema.Struct({
  allowedDomains: Schema.optionalKey(Schema.Array(Schema.String).annotate({
    description: "hosts commands may reach through the sandbox's proxy (`*.example.com` for subdomains), beside the hosts of `WebFetch(domain:…)` allow rules"
  })),
  allowUnixSockets: Schema.optionalKey(Schema.Array(Schema.String).annotate({ description: "Claude Code's: Unix socket paths to allow (not honoured)" })),
  allowAllUnixSockets: Schema.optionalKey(Schema.Boolean.annotate({ description: "Claude Code's: allow every Unix socket (not honoured)" })),
  allowLocalBinding: Schema.optionalKey(Schema.Boolean.annotate({ description: "Claude Code's: let commands listen on local ports (not honoured)" })),
  httpProxyPort: Schema.optionalKey(Schema.Int.annotate({ description: "Claude Code's: your own HTTP proxy instead of the sandbox's (not honoured)" })),
  socksProxyPort: Schema.optionalKey(Schema.Int.annotate({ description: "Claude Code's: your own SOCKS proxy instead of the sandbox's (not honoured)" }))
})

/** `sandbox.filesystem`. */
export const SandboxFilesystem = Schema.Struct({
  allowWrite: Schema.optionalKey(Schema.Array(Schema.String).annotate({ description: "more paths commands may write, beside the workspace" })),
  denyWrite: Schema.optionalKey(Schema.Array(Schema.String).annotate({ description: "paths commands may not write, inside writable ones" })),
  denyRead: Schema.optionalKey(Schema.Array(Schema.String).annotate({ description: "paths commands may not read, beside the paths of `Read(…)` deny rules" })),
  allowRead: Schema.optionalKey(Schema.Array(Schema.String).annotate({ description: "Claude Code's: paths readable inside unreadable ones (not honoured)" }))
})

/** The `sandbox` key of a settings file. */
export const SandboxSettings = Schema.Struct({
  enabled: Schema.optionalKey(Schema.Boolean.annotate({ description: "`false` runs commands without the sandbox, as `--sandbox off`; `true` (or absent) runs them in it wherever it can run" })),
  failIfUnavailable: Schema.optionalKey(Schema.Boolean.annotate({ description: "`true`: as `--sandbox on`, commands fail where no sandbox can run at all, instead of running without one" })),
  autoAllowBashIfSandboxed: Schema.optionalKey(Schema.Boolean.annotate({ description: "`true`: `exec` calls run without asking while the sandbox is on, unless a deny or ask rule matches them" })),
  excludedCommands: Schema.optionalKey(Schema.Array(Schema.String).annotate({ description: "commands (`docker:*`, `git push`, as in `exec(…)` rules) that run outside the sandbox; each still asks" })),
  allowUnsandboxedCommands: Schema.optionalKey(Schema.Boolean.annotate({ description: "a command the sandbox stopped may be run again outside it: absent, only when the user says yes at the prompt; `true`, also under `--yes`; `false`, never" })),
  network: Schema.optionalKey(SandboxNetwork),
  filesystem: Schema.optionalKey(SandboxFilesystem),
  enableWeakerNestedSandbox: Schema.optionalKey(Schema.Boolean.annotate({ description: "Claude Code's: a weaker sandbox for containers without user namespaces (not honoured)" })),
  ignoreViolations: Schema.optionalKey(Schema.Record(Schema.String, Schema.Array(Schema.String)).annotate({ description: "Claude Code's: violations not to report (not honoured)" })),
  mcpServers: Schema.optionalKey(Schema.Boolean.annotate({ description: "agent-loop's: `true` starts stdio MCP servers in the sandbox too (default `false`)" })),
  hooks: Schema.optionalKey(Schema.Boolean.annotate({ description: "agent-loop's: `true` runs hook scripts in the sandbox too (default `false`)" }))
})
export type SandboxSettings = typeof SandboxSettings.Type

/** The keys the loop reads and does not act on: each one set gets a warning line. */
export const NOT_HONOURED: ReadonlyArray<string> = [
  "network.allowUnixSockets",
  "network.allowAllUnixSockets",
  "network.allowLocalBinding",
  "network.httpProxyPort",
  "network.socksProxyPort",
  "filesystem.allowRead",
  "ignoreViolations",
  "enableWeakerNestedSandbox"
]

/** `--sandbox`: on (fail closed where none can run), off, or auto (on wherever one can run). */
export type SandboxMode = "on" | "off" | "auto"

/** One file's sandbox settings, with the `permissions.additionalDirectories` beside them. */
export interface SandboxSource {
  readonly path: string
  readonly sandbox: SandboxSettings
  readonly additionalDirectories: ReadonlyArray<string>
}

/** Dotted names of the keys set in `sandbox`. */
const keysSet = (sandbox: SandboxSettings): ReadonlyArray<string> => {
  const keys: Array<string> = []
  for (const [key, value] of Object.entries(sandbox)) {
    if (value === undefined) continue
    if ((key === "network" || key === "filesystem") && typeof value === "object" && value !== null) {
      for (const [inner, set] of Object.entries(value)) if (set !== undefined) keys.push(`${key}.${inner}`)
    } else keys.push(key)
  }
  return keys
}

/**
 * The keys of a source that would weaken the sandbox or the approval around it: turning it off,
 * running commands outside it, more paths, hosts or sockets, a weaker sandbox, calls run without
 * asking. Only the user's own files and a trusted workspace's may set them.
 */
export const weakening = (source: SandboxSource): ReadonlyArray<string> => {
  const { sandbox } = source
  const nonEmpty = (list: ReadonlyArray<unknown> | undefined) => list !== undefined && list.length > 0
  const keys: Array<string> = []
  if (sandbox.enabled === false) keys.push("sandbox.enabled: false")
  if (sandbox.autoAllowBashIfSandboxed === true) keys.push("sandbox.autoAllowBashIfSandboxed")
  if (nonEmpty(sandbox.excludedCommands)) keys.push("sandbox.excludedCommands")
  if (sandbox.allowUnsandboxedCommands === true) keys.push("sandbox.allowUnsandboxedCommands")
  if (nonEmpty(sandbox.network?.allowedDomains)) keys.push("sandbox.network.allowedDomains")
  if (nonEmpty(sandbox.network?.allowUnixSockets)) keys.push("sandbox.network.allowUnixSockets")
  if (sandbox.network?.allowAllUnixSockets === true) keys.push("sandbox.network.allowAllUnixSockets")
  if (sandbox.network?.allowLocalBinding === true) keys.push("sandbox.network.allowLocalBinding")
  if (sandbox.network?.httpProxyPort !== undefined) keys.push("sandbox.network.httpProxyPort")
  if (sandbox.network?.socksProxyPort !== undefined) keys.push("sandbox.network.socksProxyPort")
  if (nonEmpty(sandbox.filesystem?.allowWrite)) keys.push("sandbox.filesystem.allowWrite")
  if (nonEmpty(sandbox.filesystem?.allowRead)) keys.push("sandbox.filesystem.allowRead")
  if (sandbox.enableWeakerNestedSandbox === true) keys.push("sandbox.enableWeakerNestedSandbox")
  if (sandbox.ignoreViolations !== undefined && Object.keys(sandbox.ignoreViolations).length > 0) keys.push("sandbox.ignoreViolations")
  if (nonEmpty(source.additionalDirectories)) keys.push("permissions.additionalDirectories")
  return keys
}

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** Decodes `value` with `schema`; a value it refuses is `undefined` with a warning. */
const lenient = <S extends Schema.Top>(schema: S, value: unknown, at: string, warnings: Array<string>): S["Type"] | undefined => {
  if (value === undefined) return undefined
  const decoded = Schema.decodeUnknownResult(schema as any)(value)
  if (Result.isSuccess(decoded)) return decoded.success as S["Type"]
  const issue = formatter(decoded.failure.issue as SchemaIssue.Issue).issues[0]
  warnings.push(`${at}: ${issue?.message.split("\n")[0] ?? "invalid"}; skipped`)
  return undefined
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * The `sandbox` key and `permissions.additionalDirectories` of a Claude Code settings file,
 * read leniently: a key the loop does not know, or a value it cannot use, is a warning naming it.
 */
export const fromClaude = (path: string, json: unknown): { readonly source: SandboxSource; readonly warnings: ReadonlyArray<string> } => {
  const warnings: Array<string> = []
  const settings = isObject(json) ? json : {}
  const raw = settings["sandbox"]
  const sandbox: Record<string, unknown> = {}
  if (raw !== undefined && !isObject(raw)) warnings.push(`${path}: sandbox: expected an object; skipped`)
  if (isObject(raw)) {
    for (const [key, value] of Object.entries(raw)) {
      if (key === "network" || key === "filesystem") {
        const schema = key === "network" ? SandboxNetwork : SandboxFilesystem
        if (!isObject(value)) {
          warnings.push(`${path}: sandbox.${key}: expected an object; skipped`)
          continue
        }
        const inner: Record<string, unknown> = {}
        for (const [name, item] of Object.entries(value)) {
          const field = (schema.fields as Record<string, Schema.Top>)[name]
          if (field === undefined) {
            warnings.push(`${path}: sandbox.${key}.${name}: not a setting agent-loop knows; ignored`)
            continue
          }
          const decoded = lenient(field, item, `${path}: sandbox.${key}.${name}`, warnings)
          if (decoded !== undefined) inner[name] = decoded
        }
        sandbox[key] = inner
        continue
      }
      const field = (SandboxSettings.fields as Record<string, Schema.Top>)[key]
      if (field === undefined) {
        warnings.push(`${path}: sandbox.${key}: not a setting agent-loop knows; ignored`)
        continue
      }
      const decoded = lenient(field, value, `${path}: sandbox.${key}`, warnings)
      if (decoded !== undefined) sandbox[key] = decoded
    }
  }
  const permissions = isObject(settings["permissions"]) ? settings["permissions"] : {}
  const additional = lenient(Schema.Array(Schema.String), permissions["additionalDirectories"], `${path}: permissions.additionalDirectories`, warnings)
  return { source: { path, sandbox: sandbox as SandboxSettings, additionalDirectories: additional ?? [] }, warnings }
}

/** Claude Code's user directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`. */
export const claudeUserDir = (env: NodeJS.ProcessEnv = process.env): string => {
  const given = env["CLAUDE_CONFIG_DIR"]
  return given !== undefined && nodePath.isAbsolute(given) ? given : nodePath.join(env["HOME"] ?? os.homedir(), ".claude")
}

/** The user's Claude Code settings file, `~/.claude/settings.json`. */
export const claudeUserSettingsPath = (env: NodeJS.ProcessEnv = process.env): string => nodePath.join(claudeUserDir(env), "settings.json")

/**
 * The sandbox settings of a Claude Code file, `undefined` when it does not exist; read confined to
 * `within` (and to the user's own files with `ownedByUser`), bounded like every settings file.
 */
export const loadClaude = (path: string, options: { readonly within: string; readonly ownedByUser?: boolean; readonly maxBytes: number }) =>
  Effect.gen(function*() {
    const read = yield* readConfined(path, options)
    if (read._tag === "Missing" || read._tag === "Skipped") return undefined
    const problem = problemOf(read, options.maxBytes)
    if (problem !== undefined) return { source: { path, sandbox: {}, additionalDirectories: [] }, warnings: [`${path}: cannot read: ${problem}`] }
    let json: unknown
    try {
      json = JSON.parse(textOf(read) ?? "")
    } catch {
      return undefined // the permission and hook reader says so (claudeSettings.ts)
    }
    return fromClaude(path, json)
  })

/** The sandbox settings every applying file gives, merged. */
export interface SandboxChoice {
  /** `--sandbox`, else the settings (`enabled: false` off, `failIfUnavailable` on), else auto. */
  readonly mode: SandboxMode
  /** Where the mode came from: `--sandbox`, a file, or `default`. */
  readonly modeFrom: string
  readonly autoAllowExec: boolean
  /** `allowUnsandboxedCommands`: `undefined` when no file set it. */
  readonly allowUnsandboxed: boolean | undefined
  readonly excludedCommands: ReadonlyArray<string>
  readonly allowedDomains: ReadonlyArray<string>
  /** Paths commands may write besides the workspace: `filesystem.allowWrite` and `permissions.additionalDirectories`. */
  readonly allowWrite: ReadonlyArray<string>
  /** `permissions.additionalDirectories` and `--add-dir` alone: the file tools reach them too. */
  readonly additionalDirectories: ReadonlyArray<string>
  readonly denyWrite: ReadonlyArray<string>
  readonly denyRead: ReadonlyArray<string>
  readonly mcpServers: boolean
  readonly hooks: boolean
}

/** Merges the sources in order (later scalars win, lists add up) under the flag `--sandbox`. */
export const choose = (sources: ReadonlyArray<SandboxSource>, flag: SandboxMode | undefined): SandboxChoice => {
  let mode: SandboxMode = "auto"
  let modeFrom = "default"
  let autoAllowExec = false
  let allowUnsandboxed: boolean | undefined
  let mcpServers = false
  let hooks = false
  const lists = {
    excludedCommands: [] as Array<string>,
    allowedDomains: [] as Array<string>,
    allowWrite: [] as Array<string>,
    additionalDirectories: [] as Array<string>,
    denyWrite: [] as Array<string>,
    denyRead: [] as Array<string>
  }
  const add = (list: Array<string>, items: ReadonlyArray<string> | undefined) => {
    for (const item of items ?? []) if (!list.includes(item)) list.push(item)
  }
  for (const { additionalDirectories, path, sandbox } of sources) {
    if (sandbox.enabled !== undefined || sandbox.failIfUnavailable !== undefined) {
      mode = sandbox.enabled === false ? "off" : sandbox.failIfUnavailable === true ? "on" : "auto"
      modeFrom = path
    }
    if (sandbox.autoAllowBashIfSandboxed !== undefined) autoAllowExec = sandbox.autoAllowBashIfSandboxed
    if (sandbox.allowUnsandboxedCommands !== undefined) allowUnsandboxed = sandbox.allowUnsandboxedCommands
    if (sandbox.mcpServers !== undefined) mcpServers = sandbox.mcpServers
    if (sandbox.hooks !== undefined) hooks = sandbox.hooks
    add(lists.excludedCommands, sandbox.excludedCommands)
    add(lists.allowedDomains, sandbox.network?.allowedDomains)
    add(lists.allowWrite, sandbox.filesystem?.allowWrite)
    add(lists.allowWrite, additionalDirectories)
    add(lists.additionalDirectories, additionalDirectories)
    add(lists.denyWrite, sandbox.filesystem?.denyWrite)
    add(lists.denyRead, sandbox.filesystem?.denyRead)
  }
  if (flag !== undefined) {
    mode = flag
    modeFrom = "--sandbox"
  }
  return { mode, modeFrom, autoAllowExec, allowUnsandboxed, mcpServers, hooks, ...lists }
}

/** The warning lines for the keys of `source` the loop does not act on. */
export const notHonoured = (source: SandboxSource): ReadonlyArray<string> =>
  keysSet(source.sandbox).filter((key) => NOT_HONOURED.includes(key)).map((key) =>
    `${source.path}: sandbox.${key} is not honoured by agent-loop; ignored`
  )

/** The platforms a sandbox runs on: bubblewrap on Linux, `sandbox-exec` on macOS. */
export const sandboxPlatform = (platform: NodeJS.Platform): "linux" | "macos" | undefined =>
  platform === "linux" ? "linux" : platform === "darwin" ? "macos" : undefined

/** The one line a run shows when its commands will not be confined; `undefined` when they will be. */
export const modeNotice = (choice: SandboxChoice, platform: NodeJS.Platform): string | undefined => {
  if (choice.mode === "off") {
    const from = choice.modeFrom === "--sandbox" ? "--sandbox off" : `sandbox.enabled: false in ${choice.modeFrom}`
    return `the sandbox is off (${from}): commands run unconfined, with all your privileges`
  }
  if (choice.mode === "auto" && sandboxPlatform(platform) === undefined) {
    return `no sandbox runs on ${platform}: commands run unconfined, with all your privileges (--sandbox on refuses to run them instead)`
  }
  return undefined
}
