/**
 * Talking to an MCP server's authorization server (discovery, registration, tokens), as the MCP
 * authorization specification says.
 *
 * - **discovery**: the protected resource metadata (RFC 9728), at the URL the server's
 *   `WWW-Authenticate` names or at `/.well-known/oauth-protected-resource` (path-aware, then the
 *   root), names the authorization server; its metadata (RFC 8414, then OpenID Connect discovery)
 *   names the endpoints. A server with no resource metadata is its own authorization server (the
 *   2025-03-26 revision), with `/authorize`, `/token` and `/register` as defaults.
 * - **registration**: dynamic client registration (RFC 7591) as a public client (no secret,
 *   PKCE), with the loopback redirect URI.
 * - **tokens**: the authorization code (with its PKCE verifier) and refresh token grants, with
 *   the resource indicator (RFC 8707).
 *
 * Redirects are not followed and the endpoints must be `https` (or `http` on a loopback address),
 * since they carry codes, secrets and tokens.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import type { OAuthClient, OAuthTokens } from "./store.ts"

/** The authorization could not be done; `message` says which step and why. */
export class OAuthError extends Schema.TaggedError<OAuthError>()("OAuthError", {
  message: Schema.String
}) {}

/** What discovery found. */
export interface AuthServerInfo {
  readonly issuer: string
  readonly authorizationEndpoint: string
  readonly tokenEndpoint: string
  readonly registrationEndpoint: string | undefined
  /** `token_endpoint_auth_methods_supported`, empty when not said. */
  readonly authMethods: ReadonlyArray<string>
  /** The resource indicator to send (the protected resource metadata's `resource`), if any. */
  readonly resource: string | undefined
  /** The scope to ask for: the challenge's, else the resource's `scopes_supported`. */
  readonly scope: string | undefined
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"])

/** An endpoint that may carry credentials: `https`, or `http` on a loopback address. */
export const isSafeEndpoint = (value: string): boolean => {
  const url = URL.parse(value)
  return url !== null && (url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK.has(url.hostname)))
}

const endpoint = (value: unknown, what: string) =>
  typeof value === "string" && isSafeEndpoint(value)
    ? Effect.succeed(value)
    : Effect.fail(new OAuthError({ message: `the authorization server's ${what} ${typeof value === "string" ? `${value} is not https` : "is missing"}` }))

/** A parameter of a `WWW-Authenticate: Bearer …` challenge (`resource_metadata`, `scope`). */
export const challengeParam = (header: string | undefined, name: string): string | undefined => {
  if (header === undefined || !/^\s*bearer\b/i.test(header)) return undefined
  const match = new RegExp(`(?:^|[\\s,])${name}=(?:"([^"]*)"|([^\\s,]+))`, "i").exec(header)
  return match === null ? undefined : (match[1] ?? match[2])
}

/** GETs JSON; `undefined` for a 4xx (the next candidate is tried), a failure for anything else. */
const getJson = (client: HttpClient.HttpClient, url: string) =>
  Effect.gen(function*() {
    const response = yield* client.execute(HttpClientRequest.get(url).pipe(HttpClientRequest.acceptJson)).pipe(
      Effect.mapError((error) => new OAuthError({ message: `cannot reach ${url}: ${error.message}` }))
    )
    if (response.status >= 400 && response.status < 500) return undefined
    return yield* jsonOf(response, url)
  }).pipe(Effect.scoped)

const jsonOf = (response: HttpClientResponse.HttpClientResponse, url: string) =>
  Effect.gen(function*() {
    if (response.status < 200 || response.status >= 300) {
      const body = yield* response.text.pipe(Effect.orElseSucceed(() => ""))
      const error = (() => {
        try {
          const json: unknown = JSON.parse(body)
          return isRecord(json) && typeof json["error"] === "string"
            ? `: ${json["error"]}${typeof json["error_description"] === "string" ? ` (${json["error_description"]})` : ""}`
            : ""
        } catch {
          return ""
        }
      })()
      return yield* new OAuthError({ message: `${url} answered ${response.status}${error.slice(0, 300)}` })
    }
    const json = yield* response.json.pipe(Effect.mapError(() => new OAuthError({ message: `${url} did not answer JSON` })))
    if (!isRecord(json)) return yield* new OAuthError({ message: `${url} did not answer a JSON object` })
    return json
  })

