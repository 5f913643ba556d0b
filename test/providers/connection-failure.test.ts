/**
 * The causes `connectionFailure` recognises beneath an HTTP client's or driver's error, including
 * those a loopback test cannot provoke on demand (a connect timeout, an unreachable network), and
 * the chains it must walk safely (an `AggregateError` of attempts, a cycle).
 */
import { describe, expect, it } from "vitest"
import { connectionFailure, targetOfUrl } from "../../src/domain/connectionFailure.ts"

const systemError = (code: string, fields: Record<string, unknown> = {}) => Object.assign(new Error(`${code} happened`), { code, ...fields })

describe("connectionFailure", () => {
  it("names a timeout, from Node's and from undici's codes", () => {
    expect(connectionFailure(new Error("x", { cause: systemError("ETIMEDOUT", { address: "10.0.0.1", port: 443 }) }))).toEqual({
      kind: "timeout",
      target: "10.0.0.1:443",
      text: "connection to 10.0.0.1:443 timed out"
    })
    const wrapped = new TypeError("fetch failed", { cause: systemError("UND_ERR_CONNECT_TIMEOUT") })
    expect(connectionFailure(wrapped, "https://api.example.com/v1")?.text).toBe("connection to api.example.com:443 timed out")
  })

  it("finds the cause among an AggregateError's attempts (a name with several addresses)", () => {
    const attempts = new AggregateError([systemError("ECONNREFUSED", { address: "::1", port: 9 }), systemError("ECONNREFUSED", { address: "127.0.0.1", port: 9 })])
    expect(connectionFailure({ reason: { cause: attempts } }, "http://localhost:9/x")?.text).toBe(
      "connection refused by localhost:9 (is the server running, and is the port right?)"
    )
  })

  it("takes host and port from the request an HTTP client error carries when no URL is given", () => {
    const error = { reason: { request: { url: "http://models.internal:8000/v1/chat" }, cause: systemError("ECONNRESET") } }
    expect(connectionFailure(error)?.target).toBe("models.internal:8000")
  })

  it("says a temporary DNS failure is one, and an unreachable network by its code", () => {
    expect(connectionFailure(systemError("EAI_AGAIN"), "http://a.example")?.text).toBe(
      "DNS lookup failed for a.example:80 (temporary failure: is the network up?)"
    )
    expect(connectionFailure(systemError("ENETUNREACH"), "http://a.example:81")?.text).toBe("a.example:81 is unreachable (ENETUNREACH)")
  })

  it("is undefined for anything else, and ends on a cyclic chain", () => {
    expect(connectionFailure(new Error("boom"))).toBeUndefined()
    expect(connectionFailure(systemError("ENOENT"))).toBeUndefined()
    const a: Record<string, unknown> = {}
    const b: Record<string, unknown> = { cause: a }
    a["cause"] = b
    expect(connectionFailure(a)).toBeUndefined()
    expect(connectionFailure(undefined)).toBeUndefined()
  })

  it("targetOfUrl fills in the scheme's default port", () => {
    expect(targetOfUrl("https://x.example/a")).toBe("x.example:443")
    expect(targetOfUrl("http://x.example:8080/a")).toBe("x.example:8080")
    expect(targetOfUrl("not a url")).toBeUndefined()
  })
})
