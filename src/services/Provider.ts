/**
 * `Provider`: the model, as a stream of chunks.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Provider } from "effect-agent-loop"
 *
 * const echo = Layer.succeed(Provider, Provider.fromChat((request) =>
 *   Effect.succeed({ content: `you said ${request.messages.length} things` })))
 * ```
 */
import { Context, Effect, Stream } from "effect"
import type { ProviderError } from "../domain/errors.ts"
import type { ToolCall } from "../domain/Message.ts"
import type { FinishReason, ProviderChunk, ProviderRequest } from "../domain/Provider.ts"
import type { Usage } from "../domain/Usage.ts"

/** What every provider layer implements. */
export interface ProviderShape {
  readonly stream: (request: ProviderRequest) => Stream.Stream<ProviderChunk, ProviderError>
}

/** A complete (non-streaming) reply, for `Provider.fromChat`; `content` may come in pieces. */
export interface ChatReply {
  readonly content?: string | ReadonlyArray<string>
  readonly reasoning?: string
  readonly toolCalls?: ReadonlyArray<ToolCall>
  readonly finishReason?: FinishReason
  readonly usage?: Usage
}

/** The chunks of a complete reply, in the order a streaming provider would send them. */
export const chunksOfReply = (reply: ChatReply): ReadonlyArray<ProviderChunk> => {
  const toolCalls = reply.toolCalls ?? []
  return [
    ...(reply.reasoning ? [{ _tag: "ReasoningDelta", text: reply.reasoning } as const] : []),
    ...(typeof reply.content === "string" ? [reply.content] : reply.content ?? [])
      .filter((text) => text.length > 0)
      .map((text) => ({ _tag: "TextDelta", text }) as const),
    ...toolCalls.map((call, index) => ({
      _tag: "ToolCallDelta" as const,
      index,
      id: call.id,
      name: call.name,
      argumentsDelta: call.arguments
    })),
    {
      _tag: "Finish",
      reason: reply.finishReason ?? (toolCalls.length > 0 ? "tool_calls" : "stop"),
      ...(reply.usage ? { usage: reply.usage } : {})
    }
  ]
}

/** The model. Swap its layer to change vendors or to script a test. */
export class Provider extends Context.Service<Provider, ProviderShape>()("effect-agent-loop/Provider") {
  /** A streaming provider built from a function that returns whole replies. */
  static fromChat(chat: (request: ProviderRequest) => Effect.Effect<ChatReply, ProviderError>): ProviderShape {
    return {
      stream: (request) => Stream.unwrap(Effect.map(chat(request), (reply) => Stream.fromIterable(chunksOfReply(reply))))
    }
  }
}
