/**
 * Whole turns of the loop on the Gemini provider over loopback servers: typed answers natively
 * (Gemini 3: the constrained JSON text is the output) and through the forced respond tool
 * (Gemini 2.x, which refuses a JSON response type beside functions), and a thinking turn whose
 * thought signatures are kept in the session and sent back on the parts they came on.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schema } from "effect"
import { AgentLoop, AgentLoopLive, Gemini, SessionStore, SessionStoreMemory, ToolRegistryLive } from "effect-agent-loop"
import { echo } from "../support/fixtures.ts"
import { chunk, geminiReply } from "../support/geminiWire.ts"
import { start, type WireResponse } from "../support/wireServer.ts"

const KEY = Redacted.make("AIzaSy-loop-test-key-0123456789")
const Answer = Schema.Struct({ city: Schema.String, population: Schema.Finite })

/** A loop on `model` over a Gemini provider at `url`, with the echo tool. */
const loopOn = (model: string, url: string, modelOptions = {}) =>
  AgentLoopLive.layer({ model, modelOptions }).pipe(
    Layer.provideMerge(Layer.mergeAll(
      Gemini.layer({ baseUrl: url, apiKey: KEY }).pipe(Layer.provide(NodeHttpClient.layerUndici)),
      ToolRegistryLive.layer([echo]),
      SessionStoreMemory.layer()
    )),
    Layer.orDie
  )

const names = (body: any): ReadonlyArray<string> => body.tools?.[0]?.functionDeclarations.map((d: { name: string }) => d.name) ?? []

describe("Gemini turns", () => {
  it.live("Gemini 3, typed: responseSchema on every call, the respond tool not offered; a call, then the JSON text is the output", () =>
    Effect.gen(function*() {
      const server = yield* start([
        geminiReply({ toolCall: { id: "fc-1", name: "echo", arguments: { text: "census" } } }),
        geminiReply({ text: "{\"city\":\"Tokyo\",\"population\":37}" })
      ])
      const result = yield* Effect.gen(function*() {
        return yield* (yield* AgentLoop).turn("s", "Largest city?", { output: Answer })
      }).pipe(Effect.provide(loopOn("gemini-3-flash-preview", server.url)))
      expect([result.status, result.output]).toEqual(["completed", { city: "Tokyo", population: 37 }])
      const bodies = server.requests.map((r) => r.json)
      expect(bodies.map(names)).toEqual([["echo"], ["echo"]])
      expect(bodies.map((b) => b.generationConfig.responseMimeType)).toEqual(["application/json", "application/json"])
      expect(bodies[0].generationConfig.responseSchema).toEqual({
        type: "OBJECT",
        properties: { city: { type: "STRING" }, population: { type: "NUMBER" } },
        required: ["city", "population"]
      })
      expect(bodies[1].contents.at(-1).parts).toEqual([{ functionResponse: { id: "fc-1", name: "echo", response: { output: "echo: census" } } }])
    }))

  it.live("Gemini 2.x, typed with tools: the respond tool beside the others, no JSON response type; its call is the output", () =>
    Effect.gen(function*() {
      const server = yield* start([geminiReply({ toolCall: { id: "fc-9", name: "respond", arguments: { city: "Delhi", population: 33 } } })])
      const result = yield* Effect.gen(function*() {
        return yield* (yield* AgentLoop).turn("s", "Largest city?", { output: Answer })
      }).pipe(Effect.provide(loopOn("gemini-2.5-flash", server.url)))
      expect([result.status, result.output]).toEqual(["completed", { city: "Delhi", population: 33 }])
      const body = server.requests[0]!.json
      expect(names(body)).toEqual(["echo", "respond"])
      expect(body.generationConfig).toBeUndefined()
    }))

  it.live("a thinking turn keeps the thought signatures on the reply and in the session, and sends them back on their parts", () =>
    Effect.gen(function*() {
      const thinking: WireResponse = {
        body: [
          chunk([{ text: "Echo first.", thought: true, thoughtSignature: "dGhpbms=" }]),
          chunk([{ text: "Checking." }, { functionCall: { name: "echo", args: { text: "hi" } }, thoughtSignature: "Y2FsbA==" }], {
            usageMetadata: { promptTokenCount: 50, candidatesTokenCount: 10, thoughtsTokenCount: 40 }
          }, { finishReason: "STOP" })
        ]
      }
      const server = yield* start([thinking, geminiReply({ text: "Done." })])
      const stored = yield* Effect.gen(function*() {
        const result = yield* (yield* AgentLoop).turn("s", "echo hi")
        expect(result.status).toBe("completed")
        expect(result.usage).toMatchObject({ reasoningTokens: 40 })
        return yield* (yield* SessionStore).load("s")
      }).pipe(Effect.provide(loopOn("gemini-3-pro-preview", server.url, { reasoning: { effort: "low" } })))
      expect(stored[1]).toMatchObject({
        role: "assistant",
        content: "Checking.",
        reasoning: "Echo first.",
        providerBlocks: [{ provider: "gemini", model: "gemini-3-pro-preview" }]
      })
      const callId = (stored[1] as { toolCalls: ReadonlyArray<{ id: string }> }).toolCalls[0]!.id
      const second = server.requests[1]!.json
      expect(second.generationConfig.thinkingConfig).toEqual({ includeThoughts: true, thinkingLevel: "LOW" })
      expect(second.contents[1]).toEqual({
        role: "model",
        parts: [
          { text: "Echo first.", thought: true, thoughtSignature: "dGhpbms=" },
          { text: "Checking." },
          { functionCall: { name: "echo", args: { text: "hi" } }, thoughtSignature: "Y2FsbA==" }
        ]
      })
      // the API gave the call no id: the one the loop used stays on this side
      expect(callId).toBe("call_resp-1_0")
      expect(second.contents[2].parts).toEqual([{ functionResponse: { name: "echo", response: { output: "echo: hi" } } }])
    }))
})
