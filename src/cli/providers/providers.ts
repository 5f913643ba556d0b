/**
 * The providers the CLI can talk to: one row each, saying what `--provider NAME` means — the
 * variables its key is read from, the registry's models it serves, what its API refuses before
 * any request, and how its layer is built. A provider is added as one more row. A row's layer
 * loads its provider's module only when it is built, so the commands that talk to no provider
 * (`run` of a cassette, `models`) never load one.
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as HttpClient from "effect/http/HttpClient"
import type { InvalidConfig, ProviderError } from "../../domain/errors.ts"
import type { ProviderRequest } from "../../domain/Provider.ts"
import type * as Anthropic from "../../layers/providers/Anthropic.ts"
import type * as Azure from "../../layers/providers/Azure.ts"
import type * as Gemini from "../../layers/providers/Gemini.ts"
import type * as GeminiWire from "../../layers/providers/geminiWire.ts"
import type * as Vertex from "../../layers/providers/Vertex.ts"
import type * as Bedrock from "../../layers/providers/Bedrock.ts"
import type * as BedrockWire from "../../layers/providers/bedrockWire.ts"
import type * as AnthropicWire from "../../layers/providers/anthropicWire.ts"
import type * as OpenAiCompatible from "../../layers/providers/OpenAiCompatible.ts"
import type * as OpenAiResponses from "../../layers/providers/OpenAiResponses.ts"
import { ANTHROPIC_BASE_URL, AWS_DOMAINS, AZURE_DOMAINS, GEMINI_BASE_URL, GOOGLE_DOMAINS, httpsUnder, OPENAI_BASE_URL, sameOrigin } from "../../layers/providers/ownHosts.ts"
import { presetNames, presets } from "../../layers/providers/presets.ts"
import type * as ResponsesWire from "../../layers/providers/responsesWire.ts"
import type { Provider } from "../../services/Provider.ts"
import { type ProviderSummary, summaryOf } from "./providerList.ts"

export { credentialVariables, providerNames } from "./providerList.ts"

/** The layer of a provider, as the CLI runs it. */
export type ProviderLayer = Layer.Layer<Provider, InvalidConfig, HttpClient.HttpClient | FileSystem.FileSystem>

/** What the settings say about reaching a provider, handed to its row's `layer`. */
export interface Connection {
  /** `--base-url` or the settings' `baseUrl`. */
  readonly baseUrl: string | undefined
  /** The key read from the row's variables (or the settings' `apiKeyEnv`). */
  readonly apiKey: Redacted.Redacted<string> | undefined
  /** The variable `apiKey` was read from. */
  readonly keyVariable: string | undefined
  /** The settings' `headers`: extra headers on every request (OpenRouter's attribution). */
  readonly headers: Readonly<Record<string, string>> | undefined
  /** The credentials taken from the environment, by variable: at start (`providerKeys.ts`), and the row's `secretVariables`. */
  readonly secrets: Readonly<Record<string, Redacted.Redacted<string>>>
  /** The settings' `region` (Bedrock), else the environment's. */
  readonly region: string | undefined
  /** The settings' `apiVersion` (Azure), else the environment's. */
  readonly apiVersion: string | undefined
  /** `--project`, else `GOOGLE_CLOUD_PROJECT`, else the settings' `project` (Vertex AI). */
  readonly project: string | undefined
  /** `--location`, else `GOOGLE_CLOUD_LOCATION`, else the settings' `location` (Vertex AI). */
  readonly location: string | undefined
}

