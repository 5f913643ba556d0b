/**
 * Settings files: `$XDG_CONFIG_HOME/agent-loop/settings.json` (the user's) and
 * `.agent-loop/settings.json` in the workspace (the project's, read only in a trusted workspace).
 * Both have the same shape; a project value overrides the user's, and flags and environment
 * variables override both.
 *
 * @example
 * ```json
 * { "provider": "openai", "baseUrl": "http://localhost:11434/v1", "model": "qwen3",
 *   "tools": ["read_file", "grep", "exec"], "approval": "ask",
 *   "prices": { "qwen3": { "inputPerMillion": 0, "outputPerMillion": 0 } },
 *   "mcpServers": { "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."] } } }
 * ```
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { ModelOptions, merge as mergeModelOptions } from "../../domain/ModelOptions.ts"
import { ModelPrice } from "../../domain/Usage.ts"
import { HooksConfig } from "../../layers/claudeHooks/config.ts"
import { EnvName } from "../../layers/fileHooks/manifest.ts"
import { xdgBase } from "../../layers/fileHooks/discover.ts"
import { type McpServerConfigInput, McpServers } from "../../layers/mcp/config.ts"
import { problemOf, readConfined, textOf } from "../../layers/internal/readConfined.ts"
import { BuiltinToolName } from "../../tools/index.ts"
import { providers } from "../providers/providers.ts"
import { fail } from "../terminal/failure.ts"
import { SandboxSettings } from "./sandboxSettings.ts"

import { ApprovalPolicy } from "./approvalPolicy.ts"

export { ApprovalPolicy }

/**
 * The providers a settings file may name: any of `--provider`'s but `replay` (which needs a
 * cassette, so it is a flag only).
 */
export const SettingsProvider = Schema.NonEmptyString.check(
  Schema.makeFilter((name: string) => providers.some((provider) => provider.name === name) || `one of ${providers.map((p) => p.name).join(", ")}`)
)

/** `allow`, `ask` and `deny` lists of permission rules. */
export const PermissionLists = Schema.Struct({
  allow: Schema.optionalKey(Schema.Array(Schema.String)),
  ask: Schema.optionalKey(Schema.Array(Schema.String)),
  deny: Schema.optionalKey(Schema.Array(Schema.String)),
  /** Claude Code's: directories beside the workspace; here, places the sandbox lets commands write (see `sandbox`). */
  additionalDirectories: Schema.optionalKey(Schema.Array(Schema.String))
})
export type PermissionLists = typeof PermissionLists.Type

/** A context file's name: a plain file name, never a path, so a setting cannot point outside each directory. */
const ContextFileName = Schema.String.check(
  Schema.isPattern(/^(?!\.\.?$)[^/\\\0]+$/, { expected: "a file name such as GEMINI.md, without a directory" })
)

