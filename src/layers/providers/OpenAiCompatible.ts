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
 * const ollama = OpenAiCompatible.layer({ baseUrl: "http://localhost:11434/v1" }).pipe(
 *   Layer.provide(NodeHttpClient.layerUndici))
 * ```
 */
import { Config, Duration, Effect, Layer, Option, type Redacted } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { Provider, type ProviderShape } from "../../services/Provider.ts"
import { streamCall } from "./httpStream.ts"
import { makeDecoder, type MaxTokensField, requestBody } from "./openAiWire.ts"

/** How to reach the server. */
export interface Options {
  /** Default `https://api.openai.com/v1`. */
  readonly baseUrl?: string
  /** Default: the `OPENAI_API_KEY` config value; none is sent when neither is set (local servers). */
  readonly apiKey?: Redacted.Redacted<string>
  /** Extra headers on every request (e.g. OpenRouter's `HTTP-Referer`). */
  readonly headers?: Readonly<Record<string, string>>
  /** Longest wait for the response, then between two pieces of the stream. Default 2 minutes. */
  readonly timeout?: Duration.Input
  /** The field carrying `maxTokens`; default `max_tokens`. */
  readonly maxTokensField?: MaxTokensField
}

/** The default request timeout: generous, since local models can take long to load. */
export const defaultTimeout: Duration.Duration = Duration.minutes(2)

/** Reads an optional secret from the Effect config, so tests can supply it with a ConfigProvider. */
export const configKey = (name: string) =>
  Config.option(Config.Redacted(name)).pipe(Effect.orDie, Effect.map(Option.getOrUndefined))

/** A Chat Completions provider. */
export const make = (options: Options = {}): Effect.Effect<ProviderShape, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const apiKey = options.apiKey ?? (yield* configKey("OPENAI_API_KEY"))
    const url = `${(options.baseUrl ?? "https://api.openai.com/v1").replace(/\/+$/, "")}/chat/completions`
    const timeout = Duration.fromInputUnsafe(options.timeout ?? defaultTimeout)
    const secrets = apiKey === undefined ? [] : [apiKey]
    const base = HttpClientRequest.post(url).pipe(
      HttpClientRequest.setHeaders({ accept: "text/event-stream", ...options.headers }),
      (request) => apiKey === undefined ? request : HttpClientRequest.bearerToken(request, apiKey)
    )
    return {
      stream: (request) =>
        streamCall({
          client,
          request: HttpClientRequest.bodyJsonUnsafe(base, requestBody(request, options.maxTokensField)),
          timeout,
          secrets,
          makeDecoder
        })
    }
  })

/** The provider as a layer; needs an `HttpClient` (e.g. `NodeHttpClient.layerUndici`). */
export const layer = (options: Options = {}): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(options))