/** One provider of `--provider`. */
export interface CliProvider extends ProviderSummary {
  /**
   * When a missing key fails before anything starts: `required` always, `unless-base-url` on the
   * provider's own URL (a `--base-url` server may need none), `optional` never (local servers,
   * credential chains).
   */
  readonly key: "required" | "unless-base-url" | "optional"
  /** The variable giving the base URL when neither `--base-url` nor the settings do (`AZURE_OPENAI_ENDPOINT`). */
  readonly baseUrlVariable?: string
  /** It has no URL of its own: one must be given. */
  readonly baseUrlRequired?: boolean
  /**
   * Whether a base URL is its own host, where the key of its own variables may go; a key read
   * from them is not sent elsewhere unless named (`--api-key-env`). Absent: it sends no key.
   */
  readonly ownHost?: (url: string) => boolean
  /**
   * Credentials found outside its key variables (Application Default Credentials), which go to
   * its own host only: the variable naming their file, which `--api-key-env` names to send them
   * elsewhere.
   */
  readonly credentialsVariable?: string
  /**
   * Other credentials, taken out of the environment (and scrubbed from every text) only when this
   * provider is chosen, and handed over in `secrets`: AWS's keys serve more than the model.
   */
  readonly secretVariables?: ReadonlyArray<string>
  /** What else it needs before anything starts, as the line saying so; `undefined` when it has it. */
  readonly requires?: (connection: Connection) => string | undefined
  /** Its API requires an output limit (for this model): the model's own is sent when none is set. */
  readonly needsMaxTokens?: boolean | ((model: string) => boolean)
  /**
   * What its API refuses, said before any request (the model option flags are checked with it);
   * loaded with it, so a run on another provider does not load this one's wire format.
   */
  readonly check?: () => Promise<(request: ProviderRequest) => ProviderError | undefined>
  readonly layer: (connection: Connection) => ProviderLayer
}

/** A provider module's layer, the module loaded when the layer is built. */
const lazily = <M>(load: () => Promise<M>, make: (module: M) => ProviderLayer): ProviderLayer =>
  Layer.unwrap(Effect.map(Effect.promise(load), make))

const openAiCompatible = () => import("../../layers/providers/OpenAiCompatible.ts")
const responsesCheck = () => import("../../layers/providers/responsesWire.ts").then((m: typeof ResponsesWire) => m.check)

const common = (connection: Connection) => ({
  ...(connection.baseUrl === undefined ? {} : { baseUrl: connection.baseUrl }),
  ...(connection.apiKey === undefined ? {} : { apiKey: connection.apiKey }),
  ...(connection.headers === undefined ? {} : { headers: connection.headers })
})

const presetRows: ReadonlyArray<CliProvider> = presetNames.map((name) => {
  const preset = presets[name]
  return {
    ...summaryOf(name),
    key: preset.apiKeyEnv === undefined ? "optional" : "unless-base-url",
    ownHost: sameOrigin(preset.baseUrl),
    layer: (connection) => lazily(openAiCompatible, (m: typeof OpenAiCompatible) => m.preset(name, common(connection)))
  }
})

