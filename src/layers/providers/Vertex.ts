/**
 * `Vertex`: Google Cloud's Vertex AI, for Gemini (`publishers/google`, the Gemini wire) and for
 * Claude (`publishers/anthropic`, the Messages wire through `streamRawPredict`), chosen by the
 * model's name. Credentials are Application Default Credentials, found and refreshed by Google's
 * own `google-auth-library` (an optional peer dependency, loaded on the first call): the file in
 * `GOOGLE_APPLICATION_CREDENTIALS` (a service account, workload identity federation), the gcloud
 * user's (`gcloud auth application-default login`), or the metadata server on Google Cloud.
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { Vertex } from "effect-agent-loop"
 *
 * // project and location default to GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION
 * const vertex = Vertex.layer({ project: "my-project", location: "us-east5" }).pipe(Layer.provide(NodeHttpClient.layerUndici))
 * ```
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import type * as HttpClient from "effect/http/HttpClient"
import { type ProviderError, ProviderRejected, ProviderUnavailable } from "../../domain/errors.ts"
import type { ProviderRequest } from "../../domain/Provider.ts"
import { Provider, type ProviderShape } from "../../services/Provider.ts"
import * as AnthropicStream from "./anthropicStream.ts"
import * as AnthropicWire from "./anthropicWire.ts"
import * as GeminiWire from "./geminiWire.ts"
import { type Authorization, type HttpOptions, httpProvider } from "./httpStream.ts"
import { importPeer } from "./optionalPeer.ts"
import { GOOGLE_DOMAINS, httpsUnder, originOf } from "./ownHosts.ts"

/** The `provider` of the blocks kept from Gemini on Vertex: its signatures go back to Vertex only. */
export const GEMINI_PROVIDER = "vertex-gemini"

/** The `anthropic_version` Vertex takes in the body of a Claude request. */
export const ANTHROPIC_VERSION = "vertex-2023-10-16"

/** The scope of an access token for Vertex AI. */
const SCOPE = "https://www.googleapis.com/auth/cloud-platform"

/** Who publishes a model on Vertex: Anthropic for Claude models, else Google. */
export type Publisher = "google" | "anthropic"

/** The publisher of a model name: `claude-…` is Anthropic's. */
export const publisherOf = (model: string): Publisher => model.startsWith("claude-") ? "anthropic" : "google"

/** Headers as `google-auth-library` gives them: a `Headers` object, or a plain record. */
export type AuthHeaders =
  | { readonly forEach: (callback: (value: string, name: string) => void) => void }
  | Readonly<Record<string, string>>

/** Where the credentials come from when not from Application Default Credentials: any object with Google's `getRequestHeaders`. */
export interface GoogleAuthClient {
  readonly getRequestHeaders: (url?: string) => Promise<AuthHeaders>
  /** The project the credentials name; asked only when no project is given. */
  readonly getProjectId?: () => Promise<string | null | undefined>
}

/**
 * How to reach Vertex AI. Credentials found by Application Default Credentials go to Google's
 * hosts only (`*.googleapis.com`): a `baseUrl` elsewhere (a proxy) is sent them only when `auth` or
 * `keyFile` names them.
 */
export interface Options extends Omit<HttpOptions, "apiKey" | "apiKeyEnv"> {
  /** The Google Cloud project; default the `GOOGLE_CLOUD_PROJECT` config value. */
  readonly project?: string
  /** The region (`us-central1`, `europe-west4`, …) or `global`; default `GOOGLE_CLOUD_LOCATION`, else `global`. */
  readonly location?: string
  /** A service account or other credentials file, instead of the one Application Default Credentials find. */
  readonly keyFile?: string
  /** Credentials of the host's own (e.g. a `GoogleAuth` it made); default Application Default Credentials. */
  readonly auth?: GoogleAuthClient
  /** How a typed answer is asked of Gemini (see the Gemini provider); default `auto`. */
  readonly structuredOutput?: GeminiWire.StructuredOutput
  /** Prompt caching for Claude (see the Anthropic provider); default true. */
  readonly promptCaching?: boolean
  /** The `anthropic_version` of Claude requests; default `vertex-2023-10-16`, the one Google documents. */
  readonly anthropicVersion?: string
}

