/**
 * The inspector over HTTP: the token is the only way in (the data needs it in a header, the page's
 * cookie holds no token, another loopback port never receives it, another Host is refused), the page's policy, the session list with
 * search and paging, a conversation paged at its bound, timelines (recorded and from the log), the
 * live events' replay buffer at its bound, the HTML export's escaping and scrubbing, and the
 * `agent-loop ui` and `sessions export` commands.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Layer, Redacted } from "effect"
import { HttpRouter } from "effect/http"
import { AgentEvent, EventBus, EventBusLive, Inspector, Message, Secrets, SessionLog, SessionStore, SessionStoreMemory } from "effect-agent-loop"
import { MAX_PAGE } from "../../src/inspector/Inspector.ts"
import { cookieName } from "../../src/inspector/access.ts"
import { isolatedEnv, runCli, spawnCli, tempDir } from "../support/cliProcess.ts"
import { connectEvents, HOSTILE, type InspectorFixture, RED_PIXEL, startInspector, tokenHeader, turn } from "../support/inspector.ts"

/** The replay buffer's size in these tests: fewer events than one turn publishes. */
const REPLAY = 3
let f: InspectorFixture

const get = (url: string, headers: Record<string, string> = tokenHeader(f.token)) => fetch(url, { headers, signal: AbortSignal.timeout(30_000) })
const json = async (url: string) => {
  const response = await get(url)
  expect(response.status).toBe(200)
  return response.json() as Promise<any>
}

beforeAll(async () => {
  f = await startInspector({ replayEvents: REPLAY })
  await f.run(turn("img", [Message.text("look at this"), Message.image("image/png", RED_PIXEL)]))
  await f.run(turn("sub", "delegate please"))
})

afterAll(() => f?.close())

