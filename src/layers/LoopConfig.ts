/**
 * The `LoopConfig` layer: the configuration decoded once, at start.
 */
import * as Layer from "effect/Layer"
import * as Config from "../domain/Config.ts"
import type { InvalidConfig } from "../domain/errors.ts"
import { LoopConfig } from "../services/LoopConfig.ts"

/** Decodes `input` once at start; a bad value fails the layer with `InvalidConfig` naming the field. */
export const layer = (input: Config.AgentLoopConfigInput): Layer.Layer<LoopConfig, InvalidConfig> =>
  Layer.effect(LoopConfig, Config.make(input))
