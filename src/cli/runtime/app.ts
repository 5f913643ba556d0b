/**
 * The layer behind `run` and `chat`: the chosen provider (optionally recording), the built-in
 * tools confined to the workspace plus MCP tools, the session store, the loop with the model's
 * limits and prices, file hooks (the workspace's only when it is trusted), and the hooks in
 * Claude Code's shape of the settings files. What only some runs need — the HTTP client (undici),
 * a network provider's module, the MCP client — is loaded when its layer is built, so `run` of a
 * cassette with the built-in tools loads none of it.
 */
import * as os from "node:os"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Path from "effect/Path"
import * as References from "effect/References"
import type * as HttpClient from "effect/http/HttpClient"
import type * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import type * as ClaudeHooks from "../../layers/claudeHooks/layer.ts"
import * as FileHistoryDir from "../../layers/FileHistoryDir.ts"
import * as FileHooks from "../../layers/FileHooks.ts"
import type * as McpTools from "../../layers/McpTools.ts"
import * as Metrics from "../../layers/Metrics.ts"
import * as Replay from "../../layers/providers/Replay.ts"
import * as SandboxNone from "../../layers/sandbox/SandboxNone.ts"
import * as SessionStoreMemory from "../../layers/SessionStoreMemory.ts"
import * as AgentLoopLive from "../../programs/AgentLoopLive.ts"
import type { InvalidConfig } from "../../domain/errors.ts"
import * as ModelOptions from "../../domain/ModelOptions.ts"
import type { EventBus } from "../../services/EventBus.ts"
import { ExternalTerminal, type ExternalTerminalShape } from "../../services/ExternalTerminal.ts"
import { Provider } from "../../services/Provider.ts"
import * as ToolRegistryLive from "../../layers/ToolRegistry.ts"
import { builtinTools, gitHooksDirectory, locationsWithin } from "../../tools/index.ts"
import { makeExitPlanMode, type PlanReviewer } from "../../tools/exitPlanMode.ts"
import { subagentWith } from "../../tools/subagent.ts"
import type { SessionStore } from "../../services/SessionStore.ts"
import * as WorkspaceLive from "../../layers/Workspace.ts"
import { transcriptsDir, undoDir } from "../config/dataDir.ts"
import { cliOAuth } from "../config/mcpOAuth.ts"
import { userMcpFiles } from "../config/userMcpFiles.ts"
import { configDir } from "../config/settingsFile.ts"
import { skillTool } from "../config/skillTool.ts"
import * as PlanSlot from "./planSlot.ts"
import * as Providers from "../providers/providers.ts"
import * as SandboxLayer from "../sandbox/sandboxLayer.ts"
import { settingPath } from "../sandbox/sandboxPolicy.ts"
import * as SandboxSpawner from "../sandbox/sandboxSpawner.ts"
import * as StoreChoice from "../sessions/storeChoice.ts"
import type { CliSettings, ProviderSettings } from "../settings/settings.ts"
import type { CliFailure } from "../terminal/failure.ts"
import * as Telemetry from "./telemetry.ts"

/** What the agent commands take from the platform: `main.ts` provides `NodeServices.layer` once, for every command. */
export type Platform = FileSystem.FileSystem | Path.Path | ChildProcessSpawner.ChildProcessSpawner

/** undici's HTTP client for what talks HTTP (network providers, MCP servers), loaded when it is built. */
const httpClient: Layer.Layer<HttpClient.HttpClient> = Layer.unwrap(
  Effect.map(Effect.promise(() => import("@effect/platform-node/NodeHttpClient")), (module) => module.layerUndici)
)

const liveProvider = (chosen: ProviderSettings): Layer.Layer<Provider, InvalidConfig, FileSystem.FileSystem> => {
  if (chosen._tag === "replay") return Replay.replay(chosen.cassette)
  // the key is passed explicitly: it was taken out of the environment at start (providerKeys.ts)
  const entry = Providers.find(chosen.name)
  if (entry === undefined) return Layer.effect(Provider, Effect.die(new Error(`unknown provider ${chosen.name}`))) // settings.ts refuses it first
  return Layer.provide(entry.layer(chosen), httpClient)
}

/** The provider of the settings; `--record` wraps it so every call lands in the cassette. */
const provider = (settings: CliSettings): Layer.Layer<Provider, InvalidConfig, FileSystem.FileSystem> => {
  const live = liveProvider(settings.provider)
  return settings.record === undefined ? live : Replay.record(settings.record, { fresh: true }).pipe(Layer.provide(live))
}

/**
 * How long a command `exec` runs may take to exit after SIGTERM before SIGKILL: short, so that
 * Ctrl-C and SIGTERM end the CLI within two seconds even when the command ignores SIGTERM.
 */
export const EXEC_KILL_GRACE = "500 millis"

/**
 * Where `write_file` and `edit_file` ask approval besides the workspace's own protected locations:
 * the CLI's configuration (settings, trusted workspaces), its data and the user's hooks directory
 * when they sit inside the workspace (running from `~`), and the directory git runs this
 * repository's hooks from when `core.hooksPath` names one outside `.git`.
 */
