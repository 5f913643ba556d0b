/**
 * `Bedrock`: models on Amazon Bedrock through the Converse API (`ConverseStream`), over
 * `effect/http`. Requests are signed with AWS Signature Version 4 by AWS's own signer, with
 * credentials from AWS's default chain (environment, `AWS_PROFILE` and the shared files, SSO,
 * container and instance roles), or with a Bedrock API key sent as a bearer token. The reply is
 * AWS's binary event stream, parsed by AWS's own codec. Those AWS packages are optional peer
 * dependencies, loaded on the first request:
 *
 * `npm install @smithy/signature-v4 @aws-crypto/sha256-js @aws-sdk/credential-providers @smithy/eventstream-codec`
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { Bedrock } from "effect-agent-loop"
 *
 * // the region from AWS_REGION, the credentials from the default chain
 * const bedrock = Bedrock.layer({ region: "us-east-1" }).pipe(Layer.provide(NodeHttpClient.layerUndici))
 * ```
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import type * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import { type ProviderError, ProviderRejected } from "../../domain/errors.ts"
import { Provider, type ProviderShape } from "../../services/Provider.ts"
import { Secrets } from "../../services/Secrets.ts"
import { check, fromException, fromHttpResponse, makeDecoder, requestBody } from "./bedrockWire.ts"
import { decodeEventStream, type FrameParser } from "./eventStream.ts"
import { type HttpOptions, httpProvider, resolveKey } from "./httpStream.ts"
import { AWS_DOMAINS, httpsUnder } from "./ownHosts.ts"
import { importPeer } from "./optionalPeer.ts"

/** AWS credentials given outright (instead of the default chain). */
export interface Credentials {
  readonly accessKeyId: string
  readonly secretAccessKey: Redacted.Redacted<string>
  readonly sessionToken?: Redacted.Redacted<string>
}

/**
 * How to reach Bedrock. `region` defaults to the `AWS_REGION`, then `AWS_DEFAULT_REGION` config
 * value; `baseUrl` to `https://bedrock-runtime.REGION.amazonaws.com` (set it for a VPC endpoint or
 * a proxy). `apiKey` is a Bedrock API key (default the `AWS_BEARER_TOKEN_BEDROCK` config value,
 * read for AWS's own hosts only, `*.amazonaws.com`; a proxy elsewhere gets it only when `apiKey` or
 * `apiKeyEnv` says so): with one, requests are not signed.
 */
export interface Options extends HttpOptions {
  readonly region?: string
  /** Default: AWS's default credential chain (`fromNodeProviderChain`). */
  readonly credentials?: Credentials
  /** The shared-files profile the chain reads; default `AWS_PROFILE`, then `default`. */
  readonly profile?: string
  /** `cachePoint` blocks on the stable prefix; default on for the models that take them (Claude, Nova). */
  readonly promptCaching?: boolean
}

/** The packages to install for Bedrock, for the error that says they are missing. */
export const PEER_PACKAGES = ["@smithy/signature-v4", "@aws-crypto/sha256-js", "@aws-sdk/credential-providers", "@smithy/eventstream-codec"]

const missing = (cause: unknown) =>
  new ProviderRejected({
    message: `Bedrock needs AWS's packages, which are optional: npm install ${PEER_PACKAGES.join(" ")} (${
      cause instanceof Error ? cause.message : String(cause)
    })`
  })

const utf8 = { decode: (bytes: Uint8Array) => new TextDecoder().decode(bytes), encode: (text: string) => new TextEncoder().encode(text) }

/** AWS's event-stream codec, loaded when first needed. */
const loadCodec = Effect.tryPromise({
  try: async (): Promise<FrameParser> => {
    const { EventStreamCodec } = await importPeer<typeof import("@smithy/eventstream-codec")>("@smithy/eventstream-codec")
    const codec = new EventStreamCodec(utf8.decode, utf8.encode)
    return (frame) => codec.decode(frame)
  },
  catch: missing
})

/** What the signer signs with: the credentials' values, as AWS's packages take them. */
type CredentialSource = () => Promise<{ readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string }>

