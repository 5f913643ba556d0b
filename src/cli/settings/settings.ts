/**
 * From parsed flags, the environment, the settings files, the trust list, the model registry and
 * the context files to everything `run` and `chat` need, checked up front so that a bad
 * combination fails with one line before anything starts (and before any request is sent).
 *
 * Precedence: flags, then environment variables (the flags' fallbacks), then the project's
 * settings (trusted workspaces only), then the user's, then the built-in defaults.
 */
import * as nodePath from "node:path"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { DEFAULT_MAX_IMAGE_BYTES } from "../../domain/Message.ts"
import type { ModelOptions } from "../../domain/ModelOptions.ts"
import type { ModelPrice } from "../../domain/Usage.ts"
import type { McpServerConfigInput } from "../../layers/mcp/config.ts"
import { DEFAULT_MAX_BYTES_PER_SESSION } from "../../layers/FileHistoryDir.ts"
import { BuiltinToolName } from "../../tools/index.ts"
import * as Bridge from "../../layers/claudeHooks/bridge.ts"
import type { HooksSource } from "../../layers/claudeHooks/config.ts"
import * as Agents from "../config/agents.ts"
import * as ClaudeSettings from "../config/claudeSettings.ts"
import type { PermissionMode } from "../config/approvalPolicy.ts"
import * as ContextFiles from "../config/contextFiles.ts"
import * as CustomCommands from "../config/customCommands.ts"
import * as Skills from "../config/skills.ts"
import * as Plugins from "../config/plugins.ts"
import { dataDir, newSessionKey, readLastSession } from "../config/dataDir.ts"
import * as SandboxSettings from "../config/sandboxSettings.ts"
import * as SettingsFile from "../config/settingsFile.ts"
import * as Trust from "../config/trust.ts"
import type { Rule } from "../permissions/rules.ts"
import * as Permissions from "../permissions/state.ts"
import * as Providers from "../providers/providers.ts"
import * as SandboxPolicy from "../sandbox/sandboxPolicy.ts"
import * as SessionPicker from "../sessions/sessionPicker.ts"
import * as StoreChoice from "../sessions/storeChoice.ts"
import { fail } from "../terminal/failure.ts"
import { clean } from "../terminal/safeText.ts"
import { Screen } from "../terminal/screen.ts"
import { type AgentFlags, defaultTools } from "./flags.ts"
import * as ClaudeKeys from "./claudeKeys.ts"
import * as ModelOptionFlags from "./modelOptions.ts"
import * as PermissionSources from "./permissionSources.ts"
import type { Notice } from "./permissionSources.ts"
import * as ProviderChoice from "./providerChoice.ts"
import type { ProviderSettings } from "./providerChoice.ts"

/** Which provider, and how to reach it (chosen in `providerChoice.ts`). */
export type { ProviderSettings } from "./providerChoice.ts"

