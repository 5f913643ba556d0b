/**
 * `Azure`: OpenAI models deployed on Azure OpenAI (Azure AI Foundry), over the Chat Completions
 * or the Responses wire of the OpenAI providers. Two URL forms: the v1 API
 * (`https://RESOURCE.openai.azure.com/openai/v1/chat/completions`, no version to pick), the
 * default; and, when an `apiVersion` is given, the dated deployment URLs
 * (`.../openai/deployments/DEPLOYMENT/chat/completions?api-version=…`). The key goes in the
 * `api-key` header; a Microsoft Entra ID token, when given instead, as a bearer token.
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { Azure } from "effect-agent-loop"
 *
 * // the key from AZURE_OPENAI_API_KEY; the model names the deployment
 * const azure = Azure.layer({ baseUrl: "https://my-resource.openai.azure.com" }).pipe(
 *   Layer.provide(NodeHttpClient.layerUndici))
 * ```
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { ProviderRejected } from "../../domain/errors.ts"
import type * as HttpClient from "effect/http/HttpClient"
import type { ProviderRequest } from "../../domain/Provider.ts"
import { trimEndWhile } from "../../domain/text.ts"
import { Provider, type ProviderShape } from "../../services/Provider.ts"
import { type HttpOptions, httpProvider } from "./httpStream.ts"
import * as ChatWire from "./openAiWire.ts"
import { AZURE_DOMAINS, httpsUnder } from "./ownHosts.ts"
import * as ResponsesWire from "./responsesWire.ts"

/** The wire a deployment is spoken to with. */
export type AzureApi = "chat-completions" | "responses"

/**
 * How to reach the deployment: `baseUrl` is the resource's endpoint
 * (`https://RESOURCE.openai.azure.com`, or the same with `/openai` or `/openai/v1`), default the
 * `AZURE_OPENAI_ENDPOINT` config value; `apiKey` defaults to `AZURE_OPENAI_API_KEY`, read for the
 * `AZURE_OPENAI_ENDPOINT` endpoint and for Azure's own hosts (`*.openai.azure.com`,
 * `*.cognitiveservices.azure.com`, `*.services.ai.azure.com`); a gateway elsewhere gets it only
 * when `apiKey` or `apiKeyEnv` says so.
 */
export interface Options extends HttpOptions {
  /** Default `chat-completions`. */
  readonly api?: AzureApi
  /**
   * The dated `api-version` (e.g. `2024-10-21`): requests then go to the deployment URLs. Without
   * one they go to the v1 API, which takes no version.
   */
  readonly apiVersion?: string
  /** The deployment; default the request's model (deployments are usually named after their model). */
  readonly deployment?: string
  /** A Microsoft Entra ID access token, sent as `Authorization: Bearer`, instead of a key. */
  readonly bearerToken?: Redacted.Redacted<string>
  /** See `OpenAiCompatible.Options.structuredOutput`; default `native`. */
  readonly structuredOutput?: ChatWire.StructuredOutput
}

/** The resource's root: the endpoint without a trailing `/openai` or `/openai/v1`. */
export const resourceRoot = (endpoint: string): string =>
  trimEndWhile(endpoint, (char) => char === "/").replace(/\/openai(?:\/v1)?$/, "")

/** The URL a request goes to. */
export const urlFor = (root: string, api: AzureApi, model: string, apiVersion: string | undefined): string => {
  const path = api === "responses" ? "/responses" : "/chat/completions"
  if (apiVersion === undefined) return `${root}/openai/v1${path}`
  const version = `?api-version=${encodeURIComponent(apiVersion)}`
  // The Responses API is not per deployment: the body's model names the deployment.
  return api === "responses" ? `${root}/openai${path}${version}` : `${root}/openai/deployments/${encodeURIComponent(model)}${path}${version}`
}

/** An Azure OpenAI provider. */
export const make = (options: Options = {}): Effect.Effect<ProviderShape, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const endpoint = options.baseUrl ??
      (yield* Config.option(Config.String("AZURE_OPENAI_ENDPOINT")).pipe(Effect.orDie, Effect.map(Option.getOrUndefined)))
    if (endpoint === undefined) {
      const missing = new ProviderRejected({ message: "Azure OpenAI: no endpoint: pass baseUrl (https://RESOURCE.openai.azure.com) or set AZURE_OPENAI_ENDPOINT" })
      return { stream: () => Stream.fail(missing) }
    }
    const root = resourceRoot(endpoint)
    const api = options.api ?? "chat-completions"
    const deploymentOf = (request: ProviderRequest) => options.deployment ?? request.model
    const bearer = options.bearerToken
    const body = api === "responses"
      ? (request: ProviderRequest) => ResponsesWire.requestBody({ ...request, model: deploymentOf(request) })
      : (request: ProviderRequest) =>
        ChatWire.requestBody(
          { ...request, model: deploymentOf(request) },
          "max_completion_tokens",
          ChatWire.openAiSchemaPolicy,
          options.structuredOutput
        )
    return yield* httpProvider({
      name: "azure.ai.openai",
      defaultBaseUrl: root,
      // the path names the deployment (and the version): one per request
      path: (request) => urlFor("", api, deploymentOf(request), options.apiVersion),
      // an Entra ID token replaces the key: no key is read then
      keyName: bearer === undefined ? "AZURE_OPENAI_API_KEY" : undefined,
      // the endpoint of the environment goes with the key of the environment
      ownHost: options.baseUrl === undefined ? () => true : httpsUnder(AZURE_DOMAINS),
      auth: bearer === undefined
        ? (apiKey) => ({ "api-key": Redacted.value(apiKey) })
        : (token) => ({ authorization: `Bearer ${Redacted.value(token)}` }),
      body,
      ...(api === "responses" ? { check: ResponsesWire.check } : {}),
      makeDecoder: api === "responses" ? ResponsesWire.makeDecoder : ChatWire.makeDecoder
    }, { ...options, baseUrl: root, ...(bearer === undefined ? {} : { apiKey: bearer }) })
  })

/** The provider as a layer; needs an `HttpClient` (e.g. `NodeHttpClient.layerUndici`). */
export const layer = (options: Options = {}): Layer.Layer<Provider, never, HttpClient.HttpClient> => Layer.effect(Provider, make(options))
