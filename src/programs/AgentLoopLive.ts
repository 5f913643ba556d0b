/**
 * The loop with its default in-process services, for applications and tests: the event bus with
 * its event journal (every event numbered and kept in the session store, `EventJournalLive`), the
 * hook registry and the decoded config. What stays open is what varies: the model (`Provider`),
 * the tools (`ToolRegistry`) and where sessions live (`SessionStore`). The config's `model` may be
 * left out when the provider names its own (`ProviderShape.model`: an `effect/ai` `Model` does).
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
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { AgentLoopConfigInput } from "../domain/Config.ts"
import { InvalidConfig } from "../domain/errors.ts"
import * as EventJournalLive from "../layers/EventJournal.ts"
import * as HooksLive from "../layers/Hooks.ts"
import type { AgentLoop } from "../services/AgentLoop.ts"
import type { EventBus } from "../services/EventBus.ts"
import type { EventJournal } from "../services/EventJournal.ts"
import type { Hooks } from "../services/Hooks.ts"
import { LoopConfig } from "../services/LoopConfig.ts"
import * as LoopConfigLive from "../layers/LoopConfig.ts"
import { Provider } from "../services/Provider.ts"
import type { SessionStore } from "../services/SessionStore.ts"
import type { ToolRegistry } from "../services/ToolRegistry.ts"
import * as AgentLoopProgram from "./AgentLoopProgram.ts"

/** The config of `layer`: `AgentLoopConfigInput` whose `model` may be left to the provider. */
export type LiveConfig = Omit<AgentLoopConfigInput, "model"> & { readonly model?: string }

type Live = Layer.Layer<AgentLoop | EventBus | EventJournal | Hooks | LoopConfig, InvalidConfig, Provider | ToolRegistry | SessionStore>

/**
 * The loop plus its event bus, hooks and config; bad config fails the layer with the field named,
 * and so does a config without `model` over a provider that names no model of its own.
 */
export const layer = (config: LiveConfig): Live => {
  const { model } = config
  if (model !== undefined) return withConfig({ ...config, model })
  return Layer.unwrap(Effect.gen(function*() {
    const provider = yield* Provider
    if (provider.model === undefined) {
      return yield* new InvalidConfig({ field: "model", message: "model: required, since the provider names no model of its own" })
    }
    return withConfig({ ...config, model: provider.model })
  }))
}

const withConfig = (config: AgentLoopConfigInput): Live =>
  AgentLoopProgram.layer.pipe(
    Layer.provideMerge(HooksLive.layer),
    Layer.provideMerge(EventJournalLive.layer),
    Layer.provideMerge(LoopConfigLive.layer(config))
  )