/** The resolved settings of an agent command. */
export interface CliSettings {
  readonly provider: ProviderSettings
  /** Record the provider's responses to this cassette. */
  readonly record: string | undefined
  readonly model: string
  /** The system prompt, context files included. */
  readonly systemPrompt: string
  readonly sessionKey: string
  /** Save the session (in `store`) and remember it for `--continue`. */
  readonly persist: boolean
  readonly dataDir: string
  /** Where sessions are saved (`--store`). */
  readonly store: StoreChoice.StoreChoice
  readonly maxIterations: number | undefined
  readonly tools: ReadonlyArray<BuiltinToolName>
  /** The sub-agents of the agent files (`agents.ts`): with any, the `subagent` tool offers them. */
  readonly agents: ReadonlyArray<Agents.Agent>
  /** The Agent Skills found (`skills.ts`): with any, the `skill` tool offers them. */
  readonly skills: ReadonlyArray<Skills.Skill>
  /** The custom slash commands of the command files (`customCommands.ts`). */
  readonly commands: ReadonlyArray<CustomCommands.CustomCommand>
  /** The MCP tools `--tools` names (`server__tool`, `server__*`); `undefined`: all of them. */
  readonly mcpTools: ReadonlyArray<string> | undefined
  /** Absolute. */
  readonly workspace: string
  /** Whether the user trusts the workspace: only then do its hooks, settings and MCP config take effect. */
  readonly trusted: boolean
  readonly approval: SettingsFile.ApprovalPolicy
  /** The permission mode the session starts in (`ClaudeKeys.modeOf`): `plan` makes its turns plan first. */
  readonly permissionMode: PermissionMode
  /** How long a question about a call waits for an answer (`--approval-timeout`, the settings' `approvalTimeout`); `undefined`: the default. */
  readonly approvalTimeout: Duration.Duration | undefined
  /** Claude Code's `env` of the settings: set for the commands and hooks the loop starts, at `announce`. */
  readonly toolEnv: Readonly<Record<string, string>>
  readonly events: string | undefined
  readonly mcpConfig: string | undefined
  /** MCP servers from the settings files, as written. */
  readonly mcpServers: Readonly<Record<string, McpServerConfigInput>>
  /** From the model registry; `undefined` leaves the loop's default. */
  readonly contextWindow: number | undefined
  readonly maxTokens: number | undefined
  /** Sampling and reasoning: the flags over the settings' `modelOptions` (their `maxTokens` wins over the registry's). */
  readonly modelOptions: ModelOptions | undefined
  /** Prices for the loop's cost; `undefined` when the model has none (its cost is unknown). */
  readonly prices: Readonly<Record<string, ModelPrice>> | undefined
  /** Start the servers of the workspace's MCP files (trusted workspaces, unless `--no-mcp-workspace`). */
  readonly mcpWorkspace: boolean
  /** The settings' `acceptsImages`; `undefined` leaves it to the model registry. */
  readonly acceptsImages: boolean | Readonly<Record<string, boolean>> | undefined
  /** The largest image a prompt or MCP result may carry. */
  readonly maxImageBytes: number
  readonly verbose: boolean
  /** The most bytes of previous file content kept for `undo` per session (the settings' `undoBudget`). */
  readonly undoBudget: number
  /** The permission rules (settings files, trusted `.claude/` files, `--allow`/`--deny`) and the rules allowed during the session. */
  readonly permissions: Permissions.Permissions
  /** Hooks in Claude Code's shape, from the settings files and trusted `.claude/` files. */
  readonly claudeHooks: ReadonlyArray<HooksSource>
  /** What those hooks tell the approval prompt. */
  readonly hookBridge: Bridge.Bridge
  /** Variables every hook script is given although they look like credentials (the settings' `hookEnv`). */
  readonly hookEnv: ReadonlyArray<string>
  /** The permission rules as read from every source, in order (the sandbox's policy is compiled from them). */
  readonly rules: ReadonlyArray<Rule>
  /** The sandbox: `--sandbox` and the `sandbox` keys of the files that may set them. */
  readonly sandbox: SandboxSettings.SandboxChoice
  /** What the sandbox confines commands to (`sandboxPolicy.ts`); `undefined` when nothing runs in it. */
  readonly sandboxInputs: SandboxPolicy.SandboxInputs | undefined
  /** Lines to show once the command starts (`announce`): a skipped untrusted workspace, an unknown model, the context files. */
  readonly notices: ReadonlyArray<Notice>
}

/** A line about the settings: a warning, or a note. */
export type { Notice } from "./permissionSources.ts"

/**
 * The built-in system prompt. It names no path or date so that a recorded cassette replays on
 * any machine.
 */
const defaultSystemPrompt = "You are agent-loop, a careful assistant working in a workspace directory on the user's " +
  "machine. Look at files with the tools before answering questions about them; paths are relative to the " +
  "workspace root. Be concise."


const decodeToolName = Schema.decodeUnknownOption(BuiltinToolName)