const protectedLocations = (settings: CliSettings) =>
  Effect.gen(function*() {
    // only the writing tools ask: a run without them does not start git
    if (!settings.tools.some((tool) => tool === "write_file" || tool === "edit_file")) return []
    const gitHooks = yield* gitHooksDirectory(settings.workspace)
    const userHooks = FileHooks.resolveDirs({ workDir: settings.workspace }).userDir
    return yield* locationsWithin(settings.workspace, [configDir(), settings.dataDir, userHooks, ...Option.toArray(gitHooks)])
  })

/**
 * The built-in tools of `--tools`, then the tools of the MCP servers of the settings files, the
 * workspace's MCP files (`.vscode/mcp.json`, `.cursor/mcp.json`, `.mcp.json`: trusted workspaces,
 * unless `--no-mcp-workspace`) and `--mcp-config`, later ones replacing a server of the same name,
 * narrowed by `--tools` (a pattern that matches nothing is a warning) and renamed where they
 * collide. A server that fails is a warning; tools needing approval go through the same approval
 * as `exec`.
 * With `--verbose` the servers' debug log (all of their stderr, ignored stdout lines) is shown:
 * the log level is lowered for the MCP layer only, whose readers are forked while it is built.
 */
/** A loaded skill's `allowed-tools`, allowed for the rest of the process (as Claude Code while the skill is active). */
const loadedSkill = (settings: CliSettings, name: string) => {
  const skill = settings.skills.find((s) => s.name === name)
  if (skill?.allowedTools !== undefined) settings.permissions.allowForSession(skill.allowedTools, `allowed-tools of ${skill.path}`)
}

const tools = (settings: CliSettings, files: LayerOptions["files"], terminal: LayerOptions["terminal"], planReview: LayerOptions["planReview"]) => {
  const builtins = Layer.unwrap(Effect.map(protectedLocations(settings), (protect) =>
    ToolRegistryLive.layer([
      ...builtinTools({
        enable: settings.tools,
        exec: { killGrace: EXEC_KILL_GRACE },
        // a private or loopback address only by a rule the user wrote naming the host (rules.reachesPrivate)
        webFetch: { allowPrivate: settings.permissions.reachesPrivate },
        protect
      }),
      // offered only to turns in plan mode: the plan goes to the command's question
      makeExitPlanMode(planReview ?? PlanSlot.forChat.review),
      // the agent files' sub-agents, unless every tool is turned off (--tools "")
      ...(settings.agents.length > 0 && (settings.tools.length > 0 || settings.mcpTools === undefined || settings.mcpTools.length > 0)
        ? [subagentWith(settings.agents)]
        : []),
      // the Agent Skills, offered by name and description; a loaded skill's allowed-tools apply from then on
      ...(settings.skills.length > 0 && (settings.tools.length > 0 || settings.mcpTools === undefined || settings.mcpTools.length > 0)
        ? [skillTool(settings.skills, { onLoad: (name) => Effect.sync(() => loadedSkill(settings, name)) })]
        : [])
    ]))).pipe(
    // the file tools apply the deny and ask rules to a link's target and to what grep and list_dir walk through
    // --add-dir and permissions.additionalDirectories: the file tools reach them too, under the same rules
    Layer.provide(WorkspaceLive.layer(settings.workspace, {
      pathRule: settings.permissions.pathRule,
      additionalDirectories: settings.sandbox.additionalDirectories.map((dir) => settingPath(dir, settings.workspace, os.homedir())),
      ...(files === undefined ? {} : { files })
    })),
    // what the file tools replace is kept for `agent-loop undo`, for sessions that are saved
    settings.persist ? Layer.provide(FileHistoryDir.layer({ directory: undoDir(settings.dataDir), maxBytesPerSession: settings.undoBudget })) : (l) => l,
    // exec's commands in an editor's terminal, for the sessions that use one (agent-loop acp --client-terminal)
    terminal === undefined ? (l) => l : Layer.provide(Layer.succeed(ExternalTerminal, terminal))
  )
  const sources = {
    userFiles: userMcpFiles(),
    project: settings.workspace,
    servers: settings.mcpServers,
    files: settings.mcpConfig === undefined ? [] : [settings.mcpConfig],
    ...(settings.mcpWorkspace ? { workspace: settings.workspace } : {})
  }
  const none = sources.userFiles.length === 0 && Object.keys(sources.servers).length === 0 && sources.files.length === 0 && !settings.mcpWorkspace
  // with nothing configured the layer still runs when --tools names MCP tools: to warn that they match nothing
  if (none && (settings.mcpTools ?? []).length === 0) return builtins
  const mcp = Layer.unwrap(Effect.map(Effect.promise(() => import("../../layers/McpTools.ts")), (module: typeof McpTools) =>
    module.layerFromSources(sources, {
      maxImageBytes: settings.maxImageBytes,
      workspace: settings.workspace,
      enableName: "--tools",
      // what `agent-loop mcp login` stored: remote servers get their tokens, refreshed as they expire
      oauth: cliOAuth(settings.dataDir),
      ...(settings.mcpTools === undefined ? {} : { enable: settings.mcpTools })
    }))).pipe(Layer.provide(httpClient), (layer) => SandboxSpawner.confine(layer, settings.sandbox.mcpServers, settings.workspace))
  return (settings.verbose ? Layer.provide(mcp, Layer.succeed(References.MinimumLogLevel, "Debug")) : mcp).pipe(
    Layer.provideMerge(builtins)
  )
}

