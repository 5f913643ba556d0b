/**
 * The hooks runner on its own (no loop): its layer over an event bus and a config, and a hook
 * context, a tool call and a turn result to run points with.
 */
import { Layer } from "effect"
import { type AgentLoopConfig, EventBusLive, type Hook, HooksLive, LoopConfigLive, type TurnResult } from "effect-agent-loop"

/** The runner over a fresh event bus and a config with `config`'s fields. */
export const layerWith = (config: Partial<AgentLoopConfig.AgentLoopConfigInput> = {}) =>
  HooksLive.layer.pipe(
    Layer.provideMerge(EventBusLive.layer),
    Layer.provideMerge(LoopConfigLive.layer({ ...config, model: "m" }))
  )
/** The runner with the default config. */
export const TestLayer = layerWith()

/** A sub-turn's context, at iteration 2. */
export const context: Hook.HookContext = { turnId: "t1", sessionKey: "s1", iteration: 2, depth: 1, parentTurnId: "p0" }
/** A call of `exec` that needs approval. */
export const call: Hook.HookToolCall = { id: "c1", name: "exec", arguments: { cmd: "ls" }, readOnly: false, requiresApproval: true }
/** A completed turn. */
export const turnResult: TurnResult = {
  turnId: "t1",
  sessionKey: "s1",
  status: "completed",
  messages: [],
  followUps: [],
  iterations: 1,
  usage: { inputTokens: 0, outputTokens: 0 }
}
