/**
 * A2A's wire (`wire.ts`): how a message answers an approval, what a turn is given of a message's
 * parts, and the requests that decode or not.
 */
import { describe, expect, it } from "@effect/vitest"
import { decisionOf, decode, ErrorCode, inputOf, RpcError, RpcRequest, SendMessageParams } from "../../src/protocols/a2a/wire.ts"

describe("A2A wire", () => {
  it("an approval's answer: the words approve and deny (with a reason), or a data part; anything else is none", () => {
    expect(decisionOf([{ text: "approve" }])).toEqual({ decision: "allow" })
    expect(decisionOf([{ text: " Allow. " }])).toEqual({ decision: "allow" })
    expect(decisionOf([{ text: "deny" }])).toEqual({ decision: "deny" })
    expect(decisionOf([{ text: "Deny: not on Fridays" }])).toEqual({ decision: "deny", reason: "not on Fridays" })
    expect(decisionOf([{ data: { decision: "approve", approvalId: "a1" } }])).toEqual({ decision: "allow", approvalId: "a1" })
    expect(decisionOf([{ data: { decision: "reject", reason: "no" } }])).toEqual({ decision: "deny", reason: "no" })
    expect(decisionOf([{ data: { decision: "maybe" } }])).toBeUndefined()
    expect(decisionOf([{ text: "approve it, and also delete the logs" }])).toBeUndefined()
    expect(decisionOf([{ text: "denying is wrong" }])).toBeUndefined()
    expect(decisionOf([])).toBeUndefined()
  })

  it("a turn's input: text as it is, data as JSON, files by their URL", () => {
    expect(inputOf([{ text: "look at" }, { url: "https://example.com/a.png" }, { data: { n: 1 } }, { raw: "AAAA" }]))
      .toBe("look at\n@https://example.com/a.png\n{\"n\":1}")
  })

  it("requests decode, or fail with the code asked for and the field", () => {
    expect(decode(RpcRequest, { jsonrpc: "2.0", id: 1, method: "GetTask" }, ErrorCode.InvalidRequest, "bad")).toEqual({ jsonrpc: "2.0", id: 1, method: "GetTask" })
    const failure = (() => {
      try {
        decode(SendMessageParams, { message: { messageId: "m", role: "ROLE_ROBOT", parts: [] } }, ErrorCode.InvalidParams, "invalid params")
      } catch (error) {
        return error
      }
    })()
    expect(failure).toBeInstanceOf(RpcError)
    expect((failure as RpcError).code).toBe(-32602)
    expect((failure as RpcError).message).toContain("role")
    expect(() => decode(RpcRequest, { jsonrpc: "2.0", id: 1.5, method: "x" }, ErrorCode.InvalidRequest, "bad")).toThrow(RpcError)
  })
})
