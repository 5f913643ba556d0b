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
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { ProviderError } from "../domain/errors.ts"
import type { ProviderBlock, ToolCall } from "../domain/Message.ts"
import type { FinishReason, ProviderChunk, ProviderRequest } from "../domain/Provider.ts"
import type { Usage } from "../domain/Usage.ts"

/**
 * What every provider layer implements: `stream`, and optionally `whole`.
 *
 * A provider that has a reply in full once it has it at all (a script, a cassette, a non-streaming
 * API) may also implement `whole`: the loop then calls `whole` instead of `stream` and takes the
 * chunks in one step, without running a stream per call. `stream` must give the same chunks
 * (`Provider.fromWhole` builds both from one function).
 */
export interface ProviderShape {
  readonly stream: (request: ProviderRequest) => Stream.Stream<ProviderChunk, ProviderError>
  /**
   * The reply in full, or as a stream when it is not whole after all (paced, broken off): the
   * loop then takes it without running a stream per call (DESIGN §11 measures it).
   */
  readonly whole?: ((request: ProviderRequest) => Effect.Effect<WholeReply, ProviderError>) | undefined
  /**
   * The model this provider is bound to, when it is bound to one (an `effect/ai` `Model` names
   * its own): the loop's model when its config names none (`AgentLoopLive.layer`).
   */
  readonly model?: string | undefined
  /**
   * Who serves the model, as OpenTelemetry's GenAI conventions name it (`gen_ai.provider.name`:
   * `openai`, `anthropic`, `gcp.gemini`, `gcp.vertex_ai`, `aws.bedrock`, `azure.ai.openai`, …),
   * for the spans of model calls; the built-in providers set it.
   */
  readonly name?: string | undefined
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

/** A whole reply as a stream. */
const streamOf = (reply: WholeReply): Stream.Stream<ProviderChunk, ProviderError> => Stream.isStream(reply) ? reply : Stream.fromArray(reply)

/** The model. Swap its layer to change vendors or to script a test. */
export class Provider extends Context.Service<Provider, ProviderShape>()("effect-agent-loop/Provider") {
  /** A provider built from a function that returns whole replies. */
  static fromChat(chat: (request: ProviderRequest) => Effect.Effect<ChatReply, ProviderError>): ProviderShape {
    return Provider.fromWhole((request) => Effect.map(chat(request), chunksOfReply))
  }

  /**
   * A provider whose replies are whole once `whole` succeeds (a script, a cassette, a
   * non-streaming API), or handed over as a stream after all: both `whole` and the `stream` that
   * gives the same chunks.
   *
   * @example
   * ```ts
   * import { Effect } from "effect"
   * import { Provider } from "effect-agent-loop"
   *
   * const hello = Provider.fromWhole(() => Effect.succeed([{ _tag: "TextDelta", text: "hello" }, { _tag: "Finish", reason: "stop" }]))
   * ```
   */
  static fromWhole(whole: (request: ProviderRequest) => Effect.Effect<WholeReply, ProviderError>): ProviderShape {
    return { stream: (request) => Stream.unwrap(Effect.map(whole(request), streamOf)), whole }
  }
}
