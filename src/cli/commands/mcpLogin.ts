/**
 * `agent-loop mcp login NAME` and `mcp logout NAME`: OAuth for a remote MCP server, as Claude
 * Code's `/mcp` authenticates one. `login` runs the authorization code flow with PKCE
 * (`layers/mcp/oauth/login.ts`): it prints the authorization URL (and opens it with `--open`),
 * waits on a loopback redirect on 127.0.0.1, and keeps the tokens in the data directory's
 * `mcp-oauth.json` (0600), where `run`, `chat` and `mcp list` find them (`config/mcpOAuth.ts`). `logout`
 * forgets them.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import { thirdPartyClient } from "../../layers/mcp/connect.ts"
import { expandConfig } from "../../layers/mcp/expand.ts"
import { DEFAULT_LOGIN_TIMEOUT, login as oauthLogin } from "../../layers/mcp/oauth/login.ts"
import { Secrets } from "../../services/Secrets.ts"
import { dataDir, ensureDataDir, mcpOAuthFile } from "../config/dataDir.ts"
import { cliOAuth } from "../config/mcpOAuth.ts"
import { fail } from "../terminal/failure.ts"
import { openBrowser } from "../terminal/openBrowser.ts"
import { clean } from "../terminal/safeText.ts"
import { Screen } from "../terminal/screen.ts"
import { configured, type ListFlags } from "./mcp.ts"

/** What `login` and `logout` are given. */
export interface LoginFlags extends ListFlags {
  readonly name: string
  readonly open: boolean
}

/** The remote server named `name` among those a run would start, its URL and headers expanded. */
const remoteServer = (flags: LoginFlags) =>
  Effect.gen(function*() {
    const { servers, workspace } = yield* configured(flags)
    const server = servers.find((s) => s.name === flags.name)
    if (server === undefined) {
      return yield* fail(`no MCP server named ${clean(flags.name)}${servers.length === 0 ? "" : ` (configured: ${servers.map((s) => s.name).join(", ")})`}`)
    }
    const expanded = expandConfig(server.config, process.env, { workspaceFolder: workspace })
    if (Result.isFailure(expanded)) return yield* fail(`${clean(flags.name)}: environment variable ${expanded.failure.variable} is not set (used in ${expanded.failure.field})`)
    const config = expanded.success
    if (config.type === "stdio") return yield* fail(`${clean(flags.name)} is started with a command; OAuth is for servers reached at a URL`)
    const headers = Object.fromEntries(Object.entries(config.headers ?? {}).map(([name, value]) => [name, Redacted.value(value)]))
    ;(yield* Secrets).add(Object.values(headers))
    return { url: config.url, headers }
  })

/** `agent-loop mcp login NAME`. */
export const login = (flags: LoginFlags) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const secrets = yield* Secrets
    const { headers, url } = yield* remoteServer(flags)
    if (Object.keys(headers).some((name) => name.toLowerCase() === "authorization")) {
      yield* screen.line(`agent-loop: note: ${clean(flags.name)}'s config sets its own Authorization header, which is sent instead of the token this login stores`)
    }
    const data = dataDir()
    yield* ensureDataDir(data).pipe(Effect.catch((error) => fail(`cannot create ${data}: ${error.message}`)))
    const { store } = cliOAuth()
    const entry = yield* oauthLogin(yield* thirdPartyClient, {
      serverUrl: url,
      headers,
      store,
      onUrl: (authorizationUrl) =>
        Effect.gen(function*() {
          yield* screen.line(`To authorize ${clean(flags.name)}, open this URL in a browser:\n\n  ${authorizationUrl}\n`)
          yield* screen.line(`agent-loop: waiting for the authorization (at most ${Duration.format(DEFAULT_LOGIN_TIMEOUT)}; Ctrl-C gives up)`)
          if (flags.open) yield* Effect.sync(() => openBrowser(authorizationUrl))
        })
    }).pipe(
      Effect.scoped,
      Effect.catch((error) => fail(`${clean(flags.name)}: ${secrets.scrub(error.message)}`))
    )
    secrets.add(entry.tokens.refreshToken === undefined ? [entry.tokens.accessToken] : [entry.tokens.accessToken, entry.tokens.refreshToken])
    const expires = entry.tokens.expiresAt === undefined ? "" : `, refreshed as it expires`
    yield* screen.raw(`${clean(`authorized ${flags.name} (${url}) with ${entry.issuer}${expires}; the tokens are in ${mcpOAuthFile(data)}`)}\n`)
  })

/** `agent-loop mcp logout NAME`: forgets the server's tokens (the authorization server may still hold the grant). */
export const logout = (flags: Omit<LoginFlags, "open">) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const { url } = yield* remoteServer({ ...flags, open: false })
    const { store } = cliOAuth()
    if ((yield* store.get(url)) === undefined) return yield* fail(`${clean(flags.name)} is not logged in (${clean(url)})`)
    yield* store.set(url, undefined).pipe(Effect.catch((error) => fail(error.message)))
    yield* screen.raw(`${clean(`logged out of ${flags.name} (${url})`)}\n`)
  })
