import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as dns from "node:dns"
import { vi } from "vitest"
import { builtinTools, makeWebFetch, Message, Tool, type ToolError, type WebFetchOptions } from "effect-agent-loop"
import { isPublicAddress } from "../../src/tools/netAddress.ts"
import { toolContext } from "../support/toolWorkspace.ts"
import { startWebServer, type WebServer } from "../support/webServer.ts"

const withServer = <A, E>(body: (server: WebServer) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(Effect.promise(startWebServer), body, (server) => Effect.promise(server.close))

const fetchWith = (options: WebFetchOptions, url: string) => {
  const tool = makeWebFetch(options)
  return tool.decode({ url }).pipe(Effect.orDie, Effect.flatMap((args) => tool.execute(args, toolContext)), Effect.map(Tool.toOutput))
}
const loopbackAllowed: WebFetchOptions = { allowPrivate: (host) => host === "127.0.0.1" }
const textOf = (output: Tool.ToolOutput) => Message.textOf(output.content)
const failureOf = (options: WebFetchOptions, url: string) => Effect.map(Effect.flip(fetchWith(options, url)), (e) => (e as ToolError).message)

describe("web_fetch", () => {
  it("is not among the default built-in tools, and always needs approval", () => {
    expect(builtinTools().map((t) => t.name)).not.toContain("web_fetch")
    const named = builtinTools({ enable: ["web_fetch"] })
    expect(named.map((t) => t.name)).toEqual(["web_fetch"])
    expect(named[0]!.requiresApproval).toBe(true)
  })

  it.live("refuses a loopback address by default, without sending anything", () =>
    withServer((server) =>
      Effect.gen(function*() {
        const message = yield* failureOf({}, `${server.url}/page`)
        expect(message).toContain("resolves to 127.0.0.1, which is not a public address")
        expect(message).toContain("web_fetch(domain:127.0.0.1)")
        expect(yield* failureOf({}, `http://localhost:${server.port}/page`)).toContain("not a public address")
        expect(yield* failureOf({}, `http://[::ffff:127.0.0.1]:${server.port}/page`)).toContain("not a public address")
        expect(server.requests).toEqual([])
      })
    ))

  it.live("turns an allowed page into Markdown, without scripts or styles, and sends no credentials", () =>
    withServer((server) =>
      Effect.gen(function*() {
        const text = textOf(yield* fetchWith(loopbackAllowed, `${server.url}/page`))
        expect(text).toBe(`${server.url}/page\n\n# Release notes\n\nVersion **2** is [out](/changes).\n\n-   faster\n-   smaller`)
        expect(server.requests).toHaveLength(1)
        const headers = server.requests[0]!.headers
        expect(Object.keys(headers).sort()).toEqual(["accept", "accept-encoding", "connection", "host", "user-agent"])
        expect(textOf(yield* fetchWith(loopbackAllowed, `${server.url}/text`))).toBe(`${server.url}/text\n\nplain text\n`)
      })
    ))

  it.live("follows redirects up to the limit, and stops past it", () =>
    withServer((server) =>
      Effect.gen(function*() {
        const options = { ...loopbackAllowed, maxRedirects: 3 }
        const message = yield* failureOf(options, `${server.url}/r/0`)
        expect(message).toBe(`${server.url}/r/0 redirects more than 3 times; stopped at ${server.url}/r/3`)
        expect(server.requests.map((r) => r.path)).toEqual(["/r/0", "/r/1", "/r/2", "/r/3"])
        // three redirects are followed
        const to = `${server.url}/to?url=${encodeURIComponent("/r/8")}`
        expect(textOf(yield* fetchWith({ ...options, maxRedirects: 2 }, `${server.url}/to?url=${encodeURIComponent("/text")}`)))
          .toContain("plain text")
        expect(yield* failureOf({ ...options, maxRedirects: 1 }, to)).toContain("redirects more than 1 times")
      })
    ))

  it.live("re-checks every redirect: one to a private address is refused and never requested", () =>
    withServer((server) =>
      Effect.gen(function*() {
        const target = `http://localhost:${server.port}/secret`
        const message = yield* failureOf(loopbackAllowed, `${server.url}/to?url=${encodeURIComponent(target)}`)
        expect(message).toContain(`http://localhost:${server.port} resolves to`)
        expect(message).toContain("not a public address")
        expect(server.requests.map((r) => r.path)).toEqual(["/to"])
        expect(yield* failureOf(loopbackAllowed, `${server.url}/to?url=${encodeURIComponent("file:///etc/passwd")}`))
          .toBe("only http:// and https:// URLs are fetched, not file:")
      })
    ))

  it.live("cuts a body at the byte cap", () =>
    withServer((server) =>
      Effect.gen(function*() {
        const text = textOf(yield* fetchWith({ ...loopbackAllowed, maxBytes: 1000 }, `${server.url}/big`))
        expect(text).toBe(`${server.url}/big\n\n${"x".repeat(1000)}\n\n[the body was cut at 1000 bytes]`)
        const chars = textOf(yield* fetchWith({ ...loopbackAllowed, maxChars: 10 }, `${server.url}/big`))
        expect(chars).toBe(`${server.url}/big\n\n${"x".repeat(10)}\n\n[the text was cut at 10 characters of 1048576]`)
      })
    ))

  it.effect("gives up on a body that never ends at its deadline, on the Clock", () =>
    withServer((server) =>
      Effect.gen(function*() {
        const fiber = yield* Effect.forkChild(failureOf({ ...loopbackAllowed, timeout: "10 seconds" }, `${server.url}/slow`))
        yield* Effect.promise(() => server.arrived("/slow"))
        yield* TestClock.adjust("9999 millis")
        expect(fiber.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust("1 millis")
        expect(yield* Fiber.join(fiber)).toBe(`${server.url}/slow did not answer within 10s`)
      })
    ))

  it.live("refuses credentials in the URL, other schemes and content that is not text", () =>
    withServer((server) =>
      Effect.gen(function*() {
        expect(yield* failureOf(loopbackAllowed, `http://user:pw@127.0.0.1:${server.port}/page`)).toContain("credentials are never sent")
        expect(yield* failureOf(loopbackAllowed, "ftp://example.com/x")).toContain("not ftp:")
        expect(yield* failureOf(loopbackAllowed, "not a url")).toBe("\"not a url\" is not a URL")
        expect(yield* failureOf(loopbackAllowed, `${server.url}/image`)).toContain("is image/png, not text or HTML")
        expect(server.requests.map((r) => r.path)).toEqual(["/image"])
      })
    ))

  it.live("does not follow a redirect to another host: it says where, and that URL is a call of its own", () =>
    withServer((server) =>
      Effect.gen(function*() {
        // two names for the one server, both allowed at its private address
        const lookup = vi.spyOn(dns.promises, "lookup").mockImplementation((async () => [{ address: "127.0.0.1", family: 4 }]) as any)
        const allowed: WebFetchOptions = { allowPrivate: (host) => host === "first.invalid" || host === "second.invalid" }
        const elsewhere = `http://second.invalid:${server.port}/text`
        const result = yield* Effect.exit(fetchWith(allowed, `http://first.invalid:${server.port}/to?url=${encodeURIComponent(elsewhere)}`))
        // the same host is followed as before
        const same = yield* Effect.exit(fetchWith(allowed, `http://first.invalid:${server.port}/to?url=${encodeURIComponent("/text")}`))
        lookup.mockRestore()
        expect(Exit.isSuccess(result) && textOf(result.value)).toBe(
          `http://first.invalid:${server.port}/to?url=${encodeURIComponent(elsewhere)} redirects to ${elsewhere}, on another host; ` +
            "it was not followed. To read it, call web_fetch with that URL (it is approved on its own)."
        )
        expect(Exit.isSuccess(same) && textOf(same.value)).toContain("plain text")
        expect(server.requests.map((r) => r.path)).toEqual(["/to", "/to", "/text"])
      })
    ))

  it.live("connects to the address it checked, not to a second resolution of the name", () =>
    withServer((server) =>
      Effect.gen(function*() {
        // the name exists only in this lookup: reaching the server proves the request used the checked address
        const lookup = vi.spyOn(dns.promises, "lookup").mockImplementation((async () => [{ address: "127.0.0.1", family: 4 }]) as any)
        const result = yield* Effect.exit(fetchWith({ allowPrivate: (host) => host === "pinned.invalid" }, `http://pinned.invalid:${server.port}/text`))
        const calls = lookup.mock.calls.map((call) => call[0])
        lookup.mockRestore()
        expect(Exit.isSuccess(result) && textOf(result.value)).toContain("plain text")
        expect(calls).toEqual(["pinned.invalid"])
        expect(server.requests[0]!.headers.host).toBe(`pinned.invalid:${server.port}`)
      })
    ))
})

describe("isPublicAddress", () => {
  it("refuses loopback, private, link-local and reserved addresses in every form", () => {
    const notPublic = [
      "127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
      "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fe80::1%eth0", "fd00::1", "fc00::1", "ff02::1",
      "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe",
      "2002:7f00:1::", "2002:c0a8:101::1", "2001::1", "2001:db8::1", "::127.0.0.1", "not an address"
    ]
    for (const address of notPublic) expect([address, isPublicAddress(address)]).toEqual([address, false])
    const isPublic = ["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"]
    for (const address of isPublic) expect([address, isPublicAddress(address)]).toEqual([address, true])
  })
})