/**
 * The sandbox of the run (`sandboxLayer.ts`), with the CLI's own directories that lie inside the
 * workspace (running from `~`) read-only in it too.
 */
const sandbox = (settings: CliSettings) =>
  settings.sandbox.mode === "off" || settings.sandboxInputs === undefined ? SandboxNone.layer : Layer.unwrap(Effect.map(
    locationsWithin(settings.workspace, [configDir(), settings.dataDir, FileHooks.resolveDirs({ workDir: settings.workspace }).userDir]),
    (protect) => SandboxLayer.layer({ sandbox: settings.sandbox, inputs: settings.sandboxInputs, protect })
  ))

const store = (settings: CliSettings) =>
  settings.persist ? StoreChoice.layer(settings.store, settings.dataDir) : SessionStoreMemory.layer()

/** What `layer` may be given instead of building it from the settings. */
export interface LayerOptions {
  /** Record the loop's metrics (default: when OpenTelemetry export is on). */
  readonly metrics?: boolean
  /** The session store, e.g. on a database connection pool the caller shares with something else. */
  readonly store?: Layer.Layer<SessionStore, CliFailure>
  /** Where the file tools read and write, given the disk (`agent-loop acp`: the editor's buffers). */
  readonly files?: WorkspaceLive.WorkspaceOptions["files"]
  /** Where `exec` runs commands instead of the sandbox, for the sessions it takes (`agent-loop acp --client-terminal`). */
  readonly terminal?: ExternalTerminalShape
  /** Who accepts a plan made in plan mode (`planSlot.ts`, `output/planReview.ts`); default: the chat's question, once it is there (else the plan ends its turn). */
  readonly planReview?: PlanReviewer
}

/**
 * Everything an agent command runs on; with `metrics` (by default when OpenTelemetry export is on)
 * the loop's metrics are recorded from its event bus.
 */
export const layer = (settings: CliSettings, options: LayerOptions = {}) => {
  // the registry's output limit, under the user's own (`--max-tokens`, the settings' modelOptions)
  const modelOptions = ModelOptions.merge(settings.maxTokens === undefined ? undefined : { maxTokens: settings.maxTokens }, settings.modelOptions)
  const loop = AgentLoopLive.layer({
    model: settings.model,
    systemPrompt: settings.systemPrompt,
    ...(settings.maxIterations === undefined ? {} : { maxIterations: settings.maxIterations }),
    ...(settings.contextWindow === undefined ? {} : { contextWindow: settings.contextWindow }),
    ...(modelOptions === undefined ? {} : { modelOptions }),
    ...(settings.prices === undefined ? {} : { prices: settings.prices }),
    ...(settings.acceptsImages === undefined ? {} : { acceptsImages: settings.acceptsImages }),
    maxImageBytes: settings.maxImageBytes
  }).pipe(Layer.provide(provider(settings)), Layer.provideMerge(Layer.merge(tools(settings, options.files, options.terminal, options.planReview), options.store ?? store(settings))))
  // the workspace's own hooks run only in a trusted workspace (trust.ts); so do the hooks of its settings
  const fileHooks = FileHooks.layer({ workDir: settings.workspace, project: settings.trusted, bridge: settings.hookBridge, passEnv: settings.hookEnv })
  const unconfinedHooks = settings.claudeHooks.length === 0
    ? fileHooks
    : Layer.merge(
      fileHooks,
      // loaded only when a settings file has hooks
      Layer.unwrap(
        Effect.promise(() => import("../../layers/claudeHooks/layer.ts")).pipe(
          Effect.map((m: typeof ClaudeHooks) => m.layer({
            sources: settings.claudeHooks,
            projectDir: settings.workspace,
            bridge: settings.hookBridge,
            passEnv: settings.hookEnv,
            ...(settings.persist ? { transcriptDir: transcriptsDir(settings.dataDir) } : {})
          }))
        )
      )
    )
  // hook scripts run in the sandbox when the settings say so (sandbox.hooks)
  const hooks = SandboxSpawner.confine(unconfinedHooks, settings.sandbox.hooks, settings.workspace)
  const observed: Layer.Layer<never, never, EventBus> = (options.metrics ?? Telemetry.exporting) ? Metrics.layer : Layer.empty
  // every part is built with the sandbox in its context: exec's commands run in it, and (by the settings) MCP servers and hooks
  return Layer.merge(hooks, observed).pipe(Layer.provideMerge(loop), Layer.provideMerge(sandbox(settings)))
}
