/**
 * `LoopConfig`: the decoded `AgentLoopConfig` as a service.
 */
import { Context, Layer } from "effect"
import * as Config from "../domain/Config.ts"
import type { ConfigError } from "../domain/errors.ts"

/** The loop's configuration. */
export class LoopConfig extends Context.Service<LoopConfig, Config.AgentLoopConfig>()("effect-agent-loop/LoopConfig") {
  /** Decodes `input` once at start; a bad value fails the layer with `ConfigError` naming the field. */
  static layer(input: Config.AgentLoopConfigInput): Layer.Layer<LoopConfig, ConfigError> {
    return Layer.effect(LoopConfig, Config.make(input))
  }
}