/**
 * The API's root for a location: `https://{location}-aiplatform.googleapis.com` for a region, the
 * global endpoint for `global`, and the multi-region endpoints for `us` and `eu`.
 */
export const baseUrlFor = (location: string): string =>
  location === "global"
    ? "https://aiplatform.googleapis.com"
    : location === "us" || location === "eu"
    ? `https://aiplatform.${location}.rep.googleapis.com`
    : `https://${location}-aiplatform.googleapis.com`

/** The path of a streaming call to `model` of `publisher`. */
export const streamPath = (project: string, location: string, publisher: Publisher, model: string): string =>
  `/v1/projects/${project}/locations/${location}/publishers/${publisher}/models/${model}:${
    publisher === "anthropic" ? "streamRawPredict" : "streamGenerateContent?alt=sse"
  }`

/** The body of a Claude request on Vertex: the Messages body without `model` (it is in the URL), with Vertex's `anthropic_version`. */
export const anthropicBody = (
  request: ProviderRequest,
  options: AnthropicWire.WireOptions = {},
  version: string = ANTHROPIC_VERSION
): Record<string, unknown> => {
  const { model: _, ...body } = AnthropicWire.requestBody(request, options)
  return { anthropic_version: version, ...body }
}

const describe = (cause: unknown): string => cause instanceof Error ? cause.message : String(cause)

/**
 * A failure to get a token: a missing library or missing credentials are the setup's, and no retry
 * helps; the token server failing or unreachable is retried.
 */
const authError = (cause: unknown): ProviderError => {
  const status = (cause as { readonly response?: { readonly status?: unknown } } | undefined)?.response?.status
  const message = `Vertex AI credentials: ${describe(cause)}`
  return typeof status === "number" && status < 500 && status !== 408 && status !== 429
    ? new ProviderRejected({ message, status })
    : typeof status === "number" || /ECONNREFUSED|ECONNRESET|ETIMEDOUT|socket hang up|network/i.test(describe(cause))
    ? new ProviderUnavailable({ message })
    : new ProviderRejected({ message })
}

/**
 * Application Default Credentials through `google-auth-library`, loaded and set up once, on the
 * first call. A known project is passed on, so the library does not look one up.
 */
const adc = (project: string | undefined, keyFile: string | undefined) => {
  let client: Promise<GoogleAuthClient> | undefined
  return Effect.tryPromise({
    try: () =>
      client ??= importPeer<typeof import("google-auth-library")>("google-auth-library").then(
        ({ GoogleAuth }) =>
          new GoogleAuth({
            scopes: [SCOPE],
            ...(project === undefined ? {} : { projectId: project }),
            ...(keyFile === undefined ? {} : { keyFilename: keyFile })
          }),
        () => {
          client = undefined
          throw new Error("Vertex AI needs the google-auth-library package for Application Default Credentials: npm install google-auth-library")
        }
      ),
    catch: authError
  })
}

/** The headers Google's client makes for a call (`authorization`, and `x-goog-user-project` when set), and the token in them. */
const authorization = (client: Effect.Effect<GoogleAuthClient, ProviderError>): Effect.Effect<Authorization, ProviderError> =>
  Effect.flatMap(client, (auth) =>
    Effect.tryPromise({
      try: async () => {
        const made = await auth.getRequestHeaders()
        const headers: Record<string, string> = {}
        if (typeof made["forEach"] === "function") (made as Headers).forEach((value, name) => headers[name.toLowerCase()] = value)
        else Object.assign(headers, made)
        const token = (headers["authorization"] ?? headers["Authorization"] ?? "").replace(/^Bearer\s+/i, "")
        if (token === "") throw new Error("no access token was issued")
        return { headers, secrets: [Redacted.make(token)] }
      },
      catch: authError
    }))

