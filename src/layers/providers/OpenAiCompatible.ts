/**
 * `OpenAiCompatible`: the Chat Completions API with `stream: true`, over `effect/http`. One layer
 * for OpenAI and the servers that speak its dialect (Ollama, vLLM, llama.cpp, LM Studio,
 * OpenRouter): point `baseUrl` at them.
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { OpenAiCompatible } from "effect-agent-loop"
 *
 * // a local server: no key is sent (OPENAI_API_KEY is for OpenAI's own URL)
 * const ollama = OpenAiCompatible.layer({ baseUrl: "http://localhost:11434/v1" }).pipe(
 *   Layer.provide(NodeHttpClient.layerUndici))
 * // a named cloud: its URL, its key variable (OPENROUTER_API_KEY) and its dialect
 * const openrouter = OpenAiCompatible.preset("openrouter").pipe(Layer.provide(NodeHttpClient.layerUndici))
 * ```
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as HttpClient from "effect/http/HttpClient"
import { Provider, type ProviderShape } from "../../services/Provider.ts"
import { type HttpOptions, httpProvider } from "./httpStream.ts"
import { OPENAI_BASE_URL } from "./ownHosts.ts"
import { type Dialect, makeDecoder, type MaxTokensField, maxTokensFieldFor, requestBody, type StructuredOutput } from "./openAiWire.ts"
import { type PresetName, presets } from "./presets.ts"

/**
 * How to reach the server: `baseUrl` defaults to `https://api.openai.com/v1`, `apiKey` to the
 * `OPENAI_API_KEY` config value, read only for OpenAI's own URL: a local server or a proxy gets no
 * key unless `apiKey` gives one or `apiKeyEnv` names its variable.
 */
export interface Options extends HttpOptions {
  /** The field carrying `maxTokens`; default `max_completion_tokens` on OpenAI's own URL, else `max_tokens`. */
  readonly maxTokensField?: MaxTokensField
  /**
   * Keep `additionalProperties` in tool schemas (default true). Set false for servers that reject
   * the keyword, such as Gemini's OpenAI-compatible endpoint. `$schema` is always left out.
   */
  readonly additionalProperties?: boolean
  /**
   * How a typed answer is asked for: `native` (default) with `response_format` json_schema, `tool`
   * with a `respond` tool, for servers without structured outputs.
   */
  readonly structuredOutput?: StructuredOutput
  /** The server's names for fields OpenAI names otherwise, and the fields it refuses (see `Dialect`). */
  readonly dialect?: Dialect
}

/** Where a server is when no `baseUrl` is given, and the variable its key is read from there. */
interface Home {
  readonly baseUrl: string
  readonly keyName: string | undefined
}

const OPENAI: Home = { baseUrl: OPENAI_BASE_URL, keyName: "OPENAI_API_KEY" }

const chatCompletions = (home: Home, options: Options): Effect.Effect<ProviderShape, never, HttpClient.HttpClient> =>
  httpProvider({
    name: "openai",
    defaultBaseUrl: home.baseUrl,
    path: "/chat/completions",
    keyName: home.keyName,
    auth: (apiKey) => ({ authorization: `Bearer ${Redacted.value(apiKey)}` }),
    body: (request) =>
      requestBody(
        request,
        options.maxTokensField ?? maxTokensFieldFor(options.baseUrl ?? home.baseUrl),
        { additionalProperties: options.additionalProperties ?? true },
        options.structuredOutput,
        options.dialect
      ),
    makeDecoder
  }, options)

/** A Chat Completions provider. */
export const make = (options: Options = {}): Effect.Effect<ProviderShape, never, HttpClient.HttpClient> => chatCompletions(OPENAI, options)

/** The provider as a layer; needs an `HttpClient` (e.g. `NodeHttpClient.layerUndici`). */
export const layer = (options: Options = {}): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(options))

/**
 * The provider of a named cloud or local server (`presets`): its URL, its key variable and its
 * dialect, each overridable by `options` (`baseUrl` for a server elsewhere, `headers` for
 * OpenRouter's attribution). The preset's URL is its own host: its key variable is read for it,
 * and for a `baseUrl` elsewhere only when `apiKey` or `apiKeyEnv` says so.
 */
export const preset = (name: PresetName, options: Options = {}): Layer.Layer<Provider, never, HttpClient.HttpClient> => {
  const known = presets[name]
  return Layer.effect(Provider, chatCompletions({ baseUrl: known.baseUrl, keyName: known.apiKeyEnv }, {
    structuredOutput: known.structuredOutput,
    ...("dialect" in known ? { dialect: known.dialect } : {}),
    ...("maxTokensField" in known ? { maxTokensField: known.maxTokensField } : {}),
    ...options
  }))
}
