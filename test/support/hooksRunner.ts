/**
 * The hooks runner on its own (no loop): its layer over an event bus and a config, and a hook
 * context, a tool call and a turn result to run points with, and the points as a test reads them
 * (`points`).
 */
import { Effect, Layer } from "effect"
import { type AgentLoopConfig, EventBusLive, Hook, HooksLive, type HooksShape, LoopConfigLive, type Named, type RunPoint, type Turn } from "effect-agent-loop"

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
export const turnResult: Turn.TurnResult = {
  turnId: "t1",
  sessionKey: "s1",
  status: "completed",
  messages: [],
  followUps: [],
  iterations: 1,
  usage: { inputTokens: 0, outputTokens: 0 }
}

/**
 * The runner's points with outcomes shaped for a test to read, each one `run(point, input)`:
 * `beforeTurn` gives the messages the hooks added, `beforeTool` the arguments to run with, the
 * gates "continue" or the stop, the observers nothing, `afterTool` the (patched) result.
 */
export const points = (hooks: HooksShape) => {
  const gate = <K extends RunPoint>(point: K) => (input: Hook.InputOf<K>): Effect.Effect<Hook.Continue | Named<Hook.StopOf<K>>> =>
    Effect.map(hooks.run(point, input), (outcome) => outcome._tag === "Continue" ? Hook.continue : outcome as Named<Hook.StopOf<K>>)
  const observer = <K extends RunPoint>(point: K) => (input: Hook.InputOf<K>): Effect.Effect<void> => Effect.asVoid(hooks.run(point, input))
  return {
    ...hooks,
    sessionStart: gate("sessionStart"),
    sessionEnd: observer("sessionEnd"),
    beforeTurn: (input: Hook.InputOf<"beforeTurn">) =>
      Effect.map(hooks.run("beforeTurn", input), (outcome) =>
        outcome._tag === "Continue"
          ? { _tag: "Continue" as const, addMessages: outcome.input.messages.slice(input.messages.length), systemPrompt: outcome.input.systemPrompt }
          : outcome),
    beforeLLMRequest: (input: Hook.InputOf<"beforeLLMRequest">) =>
      Effect.map(hooks.run("beforeLLMRequest", input), (outcome) =>
        outcome._tag === "Continue" ? { _tag: "Continue" as const, request: outcome.input.request } : outcome),
    afterLLMResponse: (input: Hook.InputOf<"afterLLMResponse">) =>
      Effect.map(hooks.run("afterLLMResponse", input), (outcome) =>
        outcome._tag === "Continue" ? { _tag: "Continue" as const, response: outcome.input.response } : outcome),
    beforeTool: (input: Hook.InputOf<"beforeTool">) =>
      Effect.map(hooks.run("beforeTool", input), (outcome) =>
        outcome._tag === "Continue" ? { _tag: "Continue" as const, arguments: outcome.input.call.arguments } : outcome),
    afterTool: ({ failed, ...input }: Hook.InputOf<"afterTool"> & { readonly failed: boolean }) =>
      Effect.map(hooks.run(failed ? "onToolFailure" : "afterTool", input), (outcome) => outcome.input.result),
    beforeStop: gate("beforeStop"),
    beforeCompact: gate("beforeCompact"),
    afterCompact: observer("afterCompact"),
    beforeSubTurn: gate("beforeSubTurn"),
    afterSubTurn: observer("afterSubTurn"),
    afterTurn: observer("afterTurn")
  }
}