describe("inspector over HTTP", () => {
  it("lets in only the token: 403 without it or with another, the page and a private cookie with it, 404 for what does not exist", async () => {
    for (const url of [f.origin + "/", `${f.origin}/api/sessions`, `${f.origin}/api/events`, `${f.origin}/anything`]) {
      expect((await get(url, {})).status).toBe(403)
    }
    const wrong = Inspector.makeToken()
    expect((await get(`${f.origin}/?token=${Redacted.value(wrong)}`, {})).status).toBe(403)
    expect((await get(`${f.origin}/api/sessions`, tokenHeader(`${f.token.slice(0, -1)}x`))).status).toBe(403)
    const page = await get(f.url, {})
    expect(page.status).toBe(200)
    const policy = page.headers.get("content-security-policy")!
    expect(policy).toContain("default-src 'self'")
    expect(policy).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/)
    expect(policy).not.toContain("unsafe-inline")
    expect((await get(`${f.origin}/api/sessions`)).status).toBe(200)
    expect((await get(`${f.origin}/api/sessions`, { authorization: `Bearer ${f.token}` })).status).toBe(200)
    expect((await get(`${f.origin}/nothing-here`)).status).toBe(404)
    expect((await get(`${f.origin}/api/nothing`)).status).toBe(404)
  })

  it("sets a cookie of this instance's that holds no token and opens the page only: the data needs the token in a header", async () => {
    const page = await get(f.url, {})
    const setCookie = page.headers.get("set-cookie")!
    const [pair, ...attributes] = setCookie.split("; ")
    const [name, value] = pair!.split("=") as [string, string]
    expect(name).toBe(cookieName(Redacted.make(f.token)))
    expect(name).toMatch(/^agent_loop_[0-9a-f]{16}$/)
    expect(attributes).toEqual(["Path=/", "HttpOnly", "SameSite=Strict"])
    expect(setCookie).not.toContain(f.token)
    expect(value).not.toBe(f.token)
    // another instance's cookie has another name: two inspectors on one machine keep theirs apart
    expect(cookieName(Inspector.makeToken())).not.toBe(name)
    const cookie = { cookie: pair! }
    expect((await get(`${f.origin}/`, cookie)).status).toBe(200)
    for (const api of ["api/sessions", "api/events", "api/session/img", "api/cluster"]) {
      expect((await get(`${f.origin}/${api}`, cookie)).status, api).toBe(403)
      expect((await get(`${f.origin}/${api}?token=${f.token}`, {})).status, api).toBe(403)
    }
  })

  it("a server on another loopback port, sent every cookie the browser holds for 127.0.0.1, never receives the token", async () => {
    // a browser keeps cookies by host, not port: it sends the inspector's cookie to any server on 127.0.0.1
    const jar = (await get(f.url, {})).headers.get("set-cookie")!.split(";")[0]!
    const received: Array<string> = []
    const other = http.createServer((request, response) => {
      received.push(JSON.stringify(request.headers) + request.url)
      response.end("other")
    })
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve))
    try {
      const port = (other.address() as net.AddressInfo).port
      expect(port).not.toBe(Number(new URL(f.origin).port))
      await (await fetch(`http://127.0.0.1:${port}/`, { headers: { cookie: jar } })).text()
      expect(received).toHaveLength(1)
      expect(received[0]).toContain(jar.split("=")[0]!)
      expect(received[0]).not.toContain(f.token)
      // what it received does not open the data either
      expect((await get(`${f.origin}/api/sessions`, { cookie: jar, [Inspector.TOKEN_HEADER]: jar.split("=")[1]! })).status).toBe(403)
    } finally {
      await new Promise((resolve) => other.close(resolve))
    }
  })

  it("refuses a request naming another host than its own (DNS rebinding), 421 before the token is looked at", async () => {
    const { port } = new URL(f.origin)
    const status = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const request = http.get({ host: "127.0.0.1", port, path: "/api/sessions", headers: { host, ...tokenHeader(f.token) } }, (response) => {
          response.resume()
          resolve(response.statusCode!)
        })
        request.on("error", reject)
      })
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `LOCALHOST:${port}`]) expect(await status(host), host).toBe(200)
    for (const host of [`evil.example:${port}`, "evil.example", `127.0.0.1:${Number(port) + 1}`, "127.0.0.1", `127.0.0.1.evil.example:${port}`, `localhost@evil:${port}`]) {
      expect(await status(host), host).toBe(421)
    }
  })

  it("lists sessions with their turns, tokens and first prompt; searches and pages", async () => {
    const all = await json(`${f.origin}/api/sessions`)
    const img = all.items.find((s: any) => s.sessionKey === "img")
    expect(img).toMatchObject({ turns: 1, messages: 2, preview: expect.stringContaining("look at this") })
    expect(img.usage.inputTokens).toBeGreaterThan(0)
    const found = await json(`${f.origin}/api/sessions?q=DELEGATE`)
    expect(found.items.map((s: any) => s.sessionKey)).toEqual(["sub"])
    const second = await json(`${f.origin}/api/sessions?limit=1&offset=1`)
    expect(second.total).toBe(all.total)
    expect(second.items).toHaveLength(1)
    expect(second.items[0].sessionKey).toBe(all.items[1].sessionKey)
  })

  it("pages a long conversation, never more than MAX_PAGE messages at once", async () => {
    const many = Array.from({ length: MAX_PAGE + 1 }, (_, i) => (i % 2 === 0 ? Message.user(`q${i}`) : Message.assistant(`a${i}`)))
    await f.run(Effect.gen(function*() {
      yield* (yield* SessionStore).append("long", many)
    }))
    const capped = await json(`${f.origin}/api/session/long?limit=50000`)
    expect(capped.total).toBe(MAX_PAGE + 1)
    expect(capped.items).toHaveLength(MAX_PAGE)
    const tail = await json(`${f.origin}/api/session/long?offset=${MAX_PAGE}&limit=200`)
    expect(tail.items).toEqual([{ index: MAX_PAGE, entry: Message.user(`q${MAX_PAGE}`) }])
    // the log turns listed are those starting on the page
    expect(capped.turns).toHaveLength(MAX_PAGE / 2)
    expect(tail.turns.map((t: any) => t.id)).toEqual([`log-${MAX_PAGE}`])
  })

  it("serves no known secret, even one stored in a session's log", async () => {
    const secret = "sk-inspector-0123456789"
    await f.run(Effect.gen(function*() {
      ;(yield* Secrets).add([secret])
      yield* (yield* SessionStore).append("leaky", [Message.user(`my key is ${secret}`)])
    }))
    const list = await (await get(`${f.origin}/api/sessions?q=leaky`)).text()
    const session = await (await get(`${f.origin}/api/session/leaky`)).text()
    expect(session).toContain("my key is <redacted>")
    expect(list + session).not.toContain(secret)
  })

  it("gives a recorded turn's timeline with the sub-turn under the tool call that spawned it, and a log turn's in order only", async () => {
    const session = await json(`${f.origin}/api/session/sub`)
    const recorded = session.turns.filter((t: any) => t.source === "events")
    expect(recorded).toHaveLength(1)
    expect(session.turns.filter((t: any) => t.source === "log")).toHaveLength(0)
    const timeline = await json(`${f.origin}/api/timeline/sub/${recorded[0].id}`)
    expect(timeline.source).toBe("events")
    const rows = timeline.rows.map((r: any) => [r.kind, r.level])
    expect(rows).toEqual([["turn", 0], ["model", 1], ["tool", 1], ["turn", 2], ["model", 3], ["model", 1]])
    expect(timeline.rows[2].label).toBe("subagent")
    expect(timeline.rows[3].label).toContain("count the files")
    expect(timeline.context.map((c: any) => c.iteration)).toEqual([1, 2])
    expect(timeline.usage.costUsd).toBeGreaterThan(0)
    const fromLog = await json(`${f.origin}/api/timeline/long/log-0`)
    expect(fromLog.source).toBe("log")
    expect(fromLog.rows.map((r: any) => r.kind)).toEqual(["turn", "model"])
    expect((await get(`${f.origin}/api/timeline/long/log-1`)).status).toBe(404)
  })

  it("shows a turn's stored outcome without its events: the list's status, the log timeline's status, error, tokens and cost", async () => {
    const outcome: SessionLog.TurnOutcome = {
      role: "outcome", turnId: "elsewhere", status: "failed", model: "m", startedAt: 1, endedAt: 2, iterations: 1,
      usage: { inputTokens: 12, outputTokens: 0, costUsd: 2.05 },
      error: { _tag: "ProviderRejected", message: "ProviderRejected: 400 bad request" }
    }
    await f.run(Effect.gen(function*() {
      yield* (yield* SessionStore).append("failed-elsewhere", [Message.user("why did it fail"), outcome])
    }))
    const listed = await json(`${f.origin}/api/sessions?q=failed-elsewhere`)
    expect(listed.items[0]).toMatchObject({ sessionKey: "failed-elsewhere", status: "failed" })
    const session = await json(`${f.origin}/api/session/failed-elsewhere`)
    expect(session.turns).toEqual([expect.objectContaining({ id: "log-0", source: "log", status: "failed" })])
    const timeline = await json(`${f.origin}/api/timeline/failed-elsewhere/log-0`)
    expect(timeline).toMatchObject({ source: "log", status: "failed", model: "m", usage: outcome.usage, error: outcome.error })
  })

  it("replays what a reconnecting page missed from a bounded buffer, and says when the buffer no longer reaches back", async () => {
    const live = await connectEvents(f.origin, f.token, {})
    await f.run(turn("replay", "hello"))
    const seen = await live.until((events) => events.some((e) => JSON.parse(e.data)._tag === "TurnEnd"))
    const ids = seen.map((e) => Number(e.id))
    expect(ids).toEqual(ids.map((_, i) => ids[0]! + i))
    expect(ids.length).toBeGreaterThan(REPLAY)
    // the buffer holds the last REPLAY events: a page that saw none of them is told to reload
    const fromStart = await (await connectEvents(f.origin, f.token, { "last-event-id": "0" })).until((events) => events.length >= REPLAY + 1)
    expect(fromStart[0]!.event).toBe("reset")
    expect(fromStart.slice(1).map((e) => Number(e.id))).toEqual(ids.slice(-REPLAY))
    const recent = await (await connectEvents(f.origin, f.token, { "last-event-id": String(ids.at(-3)) })).until((events) => events.length >= 2)
    expect(recent.map((e) => [e.event, Number(e.id)])).toEqual([[undefined, ids.at(-2)], [undefined, ids.at(-1)]])
    // an id this server never gave (a page of an earlier run) is told to reload, then gets what comes next
    const earlier = await connectEvents(f.origin, f.token, { "last-event-id": String(ids.at(-1)! + 1000) })
    await f.run(turn("replay", "again"))
    const after = await earlier.until((events) => events.length >= 2)
    expect(after[0]!.event).toBe("reset")
    expect(Number(after[1]!.id)).toBe(ids.at(-1)! + 1)
  })

  it("sends every page the same scrubbed event, and scrubs it again for a page that gets it after a secret became known", async () => {
    const secret = "pw-said-live-0123456789"
    const [first, second] = [await connectEvents(f.origin, f.token, {}), await connectEvents(f.origin, f.token, {})]
    await f.run(turn("said", `my password is ${secret}`))
    const ended = (events: ReadonlyArray<{ readonly data: string }>) => events.some((e) => JSON.parse(e.data)._tag === "TurnEnd")
    const [a, b] = [await first.until(ended), await second.until(ended)]
    // not known as a secret yet: both pages got the same text
    expect(a.map((e) => e.data)).toEqual(b.map((e) => e.data))
    expect(a.map((e) => e.data).join("\n")).toContain(secret)
    await f.run(Effect.gen(function*() {
      ;(yield* Secrets).add([secret])
    }))
    // a page reconnecting from before the last event that holds it (within the replay buffer)
    const last = a.findLastIndex((e) => e.data.includes(secret))
    const missed = a.slice(last)
    const replayed = await (await connectEvents(f.origin, f.token, { "last-event-id": String(Number(a[last - 1]!.id)) })).until((events) => events.length >= missed.length)
    expect(replayed.map((e) => e.id)).toEqual(missed.map((e) => e.id))
    const text = replayed.map((e) => e.data).join("\n")
    expect(text).not.toContain(secret)
    expect(text).toContain("my password is <redacted>")
  })
})

