/**
 * The request bodies the official SDK clients send, as the reference for our wire encoders:
 * `@mariozechner/pi-ai` drives the `openai` and `@anthropic-ai/sdk` clients, here pointed at a
 * loopback server that records the body and answers with a minimal valid stream.
 */
import { complete } from "@mariozechner/pi-ai"
import { Effect } from "effect"
import { anthropicStream, openAiText } from "./wireFixtures.ts"
import { start } from "./wireServer.ts"

/** The wire APIs the reference covers. */
export type ReferenceApi = "openai-completions" | "anthropic-messages"

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

/** pi-ai's user message from text and `{ data, mimeType }` images. */
export const piUser = (content: ReadonlyArray<{ text: string } | { data: string; mimeType: string }>) => ({
  role: "user",
  content: content.map((part) => "text" in part ? { type: "text", ...part } : { type: "image", ...part }),
  timestamp: 1
})

/** pi-ai's assistant message calling tools, as if `api`'s model had sent it. */
export const piToolCalls = (api: ReferenceApi, model: string, calls: ReadonlyArray<{ id: string; name: string }>) => ({
  role: "assistant",
  content: calls.map((call) => ({ type: "toolCall", ...call, arguments: {} })),
  api,
  provider: api === "anthropic-messages" ? "anthropic" : "openai",
  model,
  usage: zeroUsage,
  stopReason: "toolUse",
  timestamp: 2
})

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

/** The JSON body the official client of `api` sends for `context` to `model` (a model that accepts images). */
export const referenceBody = (api: ReferenceApi, model: string, context: ReferenceContext) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start([{ body: [api === "anthropic-messages" ? anthropicStream : openAiText] }])
    const piModel = {
      id: model,
      name: model,
      api,
      provider: api === "anthropic-messages" ? "anthropic" : "openai",
      baseUrl: api === "anthropic-messages" ? server.url : `${server.url}/v1`,
      reasoning: false,
      input: ["text", "image"],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 200_000,
      maxTokens: 4096
    }
    const reply = yield* Effect.promise(() => complete(piModel as never, context as never, { apiKey: "sk-reference" }))
    if (reply.stopReason === "error") return yield* Effect.die(new Error(`reference client failed: ${reply.errorMessage}`))
    return server.requests[0]!.json as Record<string, any>
  }))