const configValue = (name: string) => Config.option(Config.String(name)).pipe(Effect.orDie, Effect.map(Option.getOrUndefined))

/**
 * The project Application Default Credentials name (a service account file's `project_id`, the
 * gcloud configuration's project, the metadata server's), for when none is given.
 */
const projectFromCredentials = (client: Effect.Effect<GoogleAuthClient, ProviderError>): Effect.Effect<string, ProviderError> =>
  Effect.flatMap(client, (auth) =>
    Effect.tryPromise({
      try: async () => {
        const project = await auth.getProjectId?.()
        if (typeof project !== "string" || project === "") throw new Error("none found")
        return project
      },
      catch: (cause) =>
        new ProviderRejected({
          message: `Vertex AI needs a project: set GOOGLE_CLOUD_PROJECT, pass project, or use credentials that name one (${describe(cause)})`
        })
    }))

/**
 * A Vertex AI provider. Without a project (from the options or `GOOGLE_CLOUD_PROJECT`), the first
 * call asks the credentials for theirs; a call fails with a `ProviderRejected` saying so when they
 * name none.
 */
export const make = (options: Options = {}): Effect.Effect<ProviderShape, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const given = options.project ?? (yield* configValue("GOOGLE_CLOUD_PROJECT"))
    let project = given === "" ? undefined : given
    const location = options.location ?? (yield* configValue("GOOGLE_CLOUD_LOCATION")) ?? "global"
    const client = options.auth === undefined ? adc(project, options.keyFile) : Effect.succeed(options.auth)
    // the environment's credentials go to Google's hosts; credentials given explicitly, wherever they are told
    const credentialed = options.auth !== undefined || options.keyFile !== undefined || options.baseUrl === undefined ||
      httpsUnder(GOOGLE_DOMAINS)(options.baseUrl)
    const withheld = `Application Default Credentials were not sent to ${originOf(options.baseUrl ?? "")}, which is not Google's: ` +
      "pass auth or keyFile to send credentials there"
    if (!credentialed) yield* Effect.logDebug(withheld)
    const shared = {
      defaultBaseUrl: baseUrlFor(location),
      auth: () => ({}),
      ...(credentialed ? { authorize: authorization(client) } : { withheld })
    }
    // the project is known by the time a path is made: given, or found before the first call
    const gemini = yield* httpProvider({
      name: "gcp.vertex_ai",
      ...shared,
      path: (request) => streamPath(project!, location, "google", request.model),
      body: (request) =>
        GeminiWire.requestBody(request, {
          provider: GEMINI_PROVIDER,
          ...(options.structuredOutput === undefined ? {} : { structuredOutput: options.structuredOutput })
        }),
      check: GeminiWire.check,
      makeDecoder: GeminiWire.makeDecoder(GEMINI_PROVIDER)
    }, options)
    const claude = yield* httpProvider({
      name: "gcp.vertex_ai",
      ...shared,
      path: (request) => streamPath(project!, location, "anthropic", request.model),
      body: (request) => anthropicBody(request, { promptCaching: options.promptCaching ?? true }, options.anthropicVersion),
      check: AnthropicWire.check,
      makeDecoder: AnthropicStream.makeDecoder
    }, options)
    const call = (request: ProviderRequest) => publisherOf(request.model) === "anthropic" ? claude.stream(request) : gemini.stream(request)
    const deadline = Duration.fromInputUnsafe(options.timeout ?? "2 minutes")
    const find = projectFromCredentials(client).pipe(Effect.timeoutOrElse({
      duration: deadline,
      orElse: () => Effect.fail(new ProviderUnavailable({ message: `No project from the credentials within ${Duration.format(deadline)}` }))
    }))
    return {
      name: "gcp.vertex_ai",
      stream: (request: ProviderRequest) =>
        project !== undefined ? call(request) : Stream.unwrap(Effect.map(find, (found) => {
          project = found
          return call(request)
        }))
    }
  })

/** The provider as a layer; needs an `HttpClient` (e.g. `NodeHttpClient.layerUndici`). */
export const layer = (options: Options = {}): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(options))
