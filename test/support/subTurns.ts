/**
 * Shared parts of the sub-turn tests: what a request asks, and a tool that spawns a sub-turn per
 * call and reports the loop's refusals by their tag.
 */
import { Effect, Schema } from "effect"
import { CurrentTurn, Message, type ProviderTypes, Tool, ToolError } from "effect-agent-loop"

/** The task of a request: its first user message. */
export const taskOf = (request: ProviderTypes.ProviderRequest) => Message.textOf(request.messages.find((m) => m.role === "user")?.content ?? "")
/** The request is a turn's first call: no assistant message yet. */
export const isFirstCall = (request: ProviderTypes.ProviderRequest) => !request.messages.some((m) => m.role === "assistant")

/** A tool that spawns one sync sub-turn per call with the given task, and reports errors by tag. */
export const delegate = Tool.make({
  name: "delegate",
  description: "spawn a sync sub-turn",
  parameters: Schema.Struct({ task: Schema.String, model: Schema.optionalKey(Schema.String) }),
  execute: ({ model, task }) =>
    Effect.gen(function*() {
      const turn = yield* CurrentTurn
      const result = yield* turn.spawnSubTurn({ model: model ?? "child-model", task: task })
      return `${result.status}: ${result.finalMessage?.content ?? result.error ?? ""}`
    }).pipe(Effect.catchTags({
      DepthLimitExceeded: (e) => Effect.fail(new ToolError({ message: `DepthLimitExceeded ${e.depth}` })),
      InvalidSubTurnConfig: (e) => Effect.fail(new ToolError({ message: `InvalidSubTurnConfig ${e.message}` })),
      ConcurrencyTimeout: () => Effect.fail(new ToolError({ message: "ConcurrencyTimeout" })),
      SubTurnBlocked: (e) => Effect.fail(new ToolError({ message: `SubTurnBlocked ${e.reason}` }))
    }))
})
