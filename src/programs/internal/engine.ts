/**
 * What every turn of a loop shares, resolved once when the loop is built (as `effect`'s own
 * `LanguageModel.make` resolves its services once): the services, the scope that owns the loop's
 * long-lived fibers, and the registry of running turns. Every step of a turn takes it as its
 * first argument, so a turn costs what it does, not a context lookup per step.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { AgentLoopConfig } from "../../domain/Config.ts"
import { EventBus, type EventBusShape } from "../../services/EventBus.ts"
import { Hooks, type HooksShape } from "../../services/Hooks.ts"
import { LoopConfig } from "../../services/LoopConfig.ts"
import { Provider, type ProviderShape } from "../../services/Provider.ts"
import { Secrets, type SecretsShape } from "../../services/Secrets.ts"
import { ToolRegistry, type ToolRegistryShape } from "../../services/ToolRegistry.ts"
import { type RetrySchedule, retrySchedule } from "./providerCall.ts"
import * as Scrub from "./scrub.ts"
import type { RunningTurn } from "./runningTurn.ts"

/** What the steps of a loop's turns share. */
export interface Engine {
  readonly config: AgentLoopConfig
  /** The retry schedule of the provider calls (`config.retry`). */
  readonly retry: RetrySchedule
  /** The provider, every request scrubbed of known secrets first (`scrub.ts`). */
  readonly provider: ProviderShape
  readonly registry: ToolRegistryShape
  readonly hooks: HooksShape
  readonly bus: EventBusShape
  /** Known secrets, scrubbed from what tools say (the registry in the loop's context, else the process's). */
  readonly secrets: SecretsShape
  /** Scrubs messages of those secrets, remembering the clean ones. */
  readonly scrubber: Scrub.Scrubber
  /** Owns what outlives a turn: critical detached sub-turns, summaries, router workers. */
  readonly scope: Scope.Scope
  /** Every running turn, sub-turns included, by id (`activeTurns`). */
  readonly turns: Map<string, RunningTurn>
  /** A fresh turn id, unique in the process. */
  readonly nextTurnId: () => string
}

/** The services a loop is built from. */
export type Services = LoopConfig | Provider | ToolRegistry | Hooks | EventBus

/** Resolves the services once and starts an empty turn registry. */
export const make: Effect.Effect<Engine, never, Services | Scope.Scope> = Effect.gen(function*() {
  const instance = Math.random().toString(36).slice(2, 8)
  let counter = 0
  const secrets = yield* Secrets
  const scrubber = Scrub.make(secrets)
  const config = yield* LoopConfig
  return {
    config,
    retry: retrySchedule(config.retry),
    provider: Scrub.provider(yield* Provider, scrubber, secrets),
    registry: yield* ToolRegistry,
    hooks: yield* Hooks,
    bus: yield* EventBus,
    secrets,
    scrubber,
    scope: yield* Effect.scope,
    turns: new Map(),
    nextTurnId: () => `turn-${instance}-${++counter}`
  }
})
