/**
 * What the official SDK clients send for a conversation: `@mariozechner/pi-ai` drives the
 * `openai` and `@anthropic-ai/sdk` clients through its `anthropic`, `openai-completions` and
 * `openai-responses` providers; pointed at a loopback server that refuses the call (so nothing is
 * retried), they give up the request body the SDK would have sent. The reference the wire tests
 * compare the library's bodies with, field by field.
 */
import { streamAnthropic } from "@mariozechner/pi-ai/anthropic"
import { streamOpenAICompletions } from "@mariozechner/pi-ai/openai-completions"
import { streamOpenAIResponses } from "@mariozechner/pi-ai/openai-responses"
import { Effect } from "effect"
import { start } from "./wireServer.ts"

type Api = "anthropic-messages" | "openai-completions" | "openai-responses"

/** A pi-ai model description for `id` on `api`, served at `baseUrl`; a reasoning model. */
const modelOf = (api: Api, id: string, baseUrl: string) => ({
  id,
  name: id,
  api,
  provider: api === "anthropic-messages" ? "anthropic" : "openai",
  baseUrl,
  reasoning: true,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 200_000,
  maxTokens: 64_000
}) as any

const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }

/** A pi-ai assistant message of `model` on `api` (so pi-ai keeps its thinking for the same model). */
export const piAssistant = (api: Api, model: string, content: ReadonlyArray<unknown>) => ({
  role: "assistant",
  api,
  provider: api === "anthropic-messages" ? "anthropic" : "openai",
  model,
  usage,
  stopReason: "toolUse",
  timestamp: 0,
  content
})

/** A pi-ai user message. */
export const piUser = (text: string) => ({ role: "user", content: text, timestamp: 0 })

/** A pi-ai tool result. */
export const piToolResult = (toolCallId: string, toolName: string, text: string) => ({
  role: "toolResult",
  toolCallId,
  toolName,
  content: [{ type: "text", text }],
  isError: false,
  timestamp: 0
})

const streams = { "anthropic-messages": streamAnthropic, "openai-completions": streamOpenAICompletions, "openai-responses": streamOpenAIResponses }

/** The body the SDK sends for `context` with `options` (pi-ai's options of that provider). */
export const sdkBody = (api: Api, model: string, context: Record<string, unknown>, options: Record<string, unknown>) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start([{ status: 400, headers: { "content-type": "application/json" }, body: ['{"error":{"type":"invalid_request_error","message":"captured"}}'] }])
    const stream = (streams[api] as any)(modelOf(api, model, server.url), context, { apiKey: "sk-test", maxRetries: 0, cacheRetention: "none", ...options })
    yield* Effect.promise(async () => {
      for await (const _ of stream) { /* the refusal ends it */ }
    })
    return server.requests[0]!.json
  }))