/** The providers, in the order `--provider` help lists them. */
export const providers: ReadonlyArray<CliProvider> = [
  {
    ...summaryOf("openai"),
    key: "unless-base-url",
    ownHost: sameOrigin(OPENAI_BASE_URL),
    layer: (connection) => lazily(openAiCompatible, (m: typeof OpenAiCompatible) => m.layer(common(connection)))
  },
  {
    ...summaryOf("openai-responses"),
    key: "unless-base-url",
    ownHost: sameOrigin(OPENAI_BASE_URL),
    check: responsesCheck,
    layer: (connection) => lazily(() => import("../../layers/providers/OpenAiResponses.ts"), (m: typeof OpenAiResponses) => m.layer(common(connection)))
  },
  {
    ...summaryOf("anthropic"),
    key: "unless-base-url",
    ownHost: sameOrigin(ANTHROPIC_BASE_URL),
    needsMaxTokens: true,
    check: () => import("../../layers/providers/anthropicWire.ts").then((m: typeof AnthropicWire) => m.check),
    layer: (connection) => lazily(() => import("../../layers/providers/Anthropic.ts"), (m: typeof Anthropic) => m.layer(common(connection)))
  },
  {
    ...summaryOf("gemini"),
    key: "unless-base-url",
    ownHost: sameOrigin(GEMINI_BASE_URL),
    check: () => import("../../layers/providers/geminiWire.ts").then((m: typeof GeminiWire) => m.check),
    layer: (connection) => lazily(() => import("../../layers/providers/Gemini.ts"), (m: typeof Gemini) => m.layer(common(connection)))
  },
  {
    ...summaryOf("vertex"),
    key: "optional",
    ownHost: httpsUnder(GOOGLE_DOMAINS),
    credentialsVariable: "GOOGLE_APPLICATION_CREDENTIALS",
    // Claude on Vertex AI speaks Anthropic's API, which needs an output limit
    needsMaxTokens: (model) => model.startsWith("claude-"),
    layer: (connection) =>
      lazily(() => import("../../layers/providers/Vertex.ts"), (m: typeof Vertex) =>
        m.layer({
          location: connection.location ?? "global",
          ...(connection.project === undefined ? {} : { project: connection.project }),
          ...(connection.baseUrl === undefined ? {} : { baseUrl: connection.baseUrl }),
          // the credentials file named by --api-key-env: sent wherever the base URL is
          ...(connection.keyVariable === "GOOGLE_APPLICATION_CREDENTIALS" && connection.apiKey !== undefined
            ? { keyFile: Redacted.value(connection.apiKey) }
            : {})
        }))
  },
  ...(["chat-completions", "responses"] as const).map((api): CliProvider => ({
    ...summaryOf(api === "responses" ? "azure-responses" : "azure"),
    key: "required",
    baseUrlVariable: "AZURE_OPENAI_ENDPOINT",
    baseUrlRequired: true,
    ownHost: httpsUnder(AZURE_DOMAINS),
    ...(api === "responses" ? { check: responsesCheck } : {}),
    layer: (connection) =>
      lazily(() => import("../../layers/providers/Azure.ts"), (m: typeof Azure) =>
        m.layer({
          api,
          ...common({ ...connection, apiKey: connection.keyVariable === "AZURE_OPENAI_AD_TOKEN" ? undefined : connection.apiKey }),
          ...(connection.keyVariable === "AZURE_OPENAI_AD_TOKEN" && connection.apiKey !== undefined ? { bearerToken: connection.apiKey } : {}),
          ...(connection.apiVersion === undefined ? {} : { apiVersion: connection.apiVersion })
        }))
  })),
  {
    ...summaryOf("bedrock"),
    key: "optional",
    ownHost: httpsUnder(AWS_DOMAINS),
    secretVariables: ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"],
    needsMaxTokens: true,
    requires: (connection) =>
      connection.region === undefined ? "--provider bedrock needs an AWS region: export AWS_REGION, or set \"region\" in a settings file" : undefined,
    check: () => import("../../layers/providers/bedrockWire.ts").then((m: typeof BedrockWire) => m.check),
    layer: (connection) => {
      const id = connection.secrets["AWS_ACCESS_KEY_ID"]
      const secret = connection.secrets["AWS_SECRET_ACCESS_KEY"]
      const token = connection.secrets["AWS_SESSION_TOKEN"]
      return lazily(() => import("../../layers/providers/Bedrock.ts"), (m: typeof Bedrock) =>
        m.layer({
          ...common(connection),
          ...(connection.region === undefined ? {} : { region: connection.region }),
          // keys from the environment are passed on, as they were taken out of it; otherwise AWS's chain finds them
          ...(id === undefined || secret === undefined
            ? {}
            : { credentials: { accessKeyId: Redacted.value(id), secretAccessKey: secret, ...(token === undefined ? {} : { sessionToken: token }) } })
        }))
    }
  },
  ...presetRows
]


/** The provider of a name; `undefined` for an unknown one. */
export const find = (name: string): CliProvider | undefined => providers.find((provider) => provider.name === name)