/**
 * Parses `--tools a,b,c`; an empty value enables none. A name with `__` is an MCP tool, named by
 * its server as `server__tool`, or `server__*` for all of a server's tools.
 */
export const parseTools = (value: string) =>
  Effect.gen(function*() {
    const names = value.split(",").map((name) => name.trim()).filter((name) => name !== "")
    const tools: Array<BuiltinToolName> = []
    const mcp: Array<string> = []
    for (const name of names) {
      if (/^[^_].*__./.test(name)) {
        if (!mcp.includes(name)) mcp.push(name)
        continue
      }
      const tool = decodeToolName(name)
      if (Option.isNone(tool)) {
        return yield* fail(
          `unknown tool "${name}" in --tools; built-in tools: ${BuiltinToolName.literals.join(", ")}; ` +
            "MCP tools: server__tool or server__*"
        )
      }
      if (!tools.includes(tool.value)) tools.push(tool.value)
    }
    return { tools, mcp }
  })

/** `--approval-timeout`, else the settings' `approvalTimeout` (seconds, at least 1). */
const approvalTimeoutOf = (flags: AgentFlags, fromFile: number | undefined) =>
  Effect.gen(function*() {
    const seconds = Option.getOrUndefined(flags.approvalTimeout) ?? fromFile
    if (seconds === undefined) return undefined
    if (seconds < 1) return yield* fail("--approval-timeout must be at least 1 (seconds)")
    return Duration.seconds(seconds)
  })

/**
 * The session of the flags: `--session`, `--resume=KEY`, one picked on the terminal (a bare
 * `--resume`), the last one of the workspace (`--continue`), or a new one.
 */
export const sessionKey = (flags: AgentFlags, data: string, workspace: string) =>
  Effect.gen(function*() {
    const given = [Option.isSome(flags.session) && "--session", Option.isSome(flags.resume) && "--resume", flags.continue && "--continue"]
      .filter((name) => name !== false)
    if (given.length > 1) return yield* fail(`${given.join(" and ")} cannot be used together`)
    if (Option.isSome(flags.session)) return flags.session.value
    if (Option.isSome(flags.resume)) {
      if (flags.resume.value !== "") return flags.resume.value
      return yield* SessionPicker.pick(flags, workspace)
    }
    if (!flags.continue) return yield* newSessionKey
    const last = yield* readLastSession(data, workspace)
    if (Option.isNone(last)) return yield* fail("no session to continue in this workspace yet: start one without --continue")
    return last.value
  })

/** The chosen provider's check of what its API refuses (loaded now, with its wire format), if it has one. */
const checkOf = (chosen: ProviderSettings) => {
  const load = chosen._tag === "live" ? Providers.find(chosen.name)?.check : undefined
  return load === undefined ? Effect.succeed(undefined) : Effect.promise(load)
}

/** The settings files that apply: the user's, then the project's when the workspace is trusted. */
const settingsFiles = (flags: Pick<AgentFlags, "settings">, workspace: string, trusted: boolean, env: NodeJS.ProcessEnv) =>
  Effect.gen(function*() {
    if (!flags.settings) return []
    const user = yield* SettingsFile.load(SettingsFile.userSettingsPath(env), { within: SettingsFile.configDir(env) })
    const project = trusted
      ? yield* SettingsFile.load(SettingsFile.projectSettingsPath(workspace), { within: workspace, ownedByUser: true })
      : Option.none()
    return [...Option.toArray(user), ...Option.toArray(project)]
  })

/**
 * The sandbox settings of the files that may set them (`sandboxSettings.ts`): Claude Code's user
 * file and the loop's, then a trusted workspace's own and Claude Code's; an untrusted workspace's
 * keys that would weaken the sandbox are named in one line each file, and taken from none.
 */
