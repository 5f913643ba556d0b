/**
 * A streaming HTTP model API as a Provider: the API key, URL, headers and timeouts of one vendor,
 * then per call send, map a failed status to a provider error, and decode the SSE body. Shared
 * by the vendor layers so configuration, timeouts, cancellation, error mapping and secret
 * scrubbing behave the same for every vendor; each vendor supplies only what sets it apart.
 */
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as UrlParams from "effect/http/UrlParams"
import { type ProviderError, ProviderRejected, ProviderUnavailable } from "../../domain/errors.ts"
import type { ProviderChunk, ProviderRequest } from "../../domain/Provider.ts"
import { trimEndWhile } from "../../domain/text.ts"
import type { ProviderShape } from "../../services/Provider.ts"
import { Secrets } from "../../services/Secrets.ts"
import { connectionFailure, targetOfUrl } from "../../domain/connectionFailure.ts"
import { fromResponse, scrubError } from "./httpErrors.ts"
import { originOf, sameOrigin } from "./ownHosts.ts"
import { decodeSse, type WireDecoder } from "./sse.ts"
import { userAgent } from "./userAgent.ts"

/** The options every HTTP provider takes; each vendor's `Options` extends them. */
export interface HttpOptions {
  /** The API's root; each vendor documents its default. */
  readonly baseUrl?: string
  /** The API key, sent to `baseUrl` whatever its host. */
  readonly apiKey?: Redacted.Redacted<string>
  /**
   * The config value (environment variable) the key is read from, named explicitly: sent to
   * `baseUrl` whatever its host; `null` reads none. Unset, the vendor's own variable is read only
   * when `baseUrl` is on the vendor's own host (its default), so a key exported for a cloud never
   * reaches a local server or a proxy unasked; a 401 from such a server says so.
   */
  readonly apiKeyEnv?: string | null
  /** Extra headers on every request (e.g. OpenRouter's `HTTP-Referer`, Anthropic's `anthropic-beta`). */
  readonly headers?: Readonly<Record<string, string>>
  /** Longest wait for the response, then between two pieces of the stream. Default 2 minutes. */
  readonly timeout?: Duration.Input
  /**
   * Longest time for one whole response, from sending the request to its last byte, so a server
   * that drips a byte now and then cannot hold a turn forever. Default 10 minutes.
   */
  readonly totalTimeout?: Duration.Input
  /**
   * Send the trace context of the current span (`traceparent`, `b3`) to the provider. Off by
   * default: a third party learns nothing about the caller's tracing.
   */
  readonly propagateTrace?: boolean
}

/** Headers that carry a credential made for a call, and the secrets they carry. */
export interface Authorization {
  readonly headers: Readonly<Record<string, string>>
  readonly secrets: ReadonlyArray<Redacted.Redacted<string>>
}

