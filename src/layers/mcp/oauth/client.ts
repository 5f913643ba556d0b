/**
 * The HTTP client of a server authorized with OAuth: every request to the server's origin carries
 * its access token; a token past its expiry (on the Effect Clock, with a margin) is refreshed
 * first, and a 401 answer is met with one refresh and one retry. A refreshed token is saved to the
 * store at once (another process reads it there), and every token is registered with `Secrets`.
 * When no refresh works, the 401 goes through: the caller says to log in again.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Semaphore from "effect/Semaphore"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type { SecretsShape } from "../../../services/Secrets.ts"
import { requestTokens } from "./authServer.ts"
import type { OAuthEntry, OAuthStore } from "./store.ts"

/** A token this close to its expiry is refreshed before it is sent. */
export const EXPIRY_MARGIN_MS = 30_000

const sameToken = (a: Redacted.Redacted<string>, b: Redacted.Redacted<string>) => Redacted.value(a) === Redacted.value(b)

const tokensOf = (entry: OAuthEntry) => [entry.tokens.accessToken, ...(entry.tokens.refreshToken === undefined ? [] : [entry.tokens.refreshToken])]

/**
 * `inner` with the stored authorization of `serverUrl` applied (as is, when the store has none).
 * Token requests go through `inner` too.
 */
export const authorizedClient = (
  inner: HttpClient.HttpClient,
  serverUrl: string,
  store: OAuthStore,
  secrets: SecretsShape
): Effect.Effect<HttpClient.HttpClient> =>
  Effect.gen(function*() {
    let entry = yield* store.get(serverUrl)
    if (entry === undefined) return inner
    secrets.add(tokensOf(entry))
    const origin = new URL(serverUrl).origin
    const lock = Semaphore.makeUnsafe(1)

    const expired = (current: OAuthEntry) =>
      Effect.map(Clock.currentTimeMillis, (now) => current.tokens.expiresAt !== undefined && now >= current.tokens.expiresAt - EXPIRY_MARGIN_MS)

    /** Refreshes unless the token `used` was already replaced; whether a usable token is held now. */
    const refresh = (used: Redacted.Redacted<string>) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const held = entry!
        if (!sameToken(held.tokens.accessToken, used)) return true
        // another process may have refreshed it (and spent the refresh token) already
        const stored = yield* store.get(serverUrl)
        if (stored !== undefined && !sameToken(stored.tokens.accessToken, used) && !(yield* expired(stored))) {
          secrets.add(tokensOf(stored))
          entry = stored
          return true
        }
        const refreshToken = (stored ?? held).tokens.refreshToken
        if (refreshToken === undefined) return false
        const tokens = yield* requestTokens(
          inner,
          { tokenEndpoint: held.tokenEndpoint, client: (stored ?? held).client, resource: held.resource },
          { grant_type: "refresh_token", refresh_token: Redacted.value(refreshToken) },
          refreshToken
        )
        const fresh = { ...(stored ?? held), tokens }
        secrets.add(tokensOf(fresh))
        entry = fresh
        yield* store.set(serverUrl, fresh)
        return true
      })).pipe(
        Effect.catch((error) => Effect.as(Effect.logDebug(`MCP OAuth: the token of ${serverUrl} could not be refreshed: ${secrets.scrub(error.message)}`), false))
      )

    const token = Effect.gen(function*() {
      const current = entry!
      if ((yield* expired(current)) && current.tokens.refreshToken !== undefined) yield* refresh(current.tokens.accessToken)
      return entry!.tokens.accessToken
    })

    const ours = (request: HttpClientRequest.HttpClientRequest) => URL.parse(request.url)?.origin === origin
    const withBearer = HttpClient.mapRequestEffect(inner, (request) =>
      ours(request) ? Effect.map(token, (access) => HttpClientRequest.bearerToken(request, access)) : Effect.succeed(request))
    return HttpClient.transform(withBearer, (effect, request) =>
      Effect.flatMap(effect, (response) => {
        if (response.status !== 401 || !ours(request)) return Effect.succeed(response)
        const sent = request.headers["authorization"]?.replace(/^Bearer\s+/i, "")
        if (sent === undefined) return Effect.succeed(response)
        return Effect.flatMap(refresh(Redacted.make(sent)), (ok) => ok ? withBearer.execute(request) : Effect.succeed(response))
      }))
  })