/** AWS's SigV4 signer for Bedrock in `region`, and what it signs one request's headers with. */
const loadSigner = (region: string, source: (load: () => Promise<CredentialSource>) => Promise<CredentialSource>) =>
  Effect.tryPromise({
    try: async () => {
      const [{ SignatureV4 }, { Sha256 }] = await Promise.all([
        importPeer<typeof import("@smithy/signature-v4")>("@smithy/signature-v4"),
        importPeer<typeof import("@aws-crypto/sha256-js")>("@aws-crypto/sha256-js")
      ])
      const credentials = await source(async () => {
        const { fromNodeProviderChain } = await importPeer<typeof import("@aws-sdk/credential-providers")>("@aws-sdk/credential-providers")
        return fromNodeProviderChain()
      })
      const signer = new SignatureV4({ service: "bedrock", region, credentials, sha256: Sha256 })
      return async (url: string, body: string): Promise<Record<string, string>> => {
        const target = new URL(url)
        const signed = await signer.sign({
          method: "POST",
          protocol: target.protocol,
          hostname: target.hostname,
          ...(target.port === "" ? {} : { port: Number(target.port) }),
          path: target.pathname,
          query: {},
          headers: { host: target.host, "content-type": "application/json" },
          body
        })
        // the HTTP client sets `host` itself, to the same value
        const { host: _, ...headers } = signed.headers
        return headers
      }
    },
    catch: missing
  })

/** A Converse provider. */
export const make = (options: Options = {}): Effect.Effect<ProviderShape, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const config = (name: string) => Config.option(Config.String(name)).pipe(Effect.orDie, Effect.map(Option.getOrUndefined))
    const region = options.region ?? (yield* config("AWS_REGION")) ?? (yield* config("AWS_DEFAULT_REGION"))
    if (region === undefined) {
      const noRegion = new ProviderRejected({ message: "Bedrock: no AWS region: set AWS_REGION, or pass the region (settings \"region\")" })
      return { stream: () => Stream.fail(noRegion) }
    }
    // `httpProvider` drops a trailing `/`
    const root = options.baseUrl ?? `https://bedrock-runtime.${region}.amazonaws.com`
    const { apiKey, withheld } = yield* resolveKey(options, "AWS_BEARER_TOKEN_BEDROCK", options.baseUrl === undefined || httpsUnder(AWS_DOMAINS)(root), root)
    const secrets = yield* Secrets
    const given = options.credentials
    if (given !== undefined) secrets.add([given.secretAccessKey, ...(given.sessionToken === undefined ? [] : [given.sessionToken])])
    // The credentials' secret parts are registered as each is first used, so a refreshed one is scrubbed too.
    const registered = (load: CredentialSource): CredentialSource => async () => {
      const credentials = await load()
      secrets.add([credentials.secretAccessKey, ...(credentials.sessionToken === undefined ? [] : [credentials.sessionToken])])
      return credentials
    }
    const codec = yield* Effect.cached(loadCodec)
    const signer = yield* Effect.cached(loadSigner(region, async (chain) =>
      registered(given === undefined
        ? await chain()
        : async () => ({
          accessKeyId: given.accessKeyId,
          secretAccessKey: Redacted.value(given.secretAccessKey),
          ...(given.sessionToken === undefined ? {} : { sessionToken: Redacted.value(given.sessionToken) })
        }))
    ))
    const sign = (request: HttpClientRequest.HttpClientRequest, body: string): Effect.Effect<HttpClientRequest.HttpClientRequest, ProviderError> =>
      Effect.flatMap(signer, (signWith) =>
        Effect.tryPromise({
          try: () => signWith(request.url, body),
          catch: (cause) =>
            new ProviderRejected({ message: `Bedrock: no AWS credentials: ${cause instanceof Error ? cause.message : String(cause)}` })
        })).pipe(Effect.map((headers) => HttpClientRequest.setHeaders(request, headers)))
    return yield* httpProvider({
      name: "aws.bedrock",
      defaultBaseUrl: root,
      path: (request) => `/model/${encodeURIComponent(request.model)}/converse-stream`,
      keyName: undefined,
      ...(withheld === undefined ? {} : { withheld }),
      headers: { accept: "application/vnd.amazon.eventstream" },
      auth: (token) => ({ authorization: `Bearer ${Redacted.value(token)}` }),
      body: (request) => requestBody(request, options.promptCaching === undefined ? {} : { promptCaching: options.promptCaching }),
      check,
      makeDecoder,
      fromResponse: fromHttpResponse,
      // a Bedrock API key is a bearer token: nothing to sign
      ...(apiKey === undefined ? { prepare: sign } : {}),
      decode: (bytes, makeWireDecoder) =>
        Stream.unwrap(Effect.map(codec, (parse) => decodeEventStream(parse, fromException)(bytes, makeWireDecoder)))
    }, { ...options, baseUrl: root, apiKeyEnv: null, ...(apiKey === undefined ? {} : { apiKey }) })
  })

/** The provider as a layer; needs an `HttpClient` (e.g. `NodeHttpClient.layerUndici`). */
export const layer = (options: Options = {}): Layer.Layer<Provider, never, HttpClient.HttpClient> => Layer.effect(Provider, make(options))
