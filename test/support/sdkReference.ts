/**
 * The request bodies the official SDK clients send, as the reference for our wire encoders:
 * `@mariozechner/pi-ai` drives the `openai` and `@anthropic-ai/sdk` clients, here pointed at a
 * loopback server that records the body and answers with a minimal valid stream.
 */
import { complete } from "@mariozechner/pi-ai"
import { Effect } from "effect"
import { anthropicStream, openAiText, responsesStream } from "./wireFixtures.ts"
import { start } from "./wireServer.ts"

/** The wire APIs the reference covers. */
export type ReferenceApi = "openai-completions" | "openai-responses" | "anthropic-messages"

/** A pi-ai conversation (its `Context`): user, assistant and `toolResult` messages with text and image blocks. */
export interface ReferenceContext {
  readonly systemPrompt?: string
  readonly messages: ReadonlyArray<unknown>
  readonly tools?: ReadonlyArray<{ readonly name: string; readonly description: string; readonly parameters: unknown }>
}

const zeroUsage = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
}

/** pi-ai's user message from text, or from text and `{ data, mimeType }` images. */
export const piUser = (content: string | ReadonlyArray<{ text: string } | { data: string; mimeType: string }>) => ({
  role: "user",
  content: typeof content === "string" ? content : content.map((part) => "text" in part ? { type: "text", ...part } : { type: "image", ...part }),
  timestamp: 1
})

/**
 * pi-ai's assistant message with these blocks (`text`, `toolCall`, and `thinking` with the
 * provider's signature or reasoning item), as if `api`'s `model` had sent it, so pi-ai sends its
 * thinking back to that model.
 */
export const piAssistant = (api: ReferenceApi, model: string, content: ReadonlyArray<unknown>) => ({
  role: "assistant",
  content,
  api,
  provider: api === "anthropic-messages" ? "anthropic" : "openai",
  model,
  usage: zeroUsage,
  stopReason: "toolUse",
  timestamp: 2
})

/** pi-ai's assistant message calling tools, as if `api`'s model had sent it. */
export const piToolCalls = (api: ReferenceApi, model: string, calls: ReadonlyArray<{ id: string; name: string }>) =>
  piAssistant(api, model, calls.map((call) => ({ type: "toolCall", ...call, arguments: {} })))

/** pi-ai's tool result from text and images. */
export const piToolResult = (
  call: { id: string; name: string },
  content: ReadonlyArray<{ text: string } | { data: string; mimeType: string }>
) => ({
  role: "toolResult",
  toolCallId: call.id,
  toolName: call.name,
  content: content.map((part) => "text" in part ? { type: "text", ...part } : { type: "image", ...part }),
  isError: false,
  timestamp: 3
})

const replies: Record<ReferenceApi, string> = {
  "anthropic-messages": anthropicStream,
  "openai-completions": openAiText,
  "openai-responses": responsesStream
}

/**
 * The JSON body the official client of `api` sends for `context` to `model` (a model that accepts
 * images). With `options` (pi-ai's options of that provider: `temperature`, `maxTokens`,
 * `reasoningEffort`, `thinkingEnabled`, …) the model is a reasoning model, so they all apply, and
 * no prompt caching is asked for.
 */
export const referenceBody = (api: ReferenceApi, model: string, context: ReferenceContext, options?: Record<string, unknown>) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start([{ body: [replies[api]] }])
    const piModel = {
      id: model,
      name: model,
      api,
      provider: api === "anthropic-messages" ? "anthropic" : "openai",
      baseUrl: api === "anthropic-messages" ? server.url : `${server.url}/v1`,
      reasoning: options !== undefined,
      input: ["text", "image"],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 200_000,
      maxTokens: 4096
    }
    const reply = yield* Effect.promise(() =>
      complete(piModel as never, context as never, { apiKey: "sk-reference", ...(options === undefined ? {} : { cacheRetention: "none", ...options }) } as never)
    )
    if (reply.stopReason === "error") return yield* Effect.die(new Error(`reference client failed: ${reply.errorMessage}`))
    return server.requests[0]!.json as Record<string, any>
  }))
