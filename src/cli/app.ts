/**
 * The layer behind `run` and `chat`: the chosen provider (optionally recording), the built-in
 * tools confined to the workspace plus MCP tools, the session store, the loop, and file hooks.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { type FileSystem, Layer, type Path } from "effect"
import type { HttpClient } from "effect/http"
import type { ChildProcessSpawner } from "effect/process"
import type { ConfigError } from "../domain/errors.ts"
import * as FileHooks from "../layers/FileHooks.ts"
import * as McpTools from "../layers/McpTools.ts"
import * as Anthropic from "../layers/providers/Anthropic.ts"
import * as OpenAiCompatible from "../layers/providers/OpenAiCompatible.ts"
import * as Replay from "../layers/providers/Replay.ts"
import * as SessionStoreJsonl from "../layers/SessionStoreJsonl.ts"
import * as SessionStoreMemory from "../layers/SessionStoreMemory.ts"
import * as AgentLoopLive from "../programs/defaults.ts"
import type { Provider } from "../services/Provider.ts"
import { ToolRegistry } from "../services/ToolRegistry.ts"
import { builtinTools, Workspace } from "../tools/index.ts"
import { sessionsDir } from "./dataDir.ts"
import type { CliSettings, ProviderSettings } from "./settings.ts"

/** What the agent commands take from the platform: `main.ts` provides `NodeServices.layer` once, for every command. */
export type Platform = FileSystem.FileSystem | Path.Path | ChildProcessSpawner.ChildProcessSpawner

type ProviderLayer = Layer.Layer<Provider, ConfigError, HttpClient.HttpClient | FileSystem.FileSystem>

const liveProvider = (chosen: ProviderSettings): ProviderLayer => {
  if (chosen._tag === "replay") return Replay.replay(chosen.cassette)
  const options = chosen.baseUrl === undefined ? {} : { baseUrl: chosen.baseUrl }
  return chosen._tag === "anthropic" ? Anthropic.layer(options) : OpenAiCompatible.layer(options)
}

/** The provider of the settings; `--record` wraps it so every call lands in the cassette. */
const provider = (settings: CliSettings): ProviderLayer => {
  const live = liveProvider(settings.provider)
  return settings.record === undefined ? live : Replay.record(settings.record, { fresh: true }).pipe(Layer.provide(live))
}

/** The built-in tools of `--tools`, then the MCP servers' tools (renamed where they collide). */
const tools = (settings: CliSettings) => {
  const builtins = ToolRegistry.layer(builtinTools({ enable: settings.tools })).pipe(
    Layer.provide(Workspace.layer(settings.workspace))
  )
  return settings.mcpConfig === undefined
    ? builtins
    : McpTools.layerFromConfigFile(settings.mcpConfig).pipe(Layer.provideMerge(builtins))
}

const store = (settings: CliSettings) =>
  settings.persist ? SessionStoreJsonl.layer(sessionsDir(settings.dataDir)) : SessionStoreMemory.layer()

/** Everything an agent command runs on. */
export const layer = (settings: CliSettings) => {
  const loop = AgentLoopLive.layer({
    model: settings.model,
    systemPrompt: settings.systemPrompt,
    ...(settings.maxIterations === undefined ? {} : { maxIterations: settings.maxIterations })
  }).pipe(Layer.provide([provider(settings), tools(settings), store(settings)]))
  return FileHooks.layer({ workDir: settings.workspace }).pipe(
    Layer.provideMerge(loop),
    Layer.provide(NodeHttpClient.layerUndici)
  )
}
