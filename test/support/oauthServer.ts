/**
 * An OAuth 2.1 authorization server on 127.0.0.1 for tests, as MCP's authorization specification
 * expects one: RFC 8414 metadata, dynamic client registration (RFC 7591), the authorization
 * endpoint (which approves at once, as a user clicking "Allow" would, and redirects with the code),
 * and the token endpoint (authorization code with PKCE S256, checked; refresh tokens, rotated).
 * `guard` protects an MCP server (`mcpHttpServer.ts`) with the tokens it issued and serves that
 * server's protected resource metadata (RFC 9728). Everything it is asked is recorded. It stops
 * with the scope.
 */
import { Effect } from "effect"
import { createHash, randomUUID } from "node:crypto"
import * as http from "node:http"
import type { Guard } from "./mcpHttpServer.ts"

/** What the token endpoint was asked. */
export interface TokenCall {
  readonly grant: string
  readonly params: Record<string, string>
}

/** A running authorization server. */
export interface AuthServer {
  readonly issuer: string
  /** Registered clients' redirect URIs, by client id. */
  readonly clients: Map<string, ReadonlyArray<string>>
  readonly tokenCalls: Array<TokenCall>
  readonly authorizeCalls: Array<URLSearchParams>
  /** Access tokens the protected server accepts now. */
  readonly valid: Set<string>
  /** How long an access token lives, as `expires_in` says. */
  expiresIn: number
  /** A guard for the MCP server at `resourceUrl`: its metadata, and 401 without a valid token. */
  readonly guard: (resourceUrl: () => string) => Guard
}

const base64url = (buffer: Buffer) => buffer.toString("base64url")

/** Starts the server (its metadata with `metadata` over the defaults); it stops with the scope. */
export const start = (options: { readonly metadata?: (issuer: string) => Record<string, unknown> } = {}) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ server: http.Server; state: AuthServer }>((ok) => {
        const codes = new Map<string, { clientId: string; redirectUri: string; challenge: string; resource: string | null }>()
        const refreshTokens = new Map<string, string>()
        const state: AuthServer = {
          issuer: "",
          clients: new Map(),
          tokenCalls: [],
          authorizeCalls: [],
          valid: new Set(),
          expiresIn: 3600,
          guard: (resourceUrl) => (req) => {
            const url = new URL(req.url ?? "/", "http://127.0.0.1")
            const metadataPath = `/.well-known/oauth-protected-resource${new URL(resourceUrl()).pathname}`
            if (url.pathname === metadataPath) {
              return { status: 200, headers: {}, body: { resource: resourceUrl(), authorization_servers: [state.issuer], scopes_supported: ["tools"] } }
            }
            const token = req.headers.authorization?.replace(/^Bearer /, "")
            if (token !== undefined && state.valid.has(token)) return undefined
            return {
              status: 401,
              headers: { "www-authenticate": `Bearer resource_metadata="${new URL(metadataPath, resourceUrl()).href}", scope="tools"` }
            }
          }
        }
        const issue = (clientId: string) => {
          const access = `at-${randomUUID()}`
          const refresh = `rt-${randomUUID()}`
          state.valid.add(access)
          refreshTokens.set(refresh, clientId)
          return { access_token: access, refresh_token: refresh, token_type: "Bearer", expires_in: state.expiresIn }
        }
        const server = http.createServer((req, res) => {
          const parts: Array<Buffer> = []
          req.on("data", (b: Buffer) => parts.push(b))
          req.on("end", () => {
            const json = (status: number, body: unknown) => {
              res.writeHead(status, { "content-type": "application/json" })
              res.end(JSON.stringify(body))
            }
            const url = new URL(req.url ?? "/", state.issuer)
            const body = Buffer.concat(parts).toString("utf8")
            if (url.pathname === "/.well-known/oauth-authorization-server") {
              return json(200, {
                issuer: state.issuer,
                authorization_endpoint: `${state.issuer}/authorize`,
                token_endpoint: `${state.issuer}/token`,
                registration_endpoint: `${state.issuer}/register`,
                response_types_supported: ["code"],
                grant_types_supported: ["authorization_code", "refresh_token"],
                code_challenge_methods_supported: ["S256"],
                token_endpoint_auth_methods_supported: ["none"],
                ...options.metadata?.(state.issuer)
              })
            }
            if (url.pathname === "/register" && req.method === "POST") {
              const meta = JSON.parse(body) as { redirect_uris?: Array<string> }
              const id = `client-${state.clients.size + 1}`
              state.clients.set(id, meta.redirect_uris ?? [])
              return json(201, { ...meta, client_id: id, token_endpoint_auth_method: "none" })
            }
            if (url.pathname === "/authorize") {
              const q = url.searchParams
              state.authorizeCalls.push(q)
              const redirect = q.get("redirect_uri") ?? ""
              const clientId = q.get("client_id") ?? ""
              if (!(state.clients.get(clientId) ?? []).includes(redirect) || q.get("code_challenge_method") !== "S256" || q.get("response_type") !== "code") {
                return json(400, { error: "invalid_request" })
              }
              const code = `code-${randomUUID()}`
              codes.set(code, { clientId, redirectUri: redirect, challenge: q.get("code_challenge") ?? "", resource: q.get("resource") })
              const to = new URL(redirect)
              to.searchParams.set("code", code)
              to.searchParams.set("state", q.get("state") ?? "")
              res.writeHead(302, { location: to.href })
              return res.end()
            }
            if (url.pathname === "/token" && req.method === "POST") {
              const params = Object.fromEntries(new URLSearchParams(body))
              state.tokenCalls.push({ grant: params["grant_type"] ?? "", params })
              if (params["grant_type"] === "authorization_code") {
                const granted = codes.get(params["code"] ?? "")
                codes.delete(params["code"] ?? "")
                const verified = granted !== undefined &&
                  base64url(createHash("sha256").update(params["code_verifier"] ?? "").digest()) === granted.challenge &&
                  granted.clientId === params["client_id"] && granted.redirectUri === params["redirect_uri"] &&
                  granted.resource === (params["resource"] ?? null)
                return verified ? json(200, issue(granted.clientId)) : json(400, { error: "invalid_grant" })
              }
              if (params["grant_type"] === "refresh_token") {
                const clientId = refreshTokens.get(params["refresh_token"] ?? "")
                if (clientId === undefined || clientId !== params["client_id"]) return json(400, { error: "invalid_grant" })
                refreshTokens.delete(params["refresh_token"]!)
                return json(200, issue(clientId))
              }
              return json(400, { error: "unsupported_grant_type" })
            }
            json(404, { error: "not_found" })
          })
        })
        server.listen(0, "127.0.0.1", () => {
          ;(state as { issuer: string }).issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`
          ok({ server, state })
        })
      })
    ),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((ok) => {
          server.closeAllConnections()
          server.close(() => ok())
        })
      )
  ).pipe(Effect.map(({ state }) => state))
