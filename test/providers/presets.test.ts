/**
 * The named OpenAI-compatible servers (`OpenAiCompatible.preset`): each one's key variable and no
 * other, sent to its own URL only, no key at all for the local servers, typed answers in each one's dialect, overrides, and
 * OpenRouter's attribution headers.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Stream } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { Message, OpenAiCompatible, Presets, Provider, type ProviderTypes } from "effect-agent-loop"
import { openAiText } from "../support/wireFixtures.ts"
import { start } from "../support/wireServer.ts"

const answer = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"], additionalProperties: false }
const request: ProviderTypes.ProviderRequest = {
  model: "m",
  messages: [Message.system("Be brief."), Message.user("hi")],
  tools: [
    { name: "read_file", description: "Reads a file", parameters: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", properties: { path: { type: "string" } } } },
    { name: "respond", description: "The answer", parameters: answer }
  ],
  output: { name: "respond", schema: answer }
}

const env = Object.fromEntries(Presets.presetNames.flatMap((name) => {
  const variable = Presets.presets[name].apiKeyEnv
  return variable === undefined ? [] : [[variable, `key-of-${name}`]]
}))

/** What the preset sends for `sent`, pointed at a loopback server, with every preset's key in the environment. */
const sentBy = (name: Presets.PresetName, options: OpenAiCompatible.Options = {}, sent: ProviderTypes.ProviderRequest = request) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start([{ body: [openAiText] }])
    yield* Effect.gen(function*() {
      const provider = yield* Provider
      yield* Stream.runDrain(provider.stream(sent))
    }).pipe(Effect.provide(OpenAiCompatible.preset(name, { baseUrl: `${server.url}/v1`, ...options })))
    return server.requests[0]!
  })).pipe(
    Effect.provide(NodeHttpClient.layerUndici),
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { ...env, OPENAI_API_KEY: "sk-openai-elsewhere" } }))
  )

/** The URL and headers of the request the preset sends to its own host, caught by a client that answers itself. */
const sentHome = (name: Presets.PresetName) =>
  Effect.gen(function*() {
    const seen: Array<{ readonly url: string; readonly headers: Readonly<Record<string, string>> }> = []
    const client = HttpClient.make((req) => {
      seen.push({ url: req.url, headers: req.headers })
      return Effect.succeed(HttpClientResponse.fromWeb(req, new Response(openAiText, { headers: { "content-type": "text/event-stream" } })))
    })
    yield* Effect.gen(function*() {
      const provider = yield* Provider
      yield* Stream.runDrain(provider.stream(request))
    }).pipe(Effect.provide(OpenAiCompatible.preset(name)), Effect.provide(Layer.succeed(HttpClient.HttpClient, client)))
    return seen[0]!
  }).pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { ...env, OPENAI_API_KEY: "sk-openai-elsewhere" } })))

describe("OpenAI-compatible presets", () => {
  it.live("each cloud sends its own key, from its own variable, to its own URL; a local server sends none, not even OpenAI's", () =>
    Effect.gen(function*() {
      for (const name of Presets.presetNames) {
        const received = yield* sentHome(name)
        expect(received.url, name).toBe(`${Presets.presets[name].baseUrl}/chat/completions`)
        expect(received.headers["authorization"], name).toBe(Presets.presets[name].apiKeyEnv === undefined ? undefined : `Bearer key-of-${name}`)
      }
    }))

  it.live("a baseUrl elsewhere is sent no key, unless apiKeyEnv names it", () =>
    Effect.gen(function*() {
      for (const name of Presets.presetNames) {
        const received = yield* sentBy(name)
        expect(received.path, name).toBe("/v1/chat/completions")
        expect(received.headers["authorization"], name).toBeUndefined()
      }
      expect((yield* sentBy("groq", { apiKeyEnv: "GROQ_API_KEY" })).headers["authorization"]).toBe("Bearer key-of-groq")
    }))

  it.live("typed answers in each one's dialect: response_format where the server enforces it, else the respond tool", () =>
    Effect.gen(function*() {
      for (const name of Presets.presetNames) {
        const { json } = yield* sentBy(name)
        const tools = json.tools.map((tool: any) => tool.function.name)
        if (Presets.presets[name].structuredOutput === "native") {
          expect(json.response_format?.type, name).toBe("json_schema")
          expect(tools, name).toEqual(["read_file"])
        } else {
          expect(json.response_format, name).toBeUndefined()
          expect(tools, name).toEqual(["read_file", "respond"])
        }
        // JSON Schema's $schema is no keyword any of them takes
        expect(JSON.stringify(json.tools), name).not.toContain("$schema")
      }
      expect(Presets.presets.mistral.structuredOutput).toBe("native")
      expect(Presets.presets.deepseek.structuredOutput).toBe("tool")
    }))

  it.live("Mistral's dialect: no stream_options, random_seed for seed, no reasoning_effort, max_tokens; the others keep OpenAI's names", () =>
    Effect.gen(function*() {
      const tuned: ProviderTypes.ProviderRequest = { ...request, seed: 7, maxTokens: 500, temperature: 0.3, reasoning: { effort: "low" } }
      const mistral = (yield* sentBy("mistral", {}, tuned)).json
      expect(mistral.stream_options).toBeUndefined()
      expect(mistral).toMatchObject({ random_seed: 7, max_tokens: 500, temperature: 0.3, stream: true })
      expect("seed" in mistral || "reasoning_effort" in mistral || "max_completion_tokens" in mistral).toBe(false)
      const groq = (yield* sentBy("groq", {}, tuned)).json
      expect(groq).toMatchObject({ seed: 7, reasoning_effort: "low", stream_options: { include_usage: true }, max_completion_tokens: 500 })
      expect((yield* sentBy("deepseek", {}, tuned)).json.max_tokens).toBe(500)
      expect("random_seed" in groq).toBe(false)
    }))

  it.live("options override the preset; OpenRouter's attribution headers go with every request", () =>
    Effect.gen(function*() {
      const received = yield* sentBy("openrouter", {
        structuredOutput: "native",
        headers: Presets.openRouterAttribution({ url: "https://example.com/app", title: "Example" })
      })
      expect(received.headers["http-referer"]).toBe("https://example.com/app")
      expect(received.headers["x-title"]).toBe("Example")
      expect(received.json.response_format?.type).toBe("json_schema")
      expect(Presets.openRouterAttribution({})).toEqual({})
    }))
})
