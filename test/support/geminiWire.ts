/**
 * The Gemini wire for tests: a stream as the API sends it (thought summaries, text, two parallel
 * function calls with a thought signature, usage), replies for loopback servers that play a model
 * over several calls, and the body Google's own client (`@google/genai`) sends for a request,
 * pointed at a loopback server, as the reference for our encoder.
 */
import { GoogleGenAI } from "@google/genai"
import { Effect } from "effect"
import type { ProviderTypes } from "effect-agent-loop"
import type { FakeReply } from "./wireReplies.ts"
import { data, start, type WireResponse } from "./wireServer.ts"

/** One streamed `GenerateContentResponse` with these parts of the first candidate. */
export const chunk = (parts: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}, candidate: Record<string, unknown> = {}) =>
  data({
    candidates: [{ content: { role: "model", parts }, index: 0, ...candidate }],
    modelVersion: "gemini-3-pro-preview",
    responseId: "resp-1",
    ...extra
  })

const usage = { promptTokenCount: 120, candidatesTokenCount: 30, thoughtsTokenCount: 12, cachedContentTokenCount: 100, totalTokenCount: 162 }

/** Gemini: two thought summary pieces (the second signed), text with multi-byte characters, two parallel calls (the first signed). */
export const geminiStream = [
  chunk([{ text: "Planning: ", thought: true }], { usageMetadata: { promptTokenCount: 120, totalTokenCount: 120 } }),
  chunk([{ text: "read both files.", thought: true, thoughtSignature: "c2lnLXRob3VnaHQ=" }]),
  chunk([{ text: "Grüße, " }]),
  chunk([{ text: "世界 🌍" }]),
  chunk([
    { functionCall: { name: "read_file", args: { path: "ä.md" } }, thoughtSignature: "c2lnLWNhbGw=" },
    { functionCall: { name: "list_dir", args: {} } }
  ], { usageMetadata: usage }, { finishReason: "STOP" })
].join("")

/** What `geminiStream` decodes to. */
export const geminiChunks: ReadonlyArray<ProviderTypes.ProviderChunk> = [
  { _tag: "ReasoningDelta", text: "Planning: " },
  { _tag: "ReasoningDelta", text: "read both files." },
  { _tag: "TextDelta", text: "Grüße, " },
  { _tag: "TextDelta", text: "世界 🌍" },
  { _tag: "ToolCallDelta", index: 0, id: "call_resp-1_0", name: "read_file", argumentsDelta: "{\"path\":\"ä.md\"}" },
  { _tag: "ToolCallDelta", index: 1, id: "call_resp-1_1", name: "list_dir", argumentsDelta: "{}" },
  {
    _tag: "ProviderBlock",
    block: {
      provider: "gemini",
      data: {
        thoughts: [{ text: "Planning: read both files.", thoughtSignature: "c2lnLXRob3VnaHQ=" }],
        calls: [{ id: "call_resp-1_0", given: false, thoughtSignature: "c2lnLWNhbGw=" }, { id: "call_resp-1_1", given: false }]
      }
    }
  },
  { _tag: "Finish", reason: "tool_calls", usage: { inputTokens: 120, outputTokens: 42, cachedInputTokens: 100, reasoningTokens: 12 }, responseId: "resp-1", responseModel: "gemini-3-pro-preview" }
]

/** A Gemini stream of `reply`: its text in one event, then its call (with an id and a signature) and the usage with the finish reason. */
export const geminiReply = (reply: FakeReply): WireResponse => {
  const counts = reply.usage ?? { input: 10, output: 2 }
  const call = reply.toolCall
  return {
    body: [
      ...(reply.text === undefined ? [] : [chunk([{ text: reply.text }])]),
      chunk(
        call === undefined ? [{ text: "", thoughtSignature: "c2lnLXRleHQ=" }] : [{ functionCall: { id: call.id, name: call.name, args: call.arguments }, thoughtSignature: "c2lnLWNhbGw=" }],
        {
          usageMetadata: {
            promptTokenCount: counts.input,
            candidatesTokenCount: counts.output,
            ...(counts.cacheRead === undefined ? {} : { cachedContentTokenCount: counts.cacheRead })
          }
        },
        { finishReason: "STOP" }
      )
    ]
  }
}

/** A minimal valid answer, for the reference client. */
const done = chunk([{ text: "ok" }], { usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1 } }, { finishReason: "STOP" })

/**
 * The request Google's client sends for `generateContentStream(params)`: path, headers and JSON
 * body, as a loopback server received them.
 */
export const referenceRequest = (params: { model: string; contents: ReadonlyArray<unknown>; config?: Record<string, unknown> }) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start([{ body: [done] }])
    const ai = new GoogleGenAI({ apiKey: "reference-key", httpOptions: { baseUrl: server.url } })
    yield* Effect.promise(async () => {
      const stream = await ai.models.generateContentStream(params as never)
      for await (const _ of stream) { /* drained */ }
    })
    return server.requests[0]!
  }))
