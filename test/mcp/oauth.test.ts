/**
 * OAuth for remote MCP servers, against a loopback authorization server and a protected MCP
 * server written here (`test/support/oauthServer.ts`): discovery from the 401, dynamic client
 * registration, the authorization code with PKCE through the loopback redirect (the test plays the
 * browser), tokens stored 0600 and sent; refreshed when the Clock says they expired, and after a 401.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import { TestClock } from "effect/testing"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { McpTools, Secrets } from "effect-agent-loop"
import { call, tempDir } from "../support/mcpServerKit.ts"
import * as HttpMcp from "../support/mcpHttpServer.ts"
import * as AuthServer from "../support/oauthServer.ts"

/** The browser: follows the authorization URL (the server approves at once) to the loopback redirect. */
const browse = (url: string) =>
  Effect.asVoid(Effect.forkDetach(Effect.promise(async () => {
    const approved = await fetch(url, { redirect: "manual" })
    const location = approved.headers.get("location")
    if (location === null) throw new Error(`the authorization endpoint answered ${approved.status}`)
    await (await fetch(location)).text()
  })))

/** An authorization server, the MCP server it protects, and a store in a temporary directory. */
const setupWith = (metadata?: (issuer: string) => Record<string, unknown>) => Effect.gen(function*() {
  const auth = yield* AuthServer.start(metadata === undefined ? {} : { metadata })
  let url = ""
  const mcp = yield* HttpMcp.start(["2025-11-25"], auth.guard(() => url))
  url = mcp.url
  const file = nodePath.join(yield* tempDir, "data", "mcp-oauth.json")
  return { auth, mcp, file, store: McpTools.oauthFileStore(file) }
})
const setup = setupWith()

const client = Effect.provide(Effect.gen(function*() {
  return yield* HttpClient.HttpClient
}), FetchHttpClient.layer)

const loginHint = (server: string) => `run agent-loop mcp login ${server}`