/** The well-known URLs of `base` in the order RFC 8414 and OpenID Connect discovery give them. */
const wellKnown = (base: string, names: ReadonlyArray<string>, appendForm: boolean): ReadonlyArray<string> => {
  const url = new URL(base)
  const path = url.pathname.replace(/\/$/, "")
  if (path === "") return names.map((name) => new URL(`/.well-known/${name}`, url.origin).href)
  return [
    ...names.map((name) => new URL(`/.well-known/${name}${path}`, url.origin).href),
    ...(appendForm ? [new URL(`${path}/.well-known/openid-configuration`, url.origin).href] : []),
    ...(appendForm ? [] : names.map((name) => new URL(`/.well-known/${name}`, url.origin).href))
  ]
}

const firstJson = (client: HttpClient.HttpClient, urls: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    for (const url of urls) {
      const json = yield* getJson(client, url)
      if (json !== undefined) return json
    }
    return undefined
  })

/**
 * Discovers the authorization server of the MCP server at `serverUrl`. `challenge` is the
 * `WWW-Authenticate` header of its 401, when there was one.
 */
export const discover = (client: HttpClient.HttpClient, serverUrl: string, challenge: string | undefined) =>
  Effect.gen(function*() {
    const named = challengeParam(challenge, "resource_metadata")
    const metadataUrls = named !== undefined && URL.parse(named, serverUrl) !== null
      ? [URL.parse(named, serverUrl)!.href]
      : wellKnown(serverUrl, ["oauth-protected-resource"], false)
    const resourceMeta = yield* firstJson(client, metadataUrls)
    let resource: string | undefined
    let issuer = new URL("/", serverUrl).href
    if (resourceMeta !== undefined) {
      resource = typeof resourceMeta["resource"] === "string" ? resourceMeta["resource"] : undefined
      // the metadata must be about this server (its origin, as the SDKs check), or its tokens would be sent elsewhere
      if (resource !== undefined && URL.parse(resource)?.origin !== new URL(serverUrl).origin) {
        return yield* new OAuthError({ message: `the protected resource metadata names ${resource}, not ${serverUrl}` })
      }
      const servers = resourceMeta["authorization_servers"]
      if (Array.isArray(servers) && typeof servers[0] === "string") issuer = servers[0]
    }
    if (!isSafeEndpoint(issuer)) return yield* new OAuthError({ message: `the authorization server ${issuer} is not https` })
    const meta = yield* firstJson(client, wellKnown(issuer, ["oauth-authorization-server", "openid-configuration"], true))
    const scopes = resourceMeta?.["scopes_supported"]
    const scope = challengeParam(challenge, "scope") ??
      (Array.isArray(scopes) && scopes.every((s) => typeof s === "string") && scopes.length > 0 ? scopes.join(" ") : undefined)
    if (meta === undefined) {
      // no metadata: the server's origin holds the default endpoints (MCP 2025-03-26)
      return {
        issuer,
        authorizationEndpoint: new URL("/authorize", issuer).href,
        tokenEndpoint: new URL("/token", issuer).href,
        registrationEndpoint: new URL("/register", issuer).href,
        authMethods: [],
        resource,
        scope
      } satisfies AuthServerInfo
    }
    const types = meta["response_types_supported"]
    if (Array.isArray(types) && !types.includes("code")) {
      return yield* new OAuthError({ message: `the authorization server ${issuer} does not offer the authorization code flow` })
    }
    const challenges = meta["code_challenge_methods_supported"]
    if (Array.isArray(challenges) && !challenges.includes("S256")) {
      return yield* new OAuthError({ message: `the authorization server ${issuer} does not support PKCE with S256` })
    }
    const methods = meta["token_endpoint_auth_methods_supported"]
    return {
      issuer: typeof meta["issuer"] === "string" ? meta["issuer"] : issuer,
      authorizationEndpoint: yield* endpoint(meta["authorization_endpoint"], "authorization endpoint"),
      tokenEndpoint: yield* endpoint(meta["token_endpoint"], "token endpoint"),
      registrationEndpoint: meta["registration_endpoint"] === undefined ? undefined : yield* endpoint(meta["registration_endpoint"], "registration endpoint"),
      authMethods: Array.isArray(methods) ? methods.filter((m): m is string => typeof m === "string") : [],
      resource,
      scope
    } satisfies AuthServerInfo
  })