/** The contents of a settings file; every field is optional. */
export const Settings = Schema.Struct({
  provider: Schema.optionalKey(SettingsProvider.annotate({ description: "the provider, as `--provider`: any of its names but `replay`, which is a flag only" })),
  baseUrl: Schema.optionalKey(Schema.NonEmptyString.annotate({ description: "the server's URL, as `--base-url`" })),
  project: Schema.optionalKey(Schema.NonEmptyString.annotate({ description: "the Google Cloud project of the `vertex` provider, as `--project`" })),
  location: Schema.optionalKey(Schema.NonEmptyString.annotate({ description: "the Vertex AI region of the `vertex` provider, or `global`, as `--location`" })),
  apiKeyEnv: Schema.optionalKey(Schema.NonEmptyString.annotate({
    description: "the variable the provider's key is read from, instead of its own (`GROQ_API_KEY`, …)"
  })),
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String).annotate({
    description: "extra headers on every provider request, e.g. OpenRouter's `HTTP-Referer` and `X-Title`"
  })),
  region: Schema.optionalKey(Schema.NonEmptyString.annotate({ description: "Bedrock's AWS region; default `AWS_REGION`, then `AWS_DEFAULT_REGION`" })),
  apiVersion: Schema.optionalKey(Schema.NonEmptyString.annotate({
    description: "Azure OpenAI's dated `api-version`, which sends requests to the deployment URLs; default `OPENAI_API_VERSION`, else the v1 API"
  })),
  model: Schema.optionalKey(Schema.NonEmptyString.annotate({ description: "the model, as `--model`" })),
  tools: Schema.optionalKey(Schema.Array(BuiltinToolName).annotate({ description: "the built-in tools to enable, as `--tools`" })),
  approval: Schema.optionalKey(ApprovalPolicy.annotate({ description: "calls that need approval, as `--approval`" })),
  approvalTimeout: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({
    description: "seconds a question about a call waits for an answer (at a terminal, in an editor) before the call is denied, as `--approval-timeout`; default 60"
  })),
  systemPrompt: Schema.optionalKey(Schema.String.annotate({ description: "the system prompt instead of the built-in one, as `--system`" })),
  modelOptions: Schema.optionalKey(ModelOptions.annotate({
    description: "sampling and reasoning (`temperature`, `topP`, `stop`, `seed`, `maxTokens`, `reasoning`), as `modelOptions` in the library's configuration; merged field by field"
  })),
  prices: Schema.optionalKey(Schema.Record(Schema.String, ModelPrice).annotate({
    description: "prices per million tokens by model name, over the built-in ones; merged by name"
  })),
  mcpServers: Schema.optionalKey(McpServers.annotate({ description: "MCP servers, as in an `{\"mcpServers\": …}` file; merged by name" })),
  acceptsImages: Schema.optionalKey(Schema.Union([Schema.Boolean, Schema.Record(Schema.String, Schema.Boolean)]).annotate({
    description: "which models accept images, over the built-in registry: `true`/`false` for all, or by model name"
  })),
  contextFiles: Schema.optionalKey(Schema.Array(ContextFileName).annotate({
    description: "the context file names looked for in each directory, in order; default `[\"AGENTS.md\", \"CLAUDE.md\"]` (add `GEMINI.md`, or `[]` for none)"
  })),
  maxImageBytes: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({
    description: "the largest image (bytes) a prompt or an MCP tool result may carry; default 5 MiB"
  })),
  undoBudget: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).annotate({
    description: "the most bytes of previous file content `agent-loop undo` keeps per session (oldest turns dropped first); default 64 MiB"
  })),
  permissions: Schema.optionalKey(PermissionLists.annotate({
    description: "permission rules in Claude Code's syntax: `allow`, `ask` and `deny` lists such as `exec(git diff:*)` or `Read(src/**)`; the lists of every file apply"
  })),
  sandbox: Schema.optionalKey(SandboxSettings.annotate({
    description: "the sandbox `exec` runs commands in, in Claude Code's shape (`enabled`, `autoAllowBashIfSandboxed`, `excludedCommands`, `allowUnsandboxedCommands`, `network.allowedDomains`, `filesystem`, …) and agent-loop's `mcpServers` and `hooks`; see the sandbox keys below"
  })),
  hooks: Schema.optionalKey(HooksConfig.annotate({
    description: "hooks in Claude Code's shape (`PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `Stop`, …); the hooks of every file apply"
  })),
  hookEnv: Schema.optionalKey(Schema.Array(EnvName).annotate({
    description: "variables every hook script is given although they look like credentials (`GITHUB_TOKEN`, …), which hooks otherwise never see, as `exec` does not; the names of every file apply"
  }))
})
export type Settings = typeof Settings.Type

/** A settings file that was read: its decoded values, and its MCP servers as written (for `McpTools.layer`). */
export interface LoadedSettings {
  readonly path: string
  readonly settings: Settings
  readonly mcpServers: Readonly<Record<string, McpServerConfigInput>>
}

/** The user's configuration directory of agent-loop: `$XDG_CONFIG_HOME/agent-loop`, else `~/.config/agent-loop`. */
export const configDir = (env: NodeJS.ProcessEnv = process.env): string =>
  nodePath.join(xdgBase("XDG_CONFIG_HOME", ".config", env), "agent-loop")

/** Where the user's settings live. */
export const userSettingsPath = (env: NodeJS.ProcessEnv = process.env): string => nodePath.join(configDir(env), "settings.json")

