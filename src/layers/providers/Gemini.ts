/**
 * `Gemini`: Google's Gemini API (`generativelanguage.googleapis.com`), streaming with
 * `streamGenerateContent?alt=sse`, over `effect/http`. The key comes from `GEMINI_API_KEY`, else
 * `GOOGLE_API_KEY` (for Google's own URL only), and goes in the `x-goog-api-key` header.
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
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as HttpClient from "effect/http/HttpClient"
import { Provider, type ProviderShape } from "../../services/Provider.ts"
import { check, makeDecoder, PROVIDER, requestBody, type StructuredOutput } from "./geminiWire.ts"
import { type HttpOptions, httpProvider } from "./httpStream.ts"
import { GEMINI_BASE_URL } from "./ownHosts.ts"

/**
 * How to reach the API: `baseUrl` defaults to `https://generativelanguage.googleapis.com/v1beta`,
 * `apiKey` to the `GEMINI_API_KEY` config value, else `GOOGLE_API_KEY` (the names Google's clients
 * read), read only for Google's own URL (see `apiKeyEnv`).
 */
export interface Options extends HttpOptions {
  /** How a typed answer is asked for; default `auto` (see `StructuredOutput` in the wire). */
  readonly structuredOutput?: StructuredOutput
}

/** The model's path under the base URL: `models/{model}:streamGenerateContent?alt=sse` (a `models/` prefix is kept once). */
export const streamPath = (model: string): string =>
  `/${model.startsWith("models/") ? model : `models/${model}`}:streamGenerateContent?alt=sse`

/** A Gemini API provider. */
export const make = (options: Options = {}): Effect.Effect<ProviderShape, never, HttpClient.HttpClient> =>
  httpProvider({
    name: "gcp.gemini",
    defaultBaseUrl: GEMINI_BASE_URL,
    path: (request) => streamPath(request.model),
    keyName: ["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    auth: (key) => ({ "x-goog-api-key": Redacted.value(key) }),
    body: (request) => requestBody(request, { provider: PROVIDER, ...(options.structuredOutput === undefined ? {} : { structuredOutput: options.structuredOutput }) }),
    check,
    makeDecoder: makeDecoder(PROVIDER)
  }, options)

/** The provider as a layer; needs an `HttpClient` (e.g. `NodeHttpClient.layerUndici`). */
export const layer = (options: Options = {}): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(options))