/** Registers agent-loop as a public client redirecting to `redirectUri` (RFC 7591). */
export const register = (client: HttpClient.HttpClient, info: AuthServerInfo, redirectUri: string) =>
  Effect.gen(function*() {
    if (info.registrationEndpoint === undefined) {
      return yield* new OAuthError({ message: `the authorization server ${info.issuer} offers no dynamic client registration` })
    }
    const url = info.registrationEndpoint
    const response = yield* client.execute(HttpClientRequest.post(url).pipe(
      HttpClientRequest.acceptJson,
      HttpClientRequest.bodyJsonUnsafe({
        client_name: "agent-loop",
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
        ...(info.scope === undefined ? {} : { scope: info.scope })
      })
    )).pipe(Effect.mapError((error) => new OAuthError({ message: `cannot reach ${url}: ${error.message}` })))
    const json = yield* jsonOf(response, url)
    if (typeof json["client_id"] !== "string") return yield* new OAuthError({ message: `${url} registered no client_id` })
    const secret = typeof json["client_secret"] === "string" ? json["client_secret"] : undefined
    const said = json["token_endpoint_auth_method"]
    const authMethod = typeof said === "string" && ["none", "client_secret_basic", "client_secret_post"].includes(said)
      ? said
      : secret === undefined ? "none" : info.authMethods.includes("client_secret_post") && !info.authMethods.includes("client_secret_basic") ? "client_secret_post" : "client_secret_basic"
    return {
      clientId: json["client_id"],
      ...(secret === undefined ? {} : { clientSecret: Redacted.make(secret) }),
      authMethod,
      redirectUri
    } satisfies OAuthClient
  }).pipe(Effect.scoped)

/** Where tokens come from, and as whom. */
export interface TokenRequest {
  readonly tokenEndpoint: string
  readonly client: OAuthClient
  readonly resource: string | undefined
}

/**
 * Posts a grant to the token endpoint and returns the tokens, `expiresAt` from the Clock; a
 * refresh that returns no new refresh token keeps `keepRefresh`.
 */
export const requestTokens = (
  client: HttpClient.HttpClient,
  request: TokenRequest,
  grant: Readonly<Record<string, string>>,
  keepRefresh?: Redacted.Redacted<string>
) =>
  Effect.gen(function*() {
    const { client: registered, tokenEndpoint: url } = request
    const secret = registered.clientSecret === undefined ? undefined : Redacted.value(registered.clientSecret)
    const basic = registered.authMethod === "client_secret_basic" && secret !== undefined
    const params = {
      ...grant,
      ...(request.resource === undefined ? {} : { resource: request.resource }),
      ...(basic ? {} : { client_id: registered.clientId }),
      ...(!basic && secret !== undefined ? { client_secret: secret } : {})
    }
    let http = HttpClientRequest.post(url).pipe(HttpClientRequest.acceptJson, HttpClientRequest.bodyUrlParams(params))
    if (basic) http = HttpClientRequest.basicAuth(http, encodeURIComponent(registered.clientId), encodeURIComponent(secret))
    const response = yield* client.execute(http).pipe(Effect.mapError((error) => new OAuthError({ message: `cannot reach ${url}: ${error.message}` })))
    const json = yield* jsonOf(response, url)
    const access = json["access_token"]
    if (typeof access !== "string" || access === "") return yield* new OAuthError({ message: `${url} returned no access_token` })
    const now = yield* Clock.currentTimeMillis
    const expiresIn = typeof json["expires_in"] === "number" ? json["expires_in"] : Number(json["expires_in"])
    const refresh = typeof json["refresh_token"] === "string" ? Redacted.make(json["refresh_token"]) : keepRefresh
    return {
      accessToken: Redacted.make(access),
      ...(refresh === undefined ? {} : { refreshToken: refresh }),
      tokenType: typeof json["token_type"] === "string" ? json["token_type"] : "Bearer",
      ...(Number.isFinite(expiresIn) && expiresIn > 0 ? { expiresAt: now + expiresIn * 1000 } : {}),
      ...(typeof json["scope"] === "string" ? { scope: json["scope"] } : {})
    } satisfies OAuthTokens
  }).pipe(Effect.scoped)
