/**
 * `npm run bench:server` (not a test): the loop's HTTP API against the loop in-process, on one
 * machine over loopback, with a zero-latency scripted model and sessions in memory.
 *
 * - Turns per second, 16 sessions in parallel: `loop.turn` in-process, then through the API (each
 *   turn `POST …/turns`, then `GET /v1/turns/{id}?wait=30`, answered when it ends), and their ratio;
 *   with a model that answers at once, then with one that takes `MODEL_MS` (default 20 ms, a fast
 *   hosted model's first token). At zero latency an in-process turn costs about 0.3 ms and the two
 *   HTTP requests about 2 ms together (client and server share this process's thread), so that
 *   ratio measures HTTP against nothing; with a model's latency it is what an application sees.
 * - How long an event takes from the loop (its `at`) to an SSE client's read, p50 and p99, with 1
 *   and with 100 clients connected.
 * - Memory per idle connected client: the server process's heap and external memory, after a GC,
 *   with 500 idle `GET /v1/events` clients, against none (the clients are raw sockets in the same
 *   process, so their own few kilobytes each are counted too).
 *
 * Run on an idle machine (`node --expose-gc bench/server.ts`); `TURNS` sets the turns per session.
 */
import { createServer } from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer, Redacted, Scope, Exit } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import * as AgentLoopLive from "../src/programs/AgentLoopLive.ts"
import * as Scripted from "../src/layers/providers/Scripted.ts"
import * as SessionStoreMemory from "../src/layers/SessionStoreMemory.ts"
import * as ToolRegistryLive from "../src/layers/ToolRegistry.ts"
import * as Server from "../src/server/Server.ts"
import { AgentLoop } from "../src/services/AgentLoop.ts"

const SESSIONS = 16
const TURNS = Number(process.env["TURNS"] ?? 100)
const CLIENTS = 500

/** How long the scripted model takes to answer, in ms: zero, then a fast real model's latency. */
let modelMs = 0

const loop = AgentLoopLive.layer({ model: "bench-model" }).pipe(
  Layer.provideMerge(Layer.mergeAll(
    Scripted.layer(() => ({ content: "ok", usage: { inputTokens: 1, outputTokens: 1 }, ...(modelMs > 0 ? { delay: `${modelMs} millis` } : {}) })),
    ToolRegistryLive.layer([]),
    SessionStoreMemory.layer()
  ))
)
const token = Server.makeToken()
const scope = Effect.runSync(Scope.make())
const context = await Effect.runPromise(Layer.buildWithScope(
  HttpRouter.serve(Server.layer({ token }), { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" })),
    Layer.provideMerge(loop)
  ),
  scope
))
const origin = HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
const agent = Context.get(context, AgentLoop)
const headers = { authorization: `Bearer ${Redacted.value(token)}`, "content-type": "application/json" }

/** Reads an SSE stream, calling `onEvent` with each event and the time it was read. */
const follow = async (onEvent: (event: any, readAt: number) => void, signal: AbortSignal) => {
  const response = await fetch(`${origin}/v1/events`, { headers, signal })
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  const pump = async () => {
    try {
      while (true) {
        const chunk = await reader.read()
        if (chunk.done) return
        const readAt = Date.now()
        buffer += chunk.value
        let end: number
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const data = block.split("\n").find((line) => line.startsWith("data: "))
          if (data !== undefined) onEvent(JSON.parse(data.slice(6)), readAt)
        }
      }
    } catch {
      // aborted
    }
  }
  void pump()
}

const inProcess = async () => {
  const start = performance.now()
  await Promise.all(Array.from({ length: SESSIONS }, (_, s) =>
    (async () => {
      for (let i = 0; i < TURNS; i++) await Effect.runPromise(agent.turn(`local-${s}`, `turn ${i}`))
    })()))
  return (SESSIONS * TURNS) / ((performance.now() - start) / 1000)
}

const throughApi = async () => {
  const start = performance.now()
  await Promise.all(Array.from({ length: SESSIONS }, (_, s) =>
    (async () => {
      const key = `api-${s}`
      for (let i = 0; i < TURNS; i++) {
        const started = await fetch(`${origin}/v1/sessions/${key}/turns`, { method: "POST", headers, body: JSON.stringify({ message: `turn ${i}` }) })
        const { turnId } = await started.json() as { turnId: string }
        // answered when the turn ends
        const state = await (await fetch(`${origin}/v1/turns/${turnId}?wait=30`, { headers })).json() as { status: string }
        if (state.status !== "done") throw new Error(`turn ${turnId} still ${state.status}`)
      }
    })()))
  return (SESSIONS * TURNS) / ((performance.now() - start) / 1000)
}

const percentile = (values: Array<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** Event latency with `clients` connected: every client's read time minus the event's `at`. */
const latency = async (clients: number) => {
  const controller = new AbortController()
  const delays: Array<number> = []
  for (let c = 0; c < clients; c++) {
    await follow((event, readAt) => {
      if (typeof event.at === "number") delays.push(readAt - event.at)
    }, controller.signal)
  }
  const turns = 50
  for (let i = 0; i < turns; i++) await Effect.runPromise(agent.turn(`latency-${clients}`, `turn ${i}`))
  // every client reads every event (5 per turn), or 30 s pass
  const deadline = Date.now() + 30_000
  while (delays.length < turns * 5 * clients && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
  controller.abort()
  return { p50: percentile(delays, 50), p99: percentile(delays, 99), samples: delays.length }
}

const memory = () => {
  globalThis.gc?.()
  globalThis.gc?.()
  const usage = process.memoryUsage()
  return usage.heapUsed + usage.external + usage.arrayBuffers
}

/** Memory per idle client: `CLIENTS` raw sockets holding `GET /v1/events` open. */
const idleClients = async () => {
  const before = memory()
  const sockets: Array<net.Socket> = []
  const url = new URL(origin)
  await Promise.all(Array.from({ length: CLIENTS }, () =>
    new Promise<void>((resolve) => {
      const socket = net.connect(Number(url.port), url.hostname, () => {
        socket.write(`GET /v1/events HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: ${headers.authorization}\r\n\r\n`)
      })
      socket.once("data", () => resolve())
      sockets.push(socket)
    })))
  const after = memory()
  for (const socket of sockets) socket.destroy()
  return (after - before) / CLIENTS
}

if (globalThis.gc === undefined) console.log("(run with node --expose-gc for the memory figure)")
console.log(`load average ${os.loadavg().map((n) => n.toFixed(1)).join(" ")} on ${os.cpus().length} cores`)
for (const ms of [0, Number(process.env["MODEL_MS"] ?? 20)]) {
  modelMs = ms
  const local = await inProcess()
  const api = await throughApi()
  console.log(
    `turns/s, ${SESSIONS} sessions x ${TURNS} turns, model answering in ${ms} ms: in-process ${local.toFixed(0)}, ` +
      `through the API ${api.toFixed(0)}, ratio ${(api / local).toFixed(2)}`
  )
}
modelMs = 0
for (const clients of [1, 100]) {
  const { p50, p99, samples } = await latency(clients)
  console.log(`event latency, loop to SSE client, ${clients} client(s): p50 ${p50} ms, p99 ${p99} ms (${samples} events read)`)
}
// last: the idle clients' sockets are dropped when measured, and the server notices each only at
// its next write, which would weigh on whatever ran after
const perClient = await idleClients()
console.log(`memory per idle connected client: ${(perClient / 1024).toFixed(1)} KiB (${CLIENTS} clients)`)
await Effect.runPromise(Scope.close(scope, Exit.void))
process.exit(0)