describe("a live page that stops reading", () => {
  it("is disconnected once it is liveBacklog events behind, not buffered for without end, and catches up from the replay buffer", async () => {
    const BACKLOG = 50
    const EVENTS = 2_000
    const g = await startInspector({ liveBacklog: BACKLOG, replayEvents: EVENTS })
    try {
      const { hostname, port } = new URL(g.origin)
      // a raw connection whose reading the test controls: 16 KiB events, far more than the
      // loopback socket's buffers hold, so a server that kept buffering would keep them all
      const socket = net.connect(Number(port), hostname)
      let received = ""
      let ended = false
      const until = (what: () => boolean) =>
        new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`timed out; received ${received.length} characters`)), 30_000)
          const check = () => {
            if (what()) {
              clearTimeout(timer)
              socket.off("data", check).off("end", check)
              resolve()
            }
          }
          socket.on("data", check).on("end", check)
          check()
        })
      socket.on("data", (chunk) => (received += chunk.toString("utf8"))).on("end", () => (ended = true))
      socket.write(`GET /api/events HTTP/1.1\r\nHost: ${g.origin.slice(7)}\r\n${Inspector.TOKEN_HEADER}: ${g.token}\r\n\r\n`)
      await until(() => received.includes(": connected"))
      socket.pause()
      const text = "x".repeat(16 * 1024)
      await g.run(Effect.gen(function*() {
        const bus = yield* EventBus
        for (let i = 0; i < EVENTS; i++) {
          yield* bus.publish(AgentEvent.make("LLMDelta", { turnId: "flood", sessionKey: "flood", iteration: 1, depth: 0 }, i, { kind: "text", text }))
        }
      }))
      socket.resume()
      await until(() => ended)
      socket.destroy()
      const ids = [...received.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))
      expect(ids.length).toBeGreaterThan(0)
      expect(ids.length).toBeLessThan(EVENTS)
      // reconnecting from the last event it got, the page receives the rest from the replay buffer
      const rest = await (await connectEvents(g.origin, g.token, { "last-event-id": String(ids.at(-1)) })).until((events) => events.length >= 1)
      expect(rest[0]!.event).toBeUndefined()
      expect(Number(rest[0]!.id)).toBe(ids.at(-1)! + 1)
    } finally {
      await g.close()
    }
  })
})