describe("MCP OAuth", () => {
  it.live("a server that answers 401 is logged in to with PKCE through the loopback redirect; its token is stored 0600 and sent", () =>
    Effect.gen(function*() {
      const { auth, file, mcp, store } = yield* setup
      const refused = yield* Effect.flip(McpTools.tools({ remote: { type: "http", url: mcp.url } }, { onServerFailure: "fail", oauth: { store, loginHint } }))
      expect(refused.message).toMatch(/^MCP server "remote" failed to start: .*401.*: run agent-loop mcp login remote$/)

      const shown: Array<string> = []
      const entry = yield* McpTools.login(yield* client, { serverUrl: mcp.url, store, onUrl: (url) => Effect.andThen(Effect.sync(() => shown.push(url)), browse(url)) })
      // the authorization request: the registered client, PKCE S256, the loopback redirect, the resource and its scope
      expect(shown).toHaveLength(1)
      const asked = auth.authorizeCalls[0]!
      expect([...auth.clients.keys()]).toEqual([asked.get("client_id")])
      expect(asked.get("code_challenge_method")).toBe("S256")
      expect(asked.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(asked.get("redirect_uri")).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/)
      expect(asked.get("resource")).toBe(mcp.url)
      expect(asked.get("scope")).toBe("tools")
      expect(asked.get("state")?.length).toBeGreaterThanOrEqual(16)
      // the code was exchanged with its verifier (the server checks it against the challenge)
      expect(auth.tokenCalls.map((c) => c.grant)).toEqual(["authorization_code"])
      const access = Redacted.value(entry.tokens.accessToken)
      expect(auth.valid.has(access)).toBe(true)
      expect(nodeFs.statSync(file).mode & 0o777).toBe(0o600)
      expect(nodeFs.statSync(nodePath.dirname(file)).mode & 0o777).toBe(0o700)
      expect(JSON.parse(nodeFs.readFileSync(file, "utf8"))[mcp.url].tokens.accessToken).toBe(access)
      // the entry's tokens never show in text
      expect(String(entry.tokens.accessToken)).not.toContain(access)
      expect(JSON.stringify(entry)).not.toContain(access)

      const tools = yield* McpTools.tools({ remote: { type: "http", url: mcp.url } }, { onServerFailure: "fail", oauth: { store, loginHint } })
      expect(yield* call(tools, "lookup", { key: "k" })).toEqual({ content: "k=value" })
      // (the login's requests carried no trace context either)
      expect(mcp.requests.some((r) => r.headers["traceparent"] !== undefined)).toBe(false)
      const sent = mcp.requests.filter((r) => r.method !== undefined)
      expect(sent.map((r) => r.method)).toEqual(["initialize", "notifications/initialized", "tools/list", "tools/call"])
      expect(sent.every((r) => r.headers.authorization === `Bearer ${access}`)).toBe(true)
      expect((yield* Secrets).scrub(`token ${access}`)).toBe("token <redacted>")
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("a second login reuses the registered client when its redirect port is free again", () =>
    Effect.gen(function*() {
      const { auth, mcp, store } = yield* setup
      const http = yield* client
      yield* McpTools.login(http, { serverUrl: mcp.url, store, onUrl: browse }).pipe(Effect.scoped)
      yield* McpTools.login(http, { serverUrl: mcp.url, store, onUrl: browse }).pipe(Effect.scoped)
      expect(auth.clients.size).toBe(1)
      expect(auth.tokenCalls.map((c) => c.grant)).toEqual(["authorization_code", "authorization_code"])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.effect("a token past its expiry on the Clock is refreshed before the call is sent, and the new one stored", () =>
    Effect.gen(function*() {
      const { auth, mcp, store } = yield* setup
      auth.expiresIn = 600
      const first = yield* McpTools.login(yield* client, { serverUrl: mcp.url, store, onUrl: browse })
      const before = mcp.requests.length
      const tools = yield* McpTools.tools({ remote: { type: "http", url: mcp.url } }, { onServerFailure: "fail", oauth: { store } })
      // ten minutes on: the server no longer takes the old token either
      yield* TestClock.adjust("10 minutes")
      auth.valid.delete(Redacted.value(first.tokens.accessToken))
      expect(yield* call(tools, "lookup", { key: "later" })).toEqual({ content: "later=value" })
      expect(auth.tokenCalls.map((c) => c.grant)).toEqual(["authorization_code", "refresh_token"])
      expect(auth.tokenCalls[1]!.params["refresh_token"]).toBe(Redacted.value(first.tokens.refreshToken!))
      expect(auth.tokenCalls[1]!.params["resource"]).toBe(mcp.url)
      // refreshed before sending: the server refused nothing
      expect(mcp.requests.slice(before).map((r) => r.method)).toEqual(["initialize", "notifications/initialized", "tools/list", "tools/call"])
      const stored = yield* store.get(mcp.url)
      expect(auth.valid.has(Redacted.value(stored!.tokens.accessToken))).toBe(true)
      expect(mcp.requests.at(-1)!.headers.authorization).toBe(`Bearer ${Redacted.value(stored!.tokens.accessToken)}`)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("a token the server refuses (401) is refreshed once and the call sent again; a refresh that fails leaves the 401", () =>
    Effect.gen(function*() {
      const { auth, mcp, store } = yield* setup
      yield* McpTools.login(yield* client, { serverUrl: mcp.url, store, onUrl: browse })
      const tools = yield* McpTools.tools({ remote: { type: "http", url: mcp.url } }, { onServerFailure: "fail", oauth: { store } })
      auth.valid.clear()
      expect(yield* call(tools, "lookup", { key: "again" })).toEqual({ content: "again=value" })
      expect(auth.tokenCalls.map((c) => c.grant)).toEqual(["authorization_code", "refresh_token"])
      expect(mcp.requests.slice(-2).map((r) => r.method ?? "refused")).toEqual(["refused", "tools/call"])

      // revoked again, and the refresh token with it: the call fails with the 401
      auth.valid.clear()
      const current = (yield* store.get(mcp.url))!
      yield* store.set(mcp.url, { ...current, tokens: { ...current.tokens, refreshToken: Redacted.make("rt-revoked-long-enough") } })
      const failed = yield* Effect.flip(call(tools, "lookup", { key: "x" }))
      expect(failed.message).toMatch(/401/)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("an authorization server without PKCE S256, or with a token endpoint that is not https, is refused before the browser is involved", () =>
    Effect.gen(function*() {
      for (
        const [metadata, message] of [
          [() => ({ code_challenge_methods_supported: ["plain"] }), /does not support PKCE with S256/],
          [() => ({ token_endpoint: "http://tokens.example/token" }), /token endpoint http:\/\/tokens\.example\/token is not https/]
        ] as const
      ) {
        const { auth, file, mcp, store } = yield* setupWith(metadata)
        const shown: Array<string> = []
        const error = yield* Effect.flip(McpTools.login(yield* client, { serverUrl: mcp.url, store, onUrl: (url) => Effect.sync(() => shown.push(url)) }).pipe(Effect.scoped))
        expect(error.message).toMatch(message)
        expect(shown).toEqual([])
        expect(auth.clients.size).toBe(0)
        expect(nodeFs.existsSync(file)).toBe(false)
      }
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})
