/**
 * Approvals over real HTTP: a tool call that needs approval becomes a pending approval (listed,
 * and announced on the event stream), the turn waits for the decision, `allow` runs the tool and
 * `deny` gives the model the reason; a decision is idempotent (the same again answers alike,
 * another is refused); the loop's approval timeout denies a call nobody decided.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, connectEvents, type ServerFixture, startServer } from "../support/server.ts"
import { waitUntil } from "../support/waitUntil.ts"

let f: ServerFixture

beforeAll(async () => {
  f = await startServer()
})

afterAll(() => f?.close())

const pending = async (server: ServerFixture, sessionKey: string) => {
  let found: any
  await waitUntil(`an approval of ${sessionKey}`, async () => {
    const list = await (await call(server, "GET", "/v1/approvals")).json() as Array<any>
    found = list.find((a) => a.sessionKey === sessionKey && a.status === "pending")
    return found !== undefined
  })
  return found
}

const result = async (server: ServerFixture, turnId: string) => {
  let state: any
  await waitUntil("the turn to end", async () => {
    state = await (await call(server, "GET", `/v1/turns/${turnId}`)).json()
    return state.status === "done"
  })
  return state.result
}

describe("approvals over HTTP", () => {
  it("a call that needs approval waits for allow, runs once, and a repeated decision answers alike", async () => {
    const events = await connectEvents(f, "/v1/sessions/appr/events")
    const started = await call(f, "POST", "/v1/sessions/appr/turns", { message: "danger: remove the files" })
    const { turnId } = await started.json() as { turnId: string }
    const approval = await pending(f, "appr")
    expect(approval).toMatchObject({ toolName: "danger", toolCallId: "call-danger", arguments: { what: "danger: remove the files" } })
    const requested = await events.until((frames) => frames.some((fr) => JSON.parse(fr.data)._tag === "ApprovalRequested"))
    expect(JSON.parse(requested.find((fr) => JSON.parse(fr.data)._tag === "ApprovalRequested")!.data).approval.id).toBe(approval.id)
    expect(f.dangerRuns()).toBe(0)
    const allowed = await call(f, "POST", `/v1/approvals/${approval.id}`, { decision: "allow" })
    expect(allowed.status).toBe(200)
    expect(((await allowed.json()) as any).status).toBe("allow")
    const done = await result(f, turnId)
    expect(done.status).toBe("completed")
    expect(done.finalMessage.content).toBe("finished after danger: done the dangerous thing")
    expect(f.dangerRuns()).toBe(1)
    const again = await call(f, "POST", `/v1/approvals/${approval.id}`, { decision: "allow" })
    expect(again.status).toBe(200)
    expect(((await again.json()) as any).status).toBe("allow")
    const other = await call(f, "POST", `/v1/approvals/${approval.id}`, { decision: "deny" })
    expect(other.status).toBe(409)
    expect(f.dangerRuns()).toBe(1)
    const resolved = await events.until((frames) => frames.some((fr) => JSON.parse(fr.data)._tag === "ApprovalResolved"))
    events.close()
    expect(JSON.parse(resolved.find((fr) => JSON.parse(fr.data)._tag === "ApprovalResolved")!.data).approval.status).toBe("allow")
  })

  it("deny gives the model the reason and the tool never runs", async () => {
    const before = f.dangerRuns()
    const { turnId } = await (await call(f, "POST", "/v1/sessions/deny/turns", { message: "danger: format the disk" })).json() as any
    const approval = await pending(f, "deny")
    expect((await call(f, "POST", `/v1/approvals/${approval.id}`, { decision: "deny", reason: "not today" })).status).toBe(200)
    const done = await result(f, turnId)
    expect(done.finalMessage.content).toContain("not today")
    expect(f.dangerRuns()).toBe(before)
  })

  it("the loop's approval timeout denies a call nobody decided, and the approval says timeout", async () => {
    const quick = await startServer({ approvalTimeout: 300 })
    try {
      const { turnId } = await (await call(quick, "POST", "/v1/sessions/late/turns", { message: "danger: wait for me" })).json() as any
      const done = await result(quick, turnId)
      expect(done.finalMessage.content).toContain("denied")
      expect(quick.dangerRuns()).toBe(0)
      const list = await (await call(quick, "GET", "/v1/approvals")).json() as Array<any>
      const approval = list.find((a) => a.sessionKey === "late")
      expect(approval.status).toBe("timeout")
      expect((await call(quick, "POST", `/v1/approvals/${approval.id}`, { decision: "allow" })).status).toBe(409)
      expect(quick.dangerRuns()).toBe(0)
    } finally {
      await quick.close()
    }
  })
})