describe("mounted under a prefix", () => {
  it("answers only under its prefix, the token first: the page, its API, and a redirect from the bare prefix", async () => {
    const token = Inspector.makeToken()
    const app = Inspector.layer({ token, prefix: "/inspector", hosts: ["inspector.example.com"] }).pipe(
      Layer.provide(Layer.merge(SessionStoreMemory.layer({ one: [Message.user("hi")] }), EventBusLive.layerCapacity()))
    )
    const { handler, dispose } = HttpRouter.toWebHandler(app, { disableLogger: true })
    try {
      const call = (path: string, headers: Record<string, string> = {}, host = "127.0.0.1:8080") =>
        handler(new Request(`http://127.0.0.1${path}`, { redirect: "manual", headers: { host, ...headers } }))
      const opened = await call(`/inspector/?token=${Redacted.value(token)}`)
      expect(opened.status).toBe(200)
      expect(opened.headers.get("set-cookie")).toContain("; Path=/inspector/;")
      const cookie = { cookie: opened.headers.get("set-cookie")!.split(";")[0]! }
      const header = tokenHeader(Redacted.value(token))
      expect((await call("/inspector/api/sessions")).status).toBe(403)
      expect((await call("/inspector/api/sessions", cookie)).status).toBe(403)
      expect(((await (await call("/inspector/api/sessions", header)).json()) as any).items.map((s: any) => s.sessionKey)).toEqual(["one"])
      expect((await call("/inspector", cookie)).headers.get("location")).toBe("/inspector/")
      expect((await call("/api/sessions", header)).status).toBe(404)
      // a name given in hosts is answered (at any port here: a web handler has no port of its own); no Host at all is not
      expect((await call("/inspector/api/sessions", header, "inspector.example.com")).status).toBe(200)
      expect((await call("/inspector/api/sessions", header, "other.example.com")).status).toBe(421)
      expect((await handler(new Request("http://127.0.0.1/inspector/api/sessions", { headers: header }))).status).toBe(421)
    } finally {
      await dispose()
    }
  })
})