/** What sets one vendor's API apart. */
export interface Vendor {
  /** Its `gen_ai.provider.name` (`ProviderShape.name`). */
  readonly name: string
  readonly defaultBaseUrl: string
  /**
   * Appended to the base URL, e.g. `/chat/completions`; a function when the path names the model
   * (Gemini's `/models/{model}:streamGenerateContent`).
   */
  readonly path: string | ((request: ProviderRequest) => string)
  /**
   * The config values the API key is read from (the first one set) when the options neither carry
   * one nor name one, and only when the base URL is the vendor's own (`ownHost`); none for an API
   * without keys.
   */
  readonly keyName?: string | ReadonlyArray<string> | undefined
  /** Whether a base URL is on the vendor's own host; default: the origin of `defaultBaseUrl`. */
  readonly ownHost?: (url: string) => boolean
  /** Why a credential in the environment was not sent, for the error of a 401 or 403 (when the vendor resolved its key itself). */
  readonly withheld?: string
  /** The vendor's fixed headers; the caller's `headers` override them. */
  readonly headers?: Readonly<Record<string, string>>
  /** The headers carrying the key; nothing overrides them. */
  readonly auth: (apiKey: Redacted.Redacted<string>) => Readonly<Record<string, string>>
  /**
   * Headers made for each call, after the fixed ones: credentials that expire and are refreshed
   * (Google's OAuth access tokens), with the secrets in them, which are registered with `Secrets`
   * before anything is sent.
   */
  readonly authorize?: Effect.Effect<Authorization, ProviderError>
  readonly body: (request: ProviderRequest) => unknown
  /**
   * What the API would refuse in a request, caught before it is sent with a clearer message (an
   * option it does not have, a combination it rejects); `undefined` when the request is fine.
   */
  readonly check?: (request: ProviderRequest) => ProviderError | undefined
  readonly makeDecoder: () => WireDecoder
  /**
   * A last step before sending, given the request with its JSON body as the exact text sent
   * (AWS's SigV4 signs both); default none.
   */
  readonly prepare?: (request: HttpClientRequest.HttpClientRequest, body: string) => Effect.Effect<HttpClientRequest.HttpClientRequest, ProviderError>
  /** The error of a failed response, for an API with words of its own; default `fromResponse`. */
  readonly fromResponse?: typeof fromResponse
  /** How the body is read, for an API that streams something else than SSE; default `decodeSse`. */
  readonly decode?: (bytes: Stream.Stream<Uint8Array, ProviderError>, makeDecoder: () => WireDecoder) => Stream.Stream<ProviderChunk, ProviderError>
}

/** The most characters of an error response's body read: enough for any API's error JSON. */
export const MAX_ERROR_BODY = 64 * 1024

/** The default request timeout: generous, since local models can take long to load. */
const defaultTimeout: Duration.Duration = Duration.minutes(2)
/** The default bound of one whole response: long reasoning runs take minutes, not tens of them. */
const defaultTotalTimeout: Duration.Duration = Duration.minutes(10)

/** A timeout, with the `host:port` it waited on when known. */
const timedOut = (timeout: Duration.Duration, what: string, target?: string) =>
  new ProviderUnavailable({ message: `${what} within ${Duration.format(timeout)}${target === undefined ? "" : ` from ${target}`}` })

/** The key, and when one in the environment was not sent to this host, the line saying so. */
export interface ResolvedKey {
  readonly apiKey: Redacted.Redacted<string> | undefined
  readonly withheld: string | undefined
}

const configured = (name: string) => Config.option(Config.Redacted(name)).pipe(Effect.orDie, Effect.map(Option.getOrUndefined))

/**
 * The key of `options`, else of the variable they name (`apiKeyEnv`), else of the first of the
 * vendor's own variables (`names`) that is set, when `ownHost` (the base URL is the vendor's own).
 * A key of its own variables left unsent because the host is another is named in `withheld`.
 */
export const resolveKey = (
  options: HttpOptions,
  names: string | ReadonlyArray<string> | undefined,
  ownHost: boolean,
  baseUrl: string
): Effect.Effect<ResolvedKey> =>
  Effect.gen(function*() {
    if (options.apiKey !== undefined) return { apiKey: options.apiKey, withheld: undefined }
    if (options.apiKeyEnv === null) return { apiKey: undefined, withheld: undefined }
    if (options.apiKeyEnv !== undefined) return { apiKey: yield* configured(options.apiKeyEnv), withheld: undefined }
    for (const name of names === undefined ? [] : typeof names === "string" ? [names] : names) {
      const found = yield* configured(name)
      if (found === undefined) continue
      if (ownHost) return { apiKey: found, withheld: undefined }
      const withheld = `${name} is set but was not sent to ${originOf(baseUrl)}, which is not the provider's own host: ` +
        `pass apiKey, or apiKeyEnv: "${name}", to send it there`
      yield* Effect.logDebug(withheld)
      return { apiKey: undefined, withheld }
    }
    return { apiKey: undefined, withheld: undefined }
  })

