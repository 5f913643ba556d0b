/**
 * The loop with its default in-process services, for applications and tests: the event bus, the
 * hook registry and the decoded config. What stays open is what varies: the model (`Provider`),
 * the tools (`ToolRegistry`) and where sessions live (`SessionStore`).
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { AgentLoopLive, Scripted, SessionStoreMemory, ToolRegistryLive } from "effect-agent-loop"
 *
 * const app = AgentLoopLive.layer({ model: "demo" }).pipe(
 *   Layer.provide([Scripted.layer([{ content: "hi" }]), ToolRegistryLive.layer([]), SessionStoreMemory.layer()])
 * )
 * ```
 */
import * as Layer from "effect/Layer"
import type { AgentLoopConfigInput } from "../domain/Config.ts"
import type { InvalidConfig } from "../domain/errors.ts"
import * as EventBusLive from "../layers/EventBus.ts"
import * as HooksLive from "../layers/Hooks.ts"
import type { AgentLoop } from "../services/AgentLoop.ts"
import type { EventBus } from "../services/EventBus.ts"
import type { Hooks } from "../services/Hooks.ts"
import { LoopConfig } from "../services/LoopConfig.ts"
import * as LoopConfigLive from "../layers/LoopConfig.ts"
import type { Provider } from "../services/Provider.ts"
import type { SessionStore } from "../services/SessionStore.ts"
import type { ToolRegistry } from "../services/ToolRegistry.ts"
import * as AgentLoopProgram from "./AgentLoopProgram.ts"

/** The loop plus its event bus, hooks and config; bad config fails the layer with the field named. */
export const layer = (
  config: AgentLoopConfigInput
): Layer.Layer<AgentLoop | EventBus | Hooks | LoopConfig, InvalidConfig, Provider | ToolRegistry | SessionStore> =>
  AgentLoopProgram.layer.pipe(
    Layer.provideMerge(HooksLive.layer),
    Layer.provideMerge(EventBusLive.layer),
    Layer.provideMerge(LoopConfigLive.layer(config))
  )