const sandboxChoice = (
  flags: Pick<AgentFlags, "settings" | "claudeSettings" | "sandbox"> & { readonly addDir?: ReadonlyArray<string> },
  files: ReadonlyArray<SettingsFile.LoadedSettings>,
  workspace: string,
  trusted: boolean,
  env: NodeJS.ProcessEnv,
  notices: Array<Notice>
) =>
  Effect.gen(function*() {
    const sources: Array<SandboxSettings.SandboxSource> = []
    const claude = flags.settings && flags.claudeSettings
    const claudeFile = (path: string, within: string, ownedByUser: boolean) =>
      SandboxSettings.loadClaude(path, { within, ownedByUser, maxBytes: SettingsFile.MAX_SETTINGS_BYTES })
    if (claude) {
      const user = yield* claudeFile(SandboxSettings.claudeUserSettingsPath(env), SandboxSettings.claudeUserDir(env), false)
      if (user !== undefined) {
        for (const warning of user.warnings) notices.push({ level: "warn", text: warning })
        sources.push(user.source)
      }
    }
    const ownSource = (file: SettingsFile.LoadedSettings): SandboxSettings.SandboxSource => ({
      path: file.path,
      sandbox: file.settings.sandbox ?? {},
      additionalDirectories: file.settings.permissions?.additionalDirectories ?? []
    })
    // the user's file, then (trusted only) the workspace's: settingsFiles read them in that order
    sources.push(...files.map(ownSource))
    const claudeWorkspace = ClaudeSettings.claudeSettingsPaths(workspace)
    if (trusted && claude) {
      for (const path of claudeWorkspace) {
        const found = yield* claudeFile(path, workspace, true)
        if (found === undefined) continue
        for (const warning of found.warnings) notices.push({ level: "warn", text: warning })
        sources.push(found.source)
      }
    }
    if (!trusted && flags.settings) {
      // read only to say what was not taken: a repository cannot turn the sandbox off or widen it
      for (const path of [SettingsFile.projectSettingsPath(workspace), ...claudeWorkspace]) {
        const found = yield* claudeFile(path, workspace, true)
        const ignored = found === undefined ? [] : SandboxSettings.weakening(found.source)
        if (ignored.length === 0) continue
        notices.push({
          level: "warn",
          text: `ignored ${ignored.join(", ")} of ${path}: the workspace is not trusted, so its settings cannot weaken the sandbox`
        })
      }
    }
    for (const source of sources) {
      for (const text of SandboxSettings.notHonoured(source)) notices.push({ level: "warn", text })
    }
    // Claude Code's --add-dir: as permissions.additionalDirectories, the user's own word
    if ((flags.addDir ?? []).length > 0) sources.push({ path: "--add-dir", sandbox: {}, additionalDirectories: (flags.addDir ?? []).map((dir) => nodePath.resolve(dir)) })
    return SandboxSettings.choose(sources, Option.getOrUndefined(flags.sandbox))
  })

/** The flags the sandbox's settings depend on (`agent-loop sandbox status` takes them alone). */
export type SandboxFlags = Pick<AgentFlags, "workspace" | "settings" | "claudeSettings" | "allow" | "deny" | "sandbox" | "verbose">

/**
 * What the sandbox of a run in the flags' workspace would be given, without the rest of a run's
 * settings (no model needed): the workspace, its trust, the permission rules and the sandbox keys.
 */
export const resolveSandbox = (flags: SandboxFlags, env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const workspace = nodePath.resolve(Option.getOrElse(flags.workspace, () => "."))
    const trusted = yield* Trust.isTrusted(workspace, env)
    const files = yield* settingsFiles(flags, workspace, trusted, env)
    const notices: Array<Notice> = []
    const { permissions, rules } = yield* PermissionSources.permissionsAndHooks(flags, files, workspace, trusted, env, notices)
    const sandbox = yield* sandboxChoice(flags, files, workspace, trusted, env, notices)
    const untrusted = trusted ? undefined : yield* Trust.skippedWarning(workspace)
    if (untrusted !== undefined) notices.unshift({ level: "warn", text: untrusted })
    return { workspace, trusted, rules, permissions, sandbox, notices }
  })

