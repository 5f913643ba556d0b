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
import type { ProviderBlock, ToolCall } from "../domain/Message.ts"
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
  /** Sent as `ProviderBlock` chunks: they end up on the reply's `providerBlocks`. */
  readonly providerBlocks?: ReadonlyArray<ProviderBlock>
  readonly toolCalls?: ReadonlyArray<ToolCall>
  readonly finishReason?: FinishReason
  readonly usage?: Usage
}

/** The chunks of a complete reply, in the order a streaming provider would send them. */
export const chunksOfReply = (reply: ChatReply): ReadonlyArray<ProviderChunk> => {
  const toolCalls = reply.toolCalls ?? []
  return [
    ...(reply.reasoning ? [{ _tag: "ReasoningDelta", text: reply.reasoning } as const] : []),
    ...(reply.providerBlocks ?? []).map((block) => ({ _tag: "ProviderBlock", block }) as const),
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

/** A reply given whole (all its chunks at once), or as a stream when it is not whole after all. */
export type WholeReply = ReadonlyArray<ProviderChunk> | Stream.Stream<ProviderChunk, ProviderError>

/**
 * Where a stream made by `Provider.whole` keeps its reply: a property of the stream itself rather
 * than a `WeakMap` entry, which costs more than the stream to make and to collect (one per call).
 */
const WholeReplyKey: unique symbol = Symbol.for("effect-agent-loop/Provider/WholeReply")

interface WholeStream extends Stream.Stream<ProviderChunk, ProviderError> {
  [WholeReplyKey]?: Effect.Effect<WholeReply, ProviderError>
}

/** The model. Swap its layer to change vendors or to script a test. */
export class Provider extends Context.Service<Provider, ProviderShape>()("effect-agent-loop/Provider") {
  /** A streaming provider built from a function that returns whole replies. */
  static fromChat(chat: (request: ProviderRequest) => Effect.Effect<ChatReply, ProviderError>): ProviderShape {
    return { stream: (request) => Provider.whole(Effect.map(chat(request), chunksOfReply)) }
  }

  /**
   * The stream of a reply a provider has in full once `reply` succeeds (a script, a cassette, a
   * non-streaming API), or that `reply` hands over as a stream after all. To anyone else it is an
   * ordinary stream; the loop runs `reply` itself and takes the chunks in one step, without
   * running a stream per call. A stream derived from it (by `pipe`) is an ordinary stream again.
   *
   * @example
   * ```ts
   * import { Effect } from "effect"
   * import { Provider, type ProviderShape } from "effect-agent-loop"
   *
   * const hello: ProviderShape = {
   *   stream: () => Provider.whole(Effect.succeed([{ _tag: "TextDelta", text: "hello" }, { _tag: "Finish", reason: "stop" }]))
   * }
   * ```
   */
  static whole(reply: Effect.Effect<WholeReply, ProviderError>): Stream.Stream<ProviderChunk, ProviderError> {
    const stream: WholeStream = Stream.unwrap(Effect.map(reply, (whole) => Stream.isStream(whole) ? whole : Stream.fromArray(whole)))
    stream[WholeReplyKey] = reply
    return stream
  }

  /** The `reply` of a stream made by `Provider.whole`; `undefined` for any other stream. */
  static wholeOf(stream: Stream.Stream<ProviderChunk, ProviderError>): Effect.Effect<WholeReply, ProviderError> | undefined {
    return (stream as WholeStream)[WholeReplyKey]
  }
}
