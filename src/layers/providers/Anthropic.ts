/**
 * `Anthropic`: the Messages API with `stream: true`, over `effect/http`.
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { Anthropic } from "effect-agent-loop"
 *
 * const claude = Anthropic.layer().pipe(Layer.provide(NodeHttpClient.layerUndici))
 * ```
 */
import { Duration, Effect, Layer, Redacted } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { Provider, type ProviderShape } from "../../services/Provider.ts"
import { makeDecoder, requestBody } from "./anthropicWire.ts"
import { streamCall } from "./httpStream.ts"
import { configKey, defaultTimeout } from "./OpenAiCompatible.ts"

/** How to reach the API. */
export interface Options {
  /** Default `https://api.anthropic.com`. */
  readonly baseUrl?: string
  /** Default: the `ANTHROPIC_API_KEY` config value. */
  readonly apiKey?: Redacted.Redacted<string>
  /** Default `2023-06-01`. */
  readonly version?: string
  /** Extra headers on every request (e.g. `anthropic-beta`). */
  readonly headers?: Readonly<Record<string, string>>
  /** Longest wait for the response, then between two pieces of the stream. Default 2 minutes. */
  readonly timeout?: Duration.Input
}

/** A Messages API provider. */
export const make = (options: Options = {}): Effect.Effect<ProviderShape, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const apiKey = options.apiKey ?? (yield* configKey("ANTHROPIC_API_KEY"))
    const url = `${(options.baseUrl ?? "https://api.anthropic.com").replace(/\/+$/, "")}/v1/messages`
    const timeout = Duration.fromInputUnsafe(options.timeout ?? defaultTimeout)
    const secrets = apiKey === undefined ? [] : [apiKey]
    const base = HttpClientRequest.post(url).pipe(
      HttpClientRequest.setHeaders({
        accept: "text/event-stream",
        "anthropic-version": options.version ?? "2023-06-01",
        ...options.headers
      }),
      (request) => apiKey === undefined ? request : HttpClientRequest.setHeader(request, "x-api-key", Redacted.value(apiKey))
    )
    return {
      stream: (request) =>
        streamCall({ client, request: HttpClientRequest.bodyJsonUnsafe(base, requestBody(request)), timeout, secrets, makeDecoder })
    }
  })

/** The provider as a layer; needs an `HttpClient` (e.g. `NodeHttpClient.layerUndici`). */
export const layer = (options: Options = {}): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(options))
