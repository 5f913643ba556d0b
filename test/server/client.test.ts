/**
 * The typed client (`effect-agent-loop/client`) against a real server: a turn sent and waited for,
 * an approval decided, typed errors from the server's Schemas; and its event stream through a TCP
 * proxy that cuts every connection again and again: the stream it gives equals what a client never
 * cut saw, none missed, none twice, with no help from the caller.
 */
import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Exit } from "effect"
import { FetchHttpClient } from "effect/http"
import { AgentLoopClient } from "effect-agent-loop/client"
import { call, connectEvents, type ServerFixture, startServer } from "../support/server.ts"
import { waitUntil } from "../support/waitUntil.ts"

let f: ServerFixture

beforeAll(async () => {
  f = await startServer()
})

afterAll(() => f?.close())

/** A TCP proxy to the server whose `cut` ends every connection through it at once. */
const startProxy = async (target: URL) => {
  const sockets = new Set<net.Socket>()
  let connections = 0
  const server = net.createServer((inbound) => {
    connections++
    const outbound = net.connect(Number(target.port), target.hostname)
    for (const socket of [inbound, outbound]) {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
      socket.on("error", () => undefined)
    }
    inbound.pipe(outbound).pipe(inbound)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as net.AddressInfo).port
  return {
    origin: `http://127.0.0.1:${port}`,
    connections: () => connections,
    cut: () => {
      for (const socket of sockets) socket.destroy()
    },
    close: () => {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

describe("the typed client", () => {
  it("sends a turn and waits for its result; decides an approval; the server's errors are typed", async () => {
    const program = Effect.gen(function*() {
      const client = yield* AgentLoopClient.make({ baseUrl: f.origin, token: f.token })
      const turnId = yield* client.sessions.send("typed", "hello client")
      const result = yield* client.turns.wait(turnId)
      expect(result.finalMessage?.content).toBe("You said: hello client")
      const dangerous = yield* client.sessions.send("typed-danger", "danger: via the client")
      let pending: ReadonlyArray<{ readonly id: string }> = []
      while (pending.length === 0) pending = (yield* client.approvals.list).filter((a) => a.sessionKey === "typed-danger" && a.status === "pending")
      yield* client.approvals.decide(pending[0].id, "allow")
      const done = yield* client.turns.wait(dangerous)
      expect(done.finalMessage?.content).toBe("finished after danger: done the dangerous thing")
      const missing = yield* Effect.exit(client.sessions.history("nobody"))
      expect(Exit.isFailure(missing) && JSON.stringify(missing.cause)).toContain("SessionNotFound")
      const history = yield* client.sessions.history("typed")
      expect(history.length).toBeGreaterThan(1)
    })
    await Effect.runPromise(Effect.provide(program, FetchHttpClient.layer))
  })

  it("a wrong token is refused (401) with nothing else", async () => {
    const client = await AgentLoopClient.connect({ baseUrl: f.origin, token: "wrong-token-0123456789" })
    await expect(client.sessions.list()).rejects.toThrow()
  })

  it("its event stream resumes after every cut by itself: what it gives equals what a client never cut saw", async () => {
    const proxy = await startProxy(new URL(f.origin))
    const steady = await connectEvents(f, "/v1/events")
    const client = await AgentLoopClient.connect({ baseUrl: proxy.origin, token: f.token, retryDelay: "10 millis" })
    const received: Array<AgentLoopClient.EventFrame> = []
    let stop = false
    const reading = (async () => {
      // from the first event the server kept: the comparison below starts where the steady client did
      for await (const frame of client.events(0)) {
        received.push(frame)
        // a cut after every few frames, wherever the stream is (frames already read are still given)
        if (received.length % 4 === 0) proxy.cut()
        if (stop) break
      }
    })()
    // the client is connected once its first connection is through the proxy; events from then on count
    const turnIds: Array<string> = []
    for (let i = 0; i < 15; i++) {
      for (const key of ["resume-a", "resume-b"]) {
        const response = await call(f, "POST", `/v1/sessions/${key}/turns`, { message: `echo ${key} ${i}` })
        turnIds.push(((await response.json()) as { turnId: string }).turnId)
      }
    }
    for (const id of turnIds) {
      await waitUntil("the turns to end", async () => ((await (await call(f, "GET", `/v1/turns/${id}`)).json()) as any).status === "done")
    }
    const ends = (frames: ReadonlyArray<{ data: string }>) => frames.filter((fr) => JSON.parse(fr.data)._tag === "TurnEnd").length
    await steady.until((frames) => ends(frames) === turnIds.length)
    steady.close()
    const reference = steady.frames
    const last = Number(reference.at(-1)!.id)
    // one more turn, so the client reads past the last event compared whatever its next cut
    const tail = await call(f, "POST", "/v1/sessions/resume-tail/turns", { message: "echo tail" })
    await tail.json()
    await waitUntil("the client to read past the last event", () => received.some((fr) => fr._tag === "Event" && fr.id > last))
    stop = true
    // one more event, so the reading loop sees `stop`
    await (await call(f, "POST", "/v1/sessions/resume-tail/turns", { message: "echo the end" })).json()
    await reading.catch(() => undefined)
    await proxy.close()
    const first = Number(reference[0]!.id)
    const got = received.filter((fr): fr is Extract<AgentLoopClient.EventFrame, { _tag: "Event" }> => fr._tag === "Event" && fr.id >= first && fr.id <= last)
    expect(got.map((fr) => fr.id)).toEqual(reference.map((fr) => Number(fr.id)))
    expect(got.map((fr) => JSON.stringify(fr.event))).toEqual(reference.map((fr) => JSON.stringify(JSON.parse(fr.data))))
    expect(received.some((fr) => fr._tag === "Gap")).toBe(false)
    // every connection after the first is a reconnect after a cut
    expect(proxy.connections()).toBeGreaterThan(5)
  })
})