describe("HTML export", () => {
  const hostileLog = [
    Message.user("hostile please"),
    Message.assistant("", { toolCalls: [{ id: "c1", name: "echo", arguments: JSON.stringify({ text: HOSTILE }) }] } as never),
    { role: "tool" as const, toolCallId: "c1", toolName: "echo", content: `${HOSTILE} key sk-live-0123456789abcdef` },
    Message.assistant("</script><!-- done")
  ]

  it("embeds every stored text as inert JSON: no tag of the session's can start a script, and known keys are scrubbed", () => {
    const html = Inspector.exportHtml("s", hostileLog, { scrub: (text) => text.replaceAll("sk-live-0123456789abcdef", "<redacted>") })
    expect(html.match(/<script/g)).toHaveLength(2) // the data block and the page's own script
    expect(html).not.toContain("sk-live-0123456789abcdef")
    expect(html).not.toContain("<img src=x")
    expect(html).not.toContain("</script><script>window")
    const data = /<script type="application\/json" id="inspector-data">(.*?)<\/script>/s.exec(html)![1]!
    expect(JSON.stringify(JSON.parse(data))).toContain(JSON.stringify(HOSTILE).slice(1, -1))
    expect(html).toMatch(/<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'sha256-/)
  })

  it("sessions export writes the file from the store, and fails with a reason for a session that does not exist", async () => {
    const home = tempDir()
    const out = path.join(home, "img.html")
    const env = isolatedEnv(home, { AGENT_LOOP_DATA_DIR: path.dirname(f.database) })
    const done = await runCli(["sessions", "export", "img", "--html", out], { env })
    expect(done.code).toBe(0)
    expect(done.stderr).toContain(`wrote ${out}`)
    const html = fs.readFileSync(out, "utf8")
    expect(html).toContain(RED_PIXEL)
    expect(fs.statSync(out).mode & 0o077).toBe(0)
    // the provider keys the command was started with are scrubbed from what it writes
    const key = "sk-proj-exported-0123456789"
    await f.run(Effect.gen(function*() {
      yield* (yield* SessionStore).append("keyed", [Message.user(`the key is ${key}`)])
    }))
    const keyed = await runCli(["sessions", "export", "keyed", "--html", out], { env: { ...env, OPENAI_API_KEY: key } })
    expect(keyed.code).toBe(0)
    expect(fs.readFileSync(out, "utf8")).not.toContain(key)
    expect(fs.readFileSync(out, "utf8")).toContain("the key is \\u003credacted\\u003e")
    const missing = await runCli(["sessions", "export", "nope", "--html", out], { env })
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('no session "nope"')
  })

  it("agent-loop ui on a port already taken fails with one line saying so", async () => {
    const port = new URL(f.origin).port
    const taken = await runCli(["ui", "--no-open", "--port", port], { env: isolatedEnv(tempDir(), { AGENT_LOOP_DATA_DIR: path.dirname(f.database) }) })
    expect(taken.code).toBe(1)
    expect(taken.stderr).toContain(`inspector: cannot listen on 127.0.0.1:${port}`)
    expect(taken.stderr.trim().split("\n")).toHaveLength(1)
  })

  it("agent-loop ui serves the store on 127.0.0.1 and prints the URL with its token", async () => {
    const home = tempDir()
    const ui = spawnCli(["ui", "--no-open"], { env: isolatedEnv(home, { AGENT_LOOP_DATA_DIR: path.dirname(f.database) }) })
    try {
      await ui.waitFor(/inspector at (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/, "stderr")
      const url = /inspector at (\S+)/.exec(ui.stderr())![1]!
      expect((await fetch(new URL("/api/sessions", url), { signal: AbortSignal.timeout(30_000) })).status).toBe(403)
      const page = await fetch(url, { signal: AbortSignal.timeout(30_000) })
      expect(page.status).toBe(200)
      const sessions = await fetch(new URL("/api/sessions", url), { headers: tokenHeader(new URL(url).searchParams.get("token")!), signal: AbortSignal.timeout(30_000) })
      expect(((await sessions.json()) as any).items.map((s: any) => s.sessionKey)).toContain("img")
    } finally {
      ui.child.kill("SIGTERM")
      await ui.exited
    }
  })
})
