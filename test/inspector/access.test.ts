/**
 * The inspector's access checks on their own: which `Host` values a server answers (DNS
 * rebinding), and what the token, its header and the page's cookie open.
 */
import * as os from "node:os"
import { describe, expect, it } from "vitest"
import { Redacted } from "effect"
import * as Access from "../../src/inspector/access.ts"

describe("the Host check", () => {
  it("answers the loopback names at the server's port only", () => {
    const allowed = Access.hostCheck([], { hostname: "127.0.0.1", port: "4317" })
    for (const host of ["127.0.0.1:4317", "localhost:4317", "[::1]:4317", "LocalHost:4317"]) expect(allowed(host), host).toBe(true)
    for (const host of ["127.0.0.1:4318", "localhost", "evil.example:4317", "127.0.0.1.nip.io:4317", "[::2]:4317", "", "a b:4317", undefined]) {
      expect(allowed(host), String(host)).toBe(false)
    }
  })

  it("answers the address it listens on, every interface's for a wildcard, and the names of hosts", () => {
    expect(Access.hostCheck([], { hostname: "192.168.7.9", port: "80" })("192.168.7.9")).toBe(true)
    const everywhere = Access.hostCheck([], { hostname: "0.0.0.0", port: "4317" })
    expect(everywhere(`${os.hostname()}:4317`)).toBe(true)
    expect(everywhere("evil.example:4317")).toBe(false)
    const named = Access.hostCheck(["inspector.lan", "proxy.example:443", "::1"], { hostname: "127.0.0.1", port: "4317" })
    expect(named("inspector.lan:4317")).toBe(true)
    expect(named("inspector.lan:9999")).toBe(false)
    expect(named("proxy.example:443")).toBe(true)
    expect(named("proxy.example:4317")).toBe(false)
    // without a server of its own (a web handler), the port is not known: the names at any port
    expect(Access.hostCheck([], undefined)("localhost:1234")).toBe(true)
    expect(Access.hostCheck([], undefined)("evil.example:1234")).toBe(false)
  })
})

describe("the token's checks", () => {
  const token = Redacted.make("the-token-0123456789")
  const access = Access.make(token)

  it("the header or a bearer token opens the data; the query the page; the cookie holds a key that opens the page only", () => {
    expect(access.header({ [Access.TOKEN_HEADER]: "the-token-0123456789" })).toBe(true)
    expect(access.header({ authorization: "Bearer the-token-0123456789" })).toBe(true)
    expect(access.header({ authorization: "Basic the-token-0123456789" })).toBe(false)
    expect(access.header({ [Access.TOKEN_HEADER]: "the-token-012345678" })).toBe(false)
    expect(access.query("the-token-0123456789")).toBe(true)
    expect(access.query(null)).toBe(false)
    const set = access.setCookie("/")
    const [name, key] = set.split(";")[0]!.split("=") as [string, string]
    expect(name).toBe(Access.cookieName(token))
    expect(set).not.toContain("the-token-0123456789")
    expect(access.cookie({ [name]: key })).toBe(true)
    expect(access.cookie({ [name]: "the-token-0123456789" })).toBe(false)
    expect(access.header({ [Access.TOKEN_HEADER]: key })).toBe(false)
  })
})