/** A 401 or 403 from a server that was sent no key while one was withheld says why. */
const explained = (error: ProviderError, withheld: string | undefined): ProviderError =>
  withheld !== undefined && error._tag === "ProviderRejected" && (error.status === 401 || error.status === 403)
    ? new ProviderRejected({ message: `${error.message} (${withheld})`, status: error.status })
    : error

/**
 * Builds a vendor's provider; the key is read from the Effect config so tests can supply it, and
 * registered with `Secrets` so that no text the loop handles can carry it.
 */
export const httpProvider = (vendor: Vendor, options: HttpOptions): Effect.Effect<ProviderShape, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = HttpClient.withScope(yield* HttpClient.HttpClient)
    const given = options.baseUrl ?? vendor.defaultBaseUrl
    const ownHost = options.baseUrl === undefined || (vendor.ownHost ?? sameOrigin(vendor.defaultBaseUrl))(given)
    const resolved = yield* resolveKey(options, vendor.keyName, ownHost, given)
    const apiKey = resolved.apiKey
    const withheld = resolved.withheld ?? vendor.withheld
    const root = trimEndWhile(given, (char) => char === "/")
    const path = vendor.path
    const url = typeof path === "string" ? `${root}${path}` : root
    const target = targetOfUrl(root)
    const timeout = Duration.fromInputUnsafe(options.timeout ?? defaultTimeout)
    const totalTimeout = Duration.fromInputUnsafe(options.totalTimeout ?? defaultTotalTimeout)
    const secrets = yield* Secrets
    if (apiKey !== undefined) secrets.add([apiKey])
    // The registry ignores very short values; the key itself is removed whatever its length.
    const key = apiKey === undefined ? "" : Redacted.value(apiKey)
    const scrub = (text: string) => secrets.scrub(key === "" ? text : text.split(key).join("<redacted>"))
    const base = HttpClientRequest.post(url).pipe(HttpClientRequest.setHeaders({
      accept: "text/event-stream",
      "user-agent": userAgent,
      ...vendor.headers,
      ...options.headers,
      ...(apiKey === undefined ? {} : vendor.auth(apiKey))
    }))
    const decode = vendor.decode ?? decodeSse
    const call = (request: HttpClientRequest.HttpClientRequest | Effect.Effect<HttpClientRequest.HttpClientRequest, ProviderError>): Stream.Stream<ProviderChunk, ProviderError> =>
      Stream.unwrap(Effect.gen(function*() {
        const response = yield* (Effect.isEffect(request) ? Effect.flatMap(request, client.execute) : client.execute(request)).pipe(
          Effect.provideService(HttpClient.TracerPropagationEnabled, options.propagateTrace === true),
          Effect.mapError((error) => error._tag === "HttpClientError" ? fromTransport("Request failed", error) : error),
          Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(timedOut(timeout, "No response", target)) })
        )
        if (response.status < 200 || response.status >= 300) {
          // only the head of an error body: a server may send one without end
          let head = ""
          const body = yield* response.stream.pipe(
            Stream.decodeText,
            Stream.takeUntil((piece) => (head += piece).length >= MAX_ERROR_BODY),
            Stream.runDrain,
            Effect.map(() => head.slice(0, MAX_ERROR_BODY)),
            Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.succeed("") }),
            Effect.orElseSucceed(() => "")
          )
          const nowMs = yield* Clock.currentTimeMillis
          return Stream.fail(explained((vendor.fromResponse ?? fromResponse)({ status: response.status, headers: response.headers, body, nowMs }), withheld))
        }
        const bytes = response.stream.pipe(
          Stream.mapError((error) => fromTransport("Connection lost mid-stream", error)),
          Stream.timeoutOrElse({
            duration: timeout,
            orElse: () => Stream.fail(timedOut(timeout, "The stream stalled: no data", target))
          })
        )
        return decode(bytes, vendor.makeDecoder)
      })).pipe(
        Stream.interruptWhen(Effect.flatMap(Effect.sleep(totalTimeout), () => Effect.fail(timedOut(totalTimeout, "The response did not complete", target)))),
        Stream.mapError((error) => scrubError(error, scrub))
      )
    // The HTTP request lives in the stream's scope, so interrupting the consumer (a hard abort)
    // aborts the connection.
    const check = vendor.check
    const authorize = vendor.authorize
    const prepare = vendor.prepare
    /** The base request at the URL of `request` (a path that names the model differs per request). */
    const addressed = (request: ProviderRequest) => typeof path === "string" ? base : HttpClientRequest.setUrl(base, `${root}${path(request)}`)
    const requestOf = (request: ProviderRequest) => HttpClientRequest.bodyJsonUnsafe(addressed(request), vendor.body(request))
    /** A request that a last step (`prepare`) completes, with its JSON body as the exact text sent. */
    const prepared = (prepare: NonNullable<Vendor["prepare"]>, request: ProviderRequest) => {
      const text = JSON.stringify(vendor.body(request))
      return prepare(HttpClientRequest.bodyText(addressed(request), text, "application/json"), text)
    }
    // A refreshed credential is registered before it is sent, so no echo of it survives a scrub.
    // Getting a credential is bounded like waiting for the response: a token endpoint may hang too.
    const credential = authorize?.pipe(
      Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(timedOut(timeout, "No credentials")) })
    )
    const authorized = credential === undefined ? undefined : (request: HttpClientRequest.HttpClientRequest) =>
      Stream.unwrap(Effect.map(credential, (authorization) => {
        secrets.add(authorization.secrets)
        return call(HttpClientRequest.setHeaders(request, authorization.headers))
      })).pipe(Stream.mapError((error) => scrubError(error, scrub)))
    return {
      name: vendor.name,
      stream: (request) => {
        const refused = check?.(request)
        if (refused !== undefined) return Stream.fail(refused)
        if (prepare !== undefined) return call(prepared(prepare, request))
        return authorized === undefined ? call(requestOf(request)) : authorized(requestOf(request))
      }
    }
  })

