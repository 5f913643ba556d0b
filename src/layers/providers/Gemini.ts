/**
 * `Gemini`: Google's Gemini API (`generativelanguage.googleapis.com`), streaming with
 * `streamGenerateContent?alt=sse`, over `effect/http`. The key comes from `GEMINI_API_KEY`, else
 * `GOOGLE_API_KEY`, and goes in the `x-goog-api-key` header.
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { Gemini } from "effect-agent-loop"
 *
 * const gemini = Gemini.layer().pipe(Layer.provide(NodeHttpClient.layerUndici))
 * ```
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as HttpClient from "effect/http/HttpClient"
import { Provider, type ProviderShape } from "../../services/Provider.ts"
import { check, makeDecoder, PROVIDER, requestBody, type StructuredOutput } from "./geminiWire.ts"
import { type HttpOptions, httpProvider } from "./httpStream.ts"

/**
 * How to reach the API: `baseUrl` defaults to `https://generativelanguage.googleapis.com/v1beta`,
 * `apiKey` to the `GEMINI_API_KEY` config value, else `GOOGLE_API_KEY`.
 */
export interface Options extends HttpOptions {
  /** How a typed answer is asked for; default `auto` (see `StructuredOutput` in the wire). */
  readonly structuredOutput?: StructuredOutput
}

/** The model's path under the base URL: `models/{model}:streamGenerateContent?alt=sse` (a `models/` prefix is kept once). */
export const streamPath = (model: string): string =>
  `/${model.startsWith("models/") ? model : `models/${model}`}:streamGenerateContent?alt=sse`

/** The key of the options, else of `GEMINI_API_KEY`, else of `GOOGLE_API_KEY` (the names Google's clients read). */
const apiKeyOf = (options: Options) =>
  options.apiKey !== undefined
    ? Effect.succeed(options.apiKey)
    : Config.option(Config.Redacted("GEMINI_API_KEY").pipe(Config.orElse(() => Config.Redacted("GOOGLE_API_KEY")))).pipe(
      Effect.orDie,
      Effect.map(Option.getOrUndefined)
    )

/** A Gemini API provider. */
export const make = (options: Options = {}): Effect.Effect<ProviderShape, never, HttpClient.HttpClient> =>
  Effect.flatMap(apiKeyOf(options), (apiKey) =>
    httpProvider({
      defaultBaseUrl: "https://generativelanguage.googleapis.com/v1beta",
      path: (request) => streamPath(request.model),
      keyName: "GEMINI_API_KEY",
      auth: (key) => ({ "x-goog-api-key": Redacted.value(key) }),
      body: (request) => requestBody(request, { provider: PROVIDER, ...(options.structuredOutput === undefined ? {} : { structuredOutput: options.structuredOutput }) }),
      check,
      makeDecoder: makeDecoder(PROVIDER)
    }, apiKey === undefined ? options : { ...options, apiKey }))

/** The provider as a layer; needs an `HttpClient` (e.g. `NodeHttpClient.layerUndici`). */
export const layer = (options: Options = {}): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(options))