/** Resolves the flags of `run` or `chat`; an impossible combination fails with one line. */
export const resolve = (flags: AgentFlags, env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const workspace = nodePath.resolve(Option.getOrElse(flags.workspace, () => "."))
    const trusted = yield* Trust.isTrusted(workspace, env)
    const files = yield* settingsFiles(flags, workspace, trusted, env)
    const { settings, mcpServers } = SettingsFile.merge(files)
    // every level's rules and hooks, and the Claude Code files whose other keys apply (the provider's key may come from one)
    const levelNotices: Array<Notice> = []
    const { claude, hooks: claudeHooks, permissions, rules } = yield* PermissionSources.permissionsAndHooks(flags, files, workspace, trusted, env, levelNotices)
    const chosen = yield* ProviderChoice.provider(flags, settings, env, ClaudeKeys.helperKey(claude, workspace))
    const data = dataDir(env)
    if (flags.ephemeral && (flags.continue || Option.isSome(flags.resume))) return yield* fail("--ephemeral sessions cannot be continued")
    // Claude Code's model only where nothing of the loop's own names one (and only then a word on it)
    const claudeModel = chosen._tag === "live" && Option.isNone(flags.model) && settings.model === undefined ? ClaudeKeys.modelOf(claude, { name: chosen.name, registry: Providers.find(chosen.name)?.models }, levelNotices) : undefined
    const name = yield* ProviderChoice.model(flags, chosen, settings.model === undefined && claudeModel !== undefined ? { ...settings, model: claudeModel } : settings)
    const limits = ProviderChoice.modelLimits(name, chosen, settings)
    const contextFiles = flags.contextFiles ? yield* ContextFiles.discover(workspace, env, settings.contextFiles) : []
    const base = Option.getOrUndefined(flags.system) ?? settings.systemPrompt ?? defaultSystemPrompt
    const untrusted = trusted ? undefined : yield* Trust.skippedWarning(workspace)
    const notices: Array<Notice> = []
    if (untrusted !== undefined) notices.push({ level: "warn", text: untrusted })
    if (limits.note !== undefined) notices.push({ level: "note", text: limits.note })
    if (chosen._tag === "live" && chosen.note !== undefined) notices.push({ level: "note", text: chosen.note })
    notices.push(...levelNotices)
    const approval = ClaudeKeys.approvalOf(flags, settings.approval, claude, notices)
    const permissionMode = ClaudeKeys.modeOf(flags, approval, claude)
    const toolEnv = ClaudeKeys.envOf(claude, notices)
    const sandbox = yield* sandboxChoice(flags, files, workspace, trusted, env, notices)
    const found = yield* Agents.discover(workspace, trusted, env)
    // `model: sonnet` is a model of the provider in use, or the agent is skipped: never sent as a name
    const agents = Agents.withModels(found.agents, chosen._tag === "live"
      ? { name: chosen.name, registry: Providers.find(chosen.name)?.models }
      : { name: "replay", registry: undefined })
    for (const problem of [...found.problems, ...agents.problems]) notices.push({ level: "warn", text: `skipped agent ${problem.path}: ${problem.message}` })
    const skills = yield* Skills.discover(workspace, trusted, env)
    for (const problem of skills.problems) notices.push({ level: "warn", text: `skipped skill ${problem.path}: ${problem.message}` })
    // the added plugins' MCP servers, after the settings' own of the same name
    const pluginMcp = yield* Plugins.mcpServers(workspace, trusted, env)
    for (const problem of pluginMcp.problems) notices.push({ level: "warn", text: `skipped plugin MCP servers ${problem.path}: ${problem.message}` })
    // and their hooks, run as the user's own: after the settings' groups
    const pluginHooks = yield* Plugins.hooks(workspace, trusted, env)
    for (const problem of pluginHooks.problems) notices.push({ level: "warn", text: `skipped plugin hooks ${problem.path}: ${problem.message}` })
    const foundCommands = yield* CustomCommands.discover(workspace, trusted, env)
    const commands = CustomCommands.withModels(foundCommands.commands, chosen._tag === "live"
      ? { name: chosen.name, registry: Providers.find(chosen.name)?.models }
      : { name: "replay", registry: undefined })
    for (const problem of [...foundCommands.problems, ...commands.problems]) notices.push({ level: "warn", text: `skipped command ${problem.path}: ${problem.message}` })
    if (flags.verbose) {
      notices.push({ level: "note", text: `context files: ${contextFiles.length === 0 ? "none" : contextFiles.map((file) => file.path).join(", ")}` })
    }
    const resolved: CliSettings = {
      provider: chosen,
      record: Option.getOrUndefined(Option.map(flags.record, (file) => nodePath.resolve(file))),
      model: name,
      systemPrompt: [ContextFiles.withContextFiles(base, contextFiles), ...Option.toArray(flags.appendSystemPrompt)].join("\n\n"),
      sessionKey: yield* sessionKey(flags, data, workspace),
      persist: !flags.ephemeral,
      dataDir: data,
      store: yield* StoreChoice.resolve(flags),
      maxIterations: Option.getOrUndefined(flags.maxIterations),
      ...(Option.isSome(flags.tools)
        ? yield* Effect.map(parseTools(flags.tools.value), ({ mcp, tools }) => ({ tools, mcpTools: mcp }))
        : { tools: settings.tools ?? defaultTools, mcpTools: undefined }),
      agents: agents.agents,
      skills: skills.skills,
      commands: commands.commands,
      workspace,
      trusted,
      approval,
      permissionMode,
      approvalTimeout: yield* approvalTimeoutOf(flags, settings.approvalTimeout),
      toolEnv,
      events: Option.getOrUndefined(Option.map(flags.events, (file) => nodePath.resolve(file))),
      mcpConfig: Option.getOrUndefined(flags.mcpConfig),
      mcpServers: { ...pluginMcp.servers, ...mcpServers },
      // A workspace's MCP servers run programs it names: only a trusted one's are started.
      mcpWorkspace: flags.mcpWorkspace && trusted,
      contextWindow: limits.contextWindow,
      maxTokens: limits.maxTokens,
      modelOptions: yield* ModelOptionFlags.resolve(flags, settings.modelOptions, yield* checkOf(chosen), limits.maxTokens),
      prices: limits.prices,
      acceptsImages: settings.acceptsImages,
      maxImageBytes: settings.maxImageBytes ?? DEFAULT_MAX_IMAGE_BYTES,
      verbose: flags.verbose,
      undoBudget: settings.undoBudget ?? DEFAULT_MAX_BYTES_PER_SESSION,
      permissions,
      rules,
      sandbox,
      sandboxInputs: undefined,
      claudeHooks: [...claudeHooks, ...pluginHooks.sources],
      hookBridge: Bridge.make(),
      hookEnv: settings.hookEnv ?? [],
      notices
    }
    // once per session: commands run with all the user's privileges
    const confined = resolved.tools.includes("exec") || sandbox.mcpServers || sandbox.hooks
    const line = SandboxSettings.modeNotice(sandbox, process.platform)
    if (confined && line !== undefined) notices.push({ level: "warn", text: line })
    if (!confined || line !== undefined) return resolved
    const sandboxInputs = yield* SandboxPolicy.compile({ workspace, rules, sandbox })
    for (const text of sandboxInputs.notes) notices.push({ level: "warn", text })
    return { ...resolved, sandboxInputs }
  })

/**
 * Shows the notices of resolved settings on stderr, once, when the command has its input and
 * starts, and sets the settings' `env` for the commands and hooks it will start.
 */
export const announce = (settings: CliSettings) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    for (const notice of settings.notices) yield* screen.line(`agent-loop: ${notice.level}: ${clean(notice.text)}`)
    ClaudeKeys.applyEnv(settings.toolEnv)
  })