/**
 * A transport failure (refused, reset, dropped mid-stream) is the network, so retryable, and its
 * message names the cause beneath the HTTP client's "Transport error" with host and port. A URL
 * that cannot be parsed, or a certificate that is not trusted, is a configuration mistake that no
 * retry fixes.
 */
export const fromTransport = (what: string, cause: unknown): ProviderError => {
  if (isInvalidUrl(cause)) return new ProviderRejected({ message: `Invalid URL: ${causeText(cause)}` })
  const request = requestOf(cause)
  const failure = connectionFailure(cause, request?.url)
  if (failure === undefined) return new ProviderUnavailable({ message: `${what}: ${causeText(cause)}` })
  const shown = request === undefined ? "" : ` (${request.method} ${UrlParams.redactUrl(request.url)})`
  const message = `${what}${shown}: ${failure.text}`
  return failure.kind === "tls" ? new ProviderRejected({ message }) : new ProviderUnavailable({ message })
}

/** The request an `HttpClientError` failed on. */
const requestOf = (cause: unknown): { readonly method: string; readonly url: string } | undefined => {
  const request = (cause as { readonly reason?: { readonly request?: { readonly method?: unknown; readonly url?: unknown } } } | null)
    ?.reason?.request
  return typeof request?.method === "string" && typeof request.url === "string" ? { method: request.method, url: request.url } : undefined
}

const isInvalidUrl = (cause: unknown): boolean =>
  typeof cause === "object" && cause !== null && "reason" in cause &&
  (cause.reason as { readonly _tag?: unknown } | undefined)?._tag === "InvalidUrlError"

const causeText = (cause: unknown): string =>
  cause instanceof Error ? cause.message : typeof cause === "string" ? cause : "unknown error"
