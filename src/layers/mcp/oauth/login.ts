/**
 * Logging in to an MCP server: the authorization code flow with PKCE (S256) through a loopback
 * redirect (RFC 8252), as the MCP authorization specification describes it.
 *
 * The server is asked once without a token, so its 401 names its resource metadata; discovery
 * (`authServer.ts`) finds the authorization server; a client registered before for the same
 * authorization server is reused when its redirect port can be listened on again, else one is
 * registered (RFC 7591); a server on `127.0.0.1` (a random port) waits for the redirect;
 * `onUrl` is given the authorization URL to show (and open, if the caller wants); the code that
 * comes back with the right `state` is exchanged for tokens, which are stored. The wait is bounded
 * on the Effect Clock; the loopback server stops with the scope. `client` follows no redirect
 * (the CLI's does not), and no trace context is sent.
 */
import { createHash, randomBytes } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import { discover, OAuthError, register, requestTokens } from "./authServer.ts"
import type { OAuthEntry, OAuthStore, OAuthStoreError } from "./store.ts"

/** What `login` needs. */
export interface LoginOptions {
  readonly serverUrl: string
  /** The server's configured headers (sent with the first, unauthorized request). */
  readonly headers?: Readonly<Record<string, string>>
  readonly store: OAuthStore
  /** Shows the authorization URL to the user (and opens a browser, if asked to). */
  readonly onUrl: (url: string) => Effect.Effect<void>
  /** How long the user has to authorize. Default 5 minutes. */
  readonly timeout?: Duration.Input
}

/** How long `login` waits for the redirect by default. */
export const DEFAULT_LOGIN_TIMEOUT = Duration.minutes(5)

const base64url = (bytes: Buffer) => bytes.toString("base64url")

/** A PKCE verifier and its S256 challenge (RFC 7636). */
export const pkce = () => {
  const verifier = base64url(randomBytes(32))
  return { verifier, challenge: base64url(createHash("sha256").update(verifier).digest()) }
}

/** The `WWW-Authenticate` header of the server's answer to an initialize request without a token. */
const probe = (client: HttpClient.HttpClient, options: LoginOptions) =>
  client.execute(HttpClientRequest.post(options.serverUrl).pipe(
    HttpClientRequest.setHeaders({ ...options.headers, accept: "application/json, text/event-stream" }),
    HttpClientRequest.bodyJsonUnsafe({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "agent-loop", version: "1" } }
    })
  )).pipe(
    Effect.map((response) => response.status === 401 ? response.headers["www-authenticate"] : undefined),
    Effect.mapError((error) => new OAuthError({ message: `cannot reach ${options.serverUrl}: ${error.message}` })),
    Effect.scoped
  )

type Callback = { readonly code: string } | { readonly error: string }

const PAGE = (text: string) =>
  `<!doctype html><meta charset="utf-8"><title>agent-loop</title><p>${text.replace(/[<>&]/g, "")}</p>`

/** A loopback server on 127.0.0.1 (`port`, or any when 0 or taken) that takes one redirect with `state`. */
const loopback = (port: number, state: string) =>
  Effect.gen(function*() {
    const received = yield* Deferred.make<Callback>()
    const listen = (at: number) =>
      Effect.callback<http.Server, Error>((resume) => {
        const server = http.createServer((req, res) => {
          const url = new URL(req.url ?? "/", "http://127.0.0.1")
          if (url.pathname !== "/callback" || url.searchParams.get("state") !== state) {
            res.writeHead(400, { "content-type": "text/html; charset=utf-8" }).end(PAGE("This is not the authorization agent-loop is waiting for."))
            return
          }
          const code = url.searchParams.get("code")
          const error = url.searchParams.get("error")
          const outcome: Callback = code !== null ? { code } : { error: `${error ?? "no code"}${url.searchParams.has("error_description") ? `: ${url.searchParams.get("error_description")}` : ""}` }
          res.writeHead(200, { "content-type": "text/html; charset=utf-8", connection: "close" })
            .end(PAGE("code" in outcome ? "Authorized: you may close this page and return to agent-loop." : `Not authorized: ${outcome.error}`))
          Deferred.doneUnsafe(received, Effect.succeed(outcome))
        })
        server.once("error", (error) => resume(Effect.fail(error)))
        server.listen(at, "127.0.0.1", () => resume(Effect.succeed(server)))
      })
    const close = (server: http.Server) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
    const server = yield* Effect.acquireRelease(
      port === 0 ? listen(0) : listen(port).pipe(Effect.catch(() => listen(0))),
      close
    ).pipe(Effect.mapError((error) => new OAuthError({ message: `cannot listen on 127.0.0.1 for the redirect: ${error.message}` })))
    const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`
    return { redirectUri, received }
  })

/** Runs the flow the module doc describes, stores the authorization and returns it. */
export const login = (
  given: HttpClient.HttpClient,
  options: LoginOptions
): Effect.Effect<OAuthEntry, OAuthError | OAuthStoreError, Scope.Scope> =>
  Effect.gen(function*() {
    // third-party servers learn nothing of the caller's tracing
    const client = HttpClient.transform(given, (effect) => Effect.provideService(effect, HttpClient.TracerPropagationEnabled, false))
    const challenge = yield* probe(client, options)
    const info = yield* discover(client, options.serverUrl, challenge)
    const stored = yield* options.store.get(options.serverUrl)
    const reusable = stored !== undefined && stored.issuer === info.issuer ? stored.client : undefined
    const state = base64url(randomBytes(16))
    const { received, redirectUri } = yield* loopback(reusable === undefined ? 0 : Number(new URL(reusable.redirectUri).port), state)
    const registered = reusable?.redirectUri === redirectUri ? reusable : yield* register(client, info, redirectUri)
    const { challenge: codeChallenge, verifier } = pkce()
    const url = new URL(info.authorizationEndpoint)
    url.searchParams.set("response_type", "code")
    url.searchParams.set("client_id", registered.clientId)
    url.searchParams.set("redirect_uri", redirectUri)
    url.searchParams.set("code_challenge", codeChallenge)
    url.searchParams.set("code_challenge_method", "S256")
    url.searchParams.set("state", state)
    if (info.scope !== undefined) url.searchParams.set("scope", info.scope)
    if (info.resource !== undefined) url.searchParams.set("resource", info.resource)
    yield* options.onUrl(url.href)
    const timeout = Duration.fromInputUnsafe(options.timeout ?? DEFAULT_LOGIN_TIMEOUT)
    const answer = yield* Deferred.await(received).pipe(
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () => Effect.fail(new OAuthError({ message: `no authorization came back within ${Duration.format(timeout)}` }))
      })
    )
    if ("error" in answer) return yield* new OAuthError({ message: `the authorization server refused: ${answer.error.slice(0, 300)}` })
    const request = { tokenEndpoint: info.tokenEndpoint, client: registered, resource: info.resource }
    const tokens = yield* requestTokens(client, request, {
      grant_type: "authorization_code",
      code: answer.code,
      redirect_uri: redirectUri,
      code_verifier: verifier
    })
    const entry: OAuthEntry = {
      issuer: info.issuer,
      tokenEndpoint: info.tokenEndpoint,
      ...(info.resource === undefined ? {} : { resource: info.resource }),
      client: registered,
      tokens
    }
    yield* options.store.set(options.serverUrl, entry)
    return entry
  })
