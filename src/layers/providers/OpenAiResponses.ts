/**
 * `OpenAiResponses`: OpenAI's Responses API (`/v1/responses`) with `stream: true`, over
 * `effect/http`. Reasoning models keep their reasoning across tool calls here: the encrypted
 * reasoning items of a reply are kept on it (`providerBlocks`) and sent back, with nothing
 * stored at OpenAI (`store: false`). Errors map as for the Chat Completions provider.
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { OpenAiResponses } from "effect-agent-loop"
 *
 * const gpt = OpenAiResponses.layer().pipe(Layer.provide(NodeHttpClient.layerUndici))
 * ```
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as HttpClient from "effect/http/HttpClient"
import { Provider, type ProviderShape } from "../../services/Provider.ts"
import { type HttpOptions, httpProvider } from "./httpStream.ts"
import { OPENAI_BASE_URL } from "./ownHosts.ts"
import { check, makeDecoder, requestBody } from "./responsesWire.ts"

/**
 * How to reach the API: `baseUrl` defaults to `https://api.openai.com/v1`, `apiKey` to the
 * `OPENAI_API_KEY` config value, read only for OpenAI's own URL (see `apiKeyEnv`).
 */
export interface Options extends HttpOptions {}

/** A Responses API provider. */
export const make = (options: Options = {}): Effect.Effect<ProviderShape, never, HttpClient.HttpClient> =>
  httpProvider({
    name: "openai",
    defaultBaseUrl: OPENAI_BASE_URL,
    path: "/responses",
    keyName: "OPENAI_API_KEY",
    auth: (apiKey) => ({ authorization: `Bearer ${Redacted.value(apiKey)}` }),
    body: (request) => requestBody(request),
    check,
    makeDecoder
  }, options)

/** The provider as a layer; needs an `HttpClient` (e.g. `NodeHttpClient.layerUndici`). */
export const layer = (options: Options = {}): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(options))
