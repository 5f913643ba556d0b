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
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as HttpClient from "effect/http/HttpClient"
import { Provider, type ProviderShape } from "../../services/Provider.ts"
import { makeDecoder } from "./anthropicStream.ts"
import { check, requestBody } from "./anthropicWire.ts"
import { type HttpOptions, httpProvider } from "./httpStream.ts"
import { ANTHROPIC_BASE_URL } from "./ownHosts.ts"

/**
 * How to reach the API: `baseUrl` defaults to `https://api.anthropic.com`, `apiKey` to the
 * `ANTHROPIC_API_KEY` config value, read only for Anthropic's own URL (see `apiKeyEnv`).
 */
export interface Options extends HttpOptions {
  /** Default `2023-06-01`. */
  readonly version?: string
  /**
   * Prompt caching: `cache_control` breakpoints on the system prompt, the tool list and the newest
   * messages, so each call of a turn reads the prefix the previous one wrote. Default true.
   */
  readonly promptCaching?: boolean
}

/** A Messages API provider. */
export const make = (options: Options = {}): Effect.Effect<ProviderShape, never, HttpClient.HttpClient> =>
  httpProvider({
    name: "anthropic",
    defaultBaseUrl: ANTHROPIC_BASE_URL,
    path: "/v1/messages",
    keyName: "ANTHROPIC_API_KEY",
    headers: { "anthropic-version": options.version ?? "2023-06-01" },
    auth: (apiKey) => ({ "x-api-key": Redacted.value(apiKey) }),
    body: (request) => requestBody(request, { promptCaching: options.promptCaching ?? true }),
    check,
    makeDecoder
  }, options)

/** The provider as a layer; needs an `HttpClient` (e.g. `NodeHttpClient.layerUndici`). */
export const layer = (options: Options = {}): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(options))