/** Where a workspace's settings live. */
export const projectSettingsPath = (workspace: string): string => nodePath.join(workspace, ".agent-loop", "settings.json")

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()
const decode = Schema.decodeUnknownResult(Settings)

/** One line naming the field at fault and why; values under `env` are never echoed (they may be secrets). */
const describeIssue = (issue: SchemaIssue.Issue): string => {
  const first = formatter(issue).issues[0]
  const path = (first?.path ?? []).map(String)
  const field = path.length === 0 ? "(top level)" : path.join(".")
  const message = first === undefined
    ? "invalid"
    : path.includes("env")
    ? "expected a string"
    : first.message === "Expected no excess property" || first.message.startsWith("Unexpected key")
    ? "unknown setting"
    : first.message
  return `${field}: ${message.split("\n")[0]}`
}

/** Decodes a settings file's text; a bad one fails with `PATH: FIELD: REASON`. */
export const parse = (path: string, text: string) =>
  Effect.gen(function*() {
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (error) {
      // the parser's message may quote the file, which may hold secrets: only its position is kept
      const at = /position \d+(?: \(line \d+ column \d+\))?/.exec(error instanceof Error ? error.message : "")?.[0]
      return yield* fail(`${path}: not valid JSON${at === undefined ? "" : ` (${at})`}`)
    }
    const decoded = decode(json, { onExcessProperty: "error" })
    if (Result.isFailure(decoded)) return yield* fail(`${path}: ${describeIssue(decoded.failure.issue)}`)
    // the decoding checked that the servers as written have the encoded shape
    const raw = (json as { readonly mcpServers?: Readonly<Record<string, McpServerConfigInput>> }).mcpServers ?? {}
    const loaded: LoadedSettings = { path, settings: decoded.success, mcpServers: raw }
    return loaded
  })

/** The largest settings file read; a real one is a few hundred bytes. */
export const MAX_SETTINGS_BYTES = 1024 * 1024

/**
 * Reads the settings file at `path`, inside `within` (links resolved) and, with `ownedByUser`, only
 * when it and its directory belong to the user or root (`readConfined`). A missing file is `None`,
 * and so is one skipped (with a warning naming it); an unreadable, too large or bad one fails
 * with one line.
 */
export const load = (path: string, options: { readonly within: string; readonly ownedByUser?: boolean }) =>
  Effect.gen(function*() {
    const read = yield* readConfined(path, { ...options, maxBytes: MAX_SETTINGS_BYTES })
    if (read._tag === "Missing" || read._tag === "Skipped") return Option.none<LoadedSettings>()
    const problem = problemOf(read, MAX_SETTINGS_BYTES)
    if (problem !== undefined) return yield* fail(`${path}: cannot read: ${problem}`)
    return Option.some(yield* parse(path, textOf(read) ?? ""))
  })

/**
 * The settings of `layers` merged in order, later ones winning; `prices` and `mcpServers` merge by
 * name, `modelOptions` by field, and the names of `hookEnv` add up.
 */
export const merge = (
  layers: ReadonlyArray<LoadedSettings>
): { readonly settings: Omit<Settings, "mcpServers">; readonly mcpServers: Readonly<Record<string, McpServerConfigInput>> } => {
  let settings: Omit<Settings, "mcpServers"> = {}
  let mcpServers: Record<string, McpServerConfigInput> = {}
  for (const layer of layers) {
    // the servers are taken as written (below); the decoded ones only validated the file
    const { mcpServers: _decoded, ...values } = layer.settings
    const prices = values.prices === undefined ? settings.prices : { ...settings.prices, ...values.prices }
    const modelOptions = mergeModelOptions(settings.modelOptions, values.modelOptions)
    // every file's names pass: a workspace adds the variables its own hooks need to the user's
    const hookEnv = values.hookEnv === undefined ? settings.hookEnv : [...new Set([...(settings.hookEnv ?? []), ...values.hookEnv])]
    settings = {
      ...settings,
      ...values,
      ...(prices === undefined ? {} : { prices }),
      ...(modelOptions === undefined ? {} : { modelOptions }),
      ...(hookEnv === undefined ? {} : { hookEnv })
    }
    mcpServers = { ...mcpServers, ...layer.mcpServers }
  }
  return { settings, mcpServers }
}
