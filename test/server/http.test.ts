/**
 * The API server over real HTTP on 127.0.0.1: the token is the only way in (an empty 401 before
 * anything else is looked at), bodies are checked (400 naming the field, 413 past the cap), an
 * unknown session is 404, turns run and their results are read back, interrupts, steering and
 * follow-ups, models and tools, the OpenAPI document, and CORS off by default.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect } from "effect"
import { AgentLoop } from "effect-agent-loop"
import { call, type ServerFixture, startServer } from "../support/server.ts"
import { waitUntil } from "../support/waitUntil.ts"

let f: ServerFixture

beforeAll(async () => {
  f = await startServer({ maxBodyBytes: 4096 })
})

afterAll(() => f?.close())

/** Starts a turn and waits for its result. */
const runTurn = async (key: string, message: string) => {
  const started = await call(f, "POST", `/v1/sessions/${key}/turns`, { message })
  expect(started.status).toBe(202)
  const { turnId } = await started.json() as { turnId: string }
  let state: any
  await waitUntil(`turn ${turnId} to end`, async () => {
    state = await (await call(f, "GET", `/v1/turns/${turnId}`)).json()
    return state.status === "done"
  })
  return state
}

describe("the API over HTTP", () => {
  it("answers 401 with an empty body to a missing or wrong token, whatever the request", async () => {
    const routes: Array<[string, string, unknown?]> = [
      ["GET", "/v1/sessions"],
      ["GET", "/v1/sessions/nobody"],
      ["POST", "/v1/sessions/a/turns", { message: "hi" }],
      ["POST", "/v1/sessions/a/turns", { nope: 1 }],
      ["GET", "/v1/approvals"],
      ["GET", "/v1/events"],
      ["POST", "/v1/turns/x/interrupt", { mode: "hard" }]
    ]
    for (const [method, route, body] of routes) {
      for (const headers of [{}, { authorization: `Bearer ${f.token}x` }, { authorization: `Basic ${f.token}` }, { authorization: "Bearer " }]) {
        const response = await call(f, method, route, body, { ...headers, "content-type": "application/json" })
        expect(response.status, `${method} ${route} ${JSON.stringify(headers)}`).toBe(401)
        expect(await response.text()).toBe("")
      }
    }
  })

  it("runs a turn: 202 with its id at once, then its result at /v1/turns/{id}, and the session's history", async () => {
    const state = await runTurn("s1", "hello there")
    expect(state.sessionKey).toBe("s1")
    expect(state.result.status).toBe("completed")
    expect(state.result.finalMessage.content).toBe("You said: hello there")
    const history = await (await call(f, "GET", "/v1/sessions/s1")).json() as any
    expect(history.entries.map((e: any) => e.role)).toEqual(expect.arrayContaining(["user", "assistant"]))
    const list = await (await call(f, "GET", "/v1/sessions")).json() as Array<any>
    expect(list.map((s) => s.sessionKey)).toContain("s1")
  })

  it("refuses a bad body with a 400 naming the field, and loses nothing", async () => {
    const cases: Array<[unknown, string]> = [
      [{}, "message"],
      [{ message: 3 }, "message"],
      [{ message: "" }, "message"]
    ]
    for (const [body, field] of cases) {
      const response = await call(f, "POST", "/v1/sessions/bad/turns", body)
      expect(response.status).toBe(400)
      const problem = await response.json() as any
      expect(problem.errors.map((e: any) => e.path)).toContainEqual(["payload", field])
    }
    const mode = await call(f, "POST", "/v1/turns/whatever/interrupt", { mode: "sideways" })
    expect(mode.status).toBe(400)
    expect(((await mode.json()) as any).errors[0].path).toEqual(["payload", "mode"])
    const decision = await call(f, "POST", "/v1/approvals/x", { decision: "maybe" })
    expect(decision.status).toBe(400)
    expect(((await decision.json()) as any).errors[0].path).toEqual(["payload", "decision"])
    const notJson = await call(f, "POST", "/v1/sessions/bad/turns", "{not json")
    expect(notJson.status).toBe(400)
    // nothing of them reached the store
    expect((await call(f, "GET", "/v1/sessions/bad")).status).toBe(404)
  })

  it("answers 413 to a body over the cap, with or without a length, and 404 to what does not exist", async () => {
    const big = { message: "x".repeat(5000) }
    expect((await call(f, "POST", "/v1/sessions/big/turns", big)).status).toBe(413)
    const chunked = await fetch(`${f.origin}/v1/sessions/big/turns`, {
      method: "POST",
      headers: { authorization: `Bearer ${f.token}`, "content-type": "application/json" },
      body: new Blob([JSON.stringify(big)]).stream(),
      duplex: "half",
      signal: AbortSignal.timeout(30_000)
    } as RequestInit)
    expect(chunked.status).toBe(413)
    expect((await call(f, "GET", "/v1/sessions/big")).status).toBe(404)
    expect((await call(f, "GET", "/v1/sessions/nobody")).status).toBe(404)
    expect((await call(f, "DELETE", "/v1/sessions/nobody")).status).toBe(404)
    expect((await call(f, "GET", "/v1/turns/nope")).status).toBe(404)
    expect((await call(f, "POST", "/v1/turns/nope/interrupt", { mode: "graceful" })).status).toBe(404)
    expect((await call(f, "POST", "/v1/approvals/nope", { decision: "allow" })).status).toBe(404)
  })

  it("answers GET /v1/turns/{id}?wait=SECONDS when the turn ends, at once without it; a wait past 60 is a 400 naming it", async () => {
    const { turnId } = await (await call(f, "POST", "/v1/sessions/long-poll/turns", { message: "wait for the gate" })).json() as any
    await waitUntil("the gate tool to run", async () =>
      (await f.run(Effect.flatMap(Effect.service(AgentLoop), (loop) => loop.activeTurn("long-poll"))))?.phase === "tools")
    expect(((await (await call(f, "GET", `/v1/turns/${turnId}`)).json()) as any).status).toBe("running")
    const waiting = call(f, "GET", `/v1/turns/${turnId}?wait=30`)
    await f.openGate()
    const state = await (await waiting).json() as any
    expect(state.status).toBe("done")
    expect(state.result.status).toBe("completed")
    const tooLong = await call(f, "GET", `/v1/turns/${turnId}?wait=61`)
    expect(tooLong.status).toBe(400)
    expect(((await tooLong.json()) as any).errors[0].path).toEqual(["query", "wait"])
  })

  it("deletes a session", async () => {
    await runTurn("gone", "short lived")
    expect((await call(f, "DELETE", "/v1/sessions/gone")).status).toBe(204)
    expect((await call(f, "GET", "/v1/sessions/gone")).status).toBe(404)
  })

  it("interrupts a running turn (graceful, now and hard) and refuses to interrupt one that ended", async () => {
    for (const [mode, status] of [["graceful", "interrupted"], ["now", "interrupted"], ["hard", "aborted"]] as const) {
      const started = await call(f, "POST", `/v1/sessions/int-${mode}/turns`, { message: "wait here" })
      const { turnId } = await started.json() as { turnId: string }
      await waitUntil("the gate tool to run", async () =>
        (await f.run(Effect.flatMap(Effect.service(AgentLoop), (loop) => loop.activeTurn(`int-${mode}`))))?.phase === "tools")
      expect((await call(f, "POST", `/v1/turns/${turnId}/interrupt`, { mode })).status).toBe(202)
      if (mode === "graceful") await f.openGate()
      let state: any
      await waitUntil("the turn to end", async () => {
        state = await (await call(f, "GET", `/v1/turns/${turnId}`)).json()
        return state.status === "done"
      })
      expect(state.result.status).toBe(status)
      expect((await call(f, "POST", `/v1/turns/${turnId}/interrupt`, { mode })).status).toBe(409)
    }
  })

  it("steering joins the running turn (admitted, with its turn and iteration) or is queued as the next turn; a follow-up is a turn of its own", async () => {
    const started = await call(f, "POST", "/v1/sessions/steer/turns", { message: "wait for steering" })
    const { turnId } = await started.json() as { turnId: string }
    await waitUntil("the gate tool to run", async () =>
      (await f.run(Effect.flatMap(Effect.service(AgentLoop), (loop) => loop.activeTurn("steer"))))?.phase === "tools")
    const steer = await (await call(f, "POST", "/v1/sessions/steer/steer", { message: "also this" })).json() as any
    // the turn is in its first iteration's tools: the steering joins the second model call
    expect(steer).toMatchObject({ status: "admitted", iteration: 2 })
    const follow = await (await call(f, "POST", "/v1/sessions/steer/followup", { message: "and later this" })).json() as any
    expect(follow.status).toBe("queued")
    await f.openGate()
    await waitUntil("the turn to end", async () => ((await (await call(f, "GET", `/v1/turns/${turnId}`)).json()) as any).status === "done")
    await waitUntil("the follow-up to run", async () => ((await (await call(f, "GET", `/v1/turns/${follow.turnId}`)).json()) as any).status === "done")
    const after = await (await call(f, "GET", `/v1/turns/${follow.turnId}`)).json() as any
    expect(after.result.finalMessage.content).toBe("You said: and later this")
    const history = await (await call(f, "GET", "/v1/sessions/steer")).json() as any
    expect(history.entries.some((e: any) => e.role === "user" && JSON.stringify(e.content).includes("also this"))).toBe(true)
    const idle = await (await call(f, "POST", "/v1/sessions/idle/steer", { message: "nobody home" })).json() as any
    expect(idle).toEqual({ status: "queued", reason: "next_turn" })
    await waitUntil("the steering to run as the session's next turn", async () => {
      const response = await call(f, "GET", "/v1/sessions/idle")
      return response.status === 200 && ((await response.json()) as any).entries.some((e: any) => e.role === "assistant" && e.content === "You said: nobody home")
    })
    const fresh = await (await call(f, "POST", "/v1/sessions/idle-follow/followup", { message: "first thing" })).json() as any
    expect(fresh.status).toBe("started")
    await waitUntil("the started turn to end", async () => ((await (await call(f, "GET", `/v1/turns/${fresh.turnId}`)).json()) as any).status === "done")
  })

  it("lists the tools and models, serves the OpenAPI document without a token, and sends no CORS headers by default", async () => {
    const tools = await (await call(f, "GET", "/v1/tools")).json() as Array<any>
    expect(tools.map((t) => [t.name, t.requiresApproval])).toEqual(expect.arrayContaining([["echo", false], ["danger", true]]))
    const models = await (await call(f, "GET", "/v1/models")).json() as any
    expect(models.default).toBe("test-model")
    expect(models.models.length).toBeGreaterThan(10)
    const openapi = await (await fetch(`${f.origin}/openapi.json`)).json() as any
    expect(Object.keys(openapi.paths)).toEqual(expect.arrayContaining([
      "/v1/sessions",
      "/v1/sessions/{key}",
      "/v1/sessions/{key}/turns",
      "/v1/sessions/{key}/steer",
      "/v1/sessions/{key}/followup",
      "/v1/sessions/{key}/events",
      "/v1/turns/{turnId}",
      "/v1/turns/{turnId}/interrupt",
      "/v1/approvals",
      "/v1/approvals/{id}",
      "/v1/events",
      "/v1/models",
      "/v1/tools"
    ]))
    const preflight = await fetch(`${f.origin}/v1/sessions`, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "GET" }
    })
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull()
    const get = await call(f, "GET", "/v1/sessions", undefined, { authorization: `Bearer ${f.token}`, origin: "https://evil.example" })
    expect(get.headers.get("access-control-allow-origin")).toBeNull()
  })
})
