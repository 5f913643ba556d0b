/**
 * The `LoopConfig` layer: the configuration decoded once, at start.
 */
import * as Layer from "effect/Layer"
import * as Config from "../domain/Config.ts"
import type { ConfigError } from "../domain/errors.ts"
import { LoopConfig } from "../services/LoopConfig.ts"

/** Decodes `input` once at start; a bad value fails the layer with `ConfigError` naming the field. */
export const layer = (input: Config.AgentLoopConfigInput): Layer.Layer<LoopConfig, ConfigError> =>
  Layer.effect(LoopConfig, Config.make(input))
