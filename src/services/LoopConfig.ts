/**
 * `LoopConfig`: the decoded `AgentLoopConfig` as a service (`LoopConfigLive.layer(input)` decodes
 * and provides it).
 */
import * as Context from "effect/Context"
import type * as Config from "../domain/Config.ts"

/** The loop's configuration. */
export class LoopConfig extends Context.Service<LoopConfig, Config.AgentLoopConfig>()("effect-agent-loop/LoopConfig") {}
