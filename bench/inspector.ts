/**
 * `node bench/inspector.ts` (not a test): how long the inspector page takes to draw, in headless
 * Chromium (`/usr/bin/chromium`, driven by playwright-core), from the start of the navigation to
 * the page's own `inspector:drawn` performance mark (data fetch included), for a session of
 * `MESSAGES` messages (default 10,000; the conversation is drawn virtually, its first entries in
 * view) and for the timeline of a turn of `ITERATIONS` model calls, each with a tool call
 * (default 500; its bars and events drawn virtually, the context chart with a bar per call). The
 * median and worst of repeated loads (`RUNS`, default 10), each in a fresh browser context (no
 * cache). The session lives in an in-memory store, the turn's events are given to the inspector
 * as recorded ones; the server is the library's `Inspector.layer` on 127.0.0.1. Figures depend on
 * the machine and its load: run it on an idle one.
 */
import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { chromium } from "playwright-core"
import { AgentEvent, EventBusLive, Inspector, Message, SessionStoreMemory } from "../src/index.ts"
import type { SessionLog } from "../src/index.ts"

const RUNS = Number(process.env["RUNS"] ?? 10)
const MESSAGES = Number(process.env["MESSAGES"] ?? 10_000)
const ITERATIONS = Number(process.env["ITERATIONS"] ?? 500)

const history = Array.from({ length: MESSAGES }, (_, i) =>
  i % 2 === 0 ? Message.user(`Question ${i}: ${"lorem ipsum dolor sit amet ".repeat(8)}`) : Message.assistant(`Answer ${i}: ${"consectetur adipiscing elit ".repeat(20)}`))

// a turn of ITERATIONS model calls, each asking for one tool call, as its events and its log
const place = (iteration: number) => ({ turnId: "long-turn", sessionKey: "long", iteration, depth: 0 })
const events: Array<AgentEvent.AgentEvent> = [AgentEvent.make("TurnStart", place(0), 0, { input: "go on for a while" })]
const log: Array<SessionLog.SessionEntry> = [Message.user("go on for a while")]
let at = 1
for (let i = 1; i <= ITERATIONS; i++) {
  const usage = { inputTokens: 1_000 + i * 150, outputTokens: 40, costUsd: 0.001 }
  const last = i === ITERATIONS
  const calls = last ? [] : [{ id: `call-${i}`, name: "read_file", arguments: JSON.stringify({ path: `src/file${i}.ts` }) }]
  events.push(AgentEvent.make("LLMRequest", place(i), at, { model: "bench-model", messageCount: log.length, toolCount: 8 }))
  at += 40
  events.push(AgentEvent.make("LLMResponse", place(i), at, { model: "bench-model", content: last ? "done" : "", toolCalls: calls, finishReason: last ? "stop" : "tool_calls", usage, durationMs: 40 }))
  log.push(Message.assistant(last ? "done" : "", calls))
  for (const call of calls) {
    events.push(AgentEvent.make("ToolExecStart", place(i), at, { toolCallId: call.id, toolName: call.name, arguments: call.arguments }))
    at += 5
    events.push(AgentEvent.make("ToolExecEnd", place(i), at, { toolCallId: call.id, toolName: call.name, durationMs: 5, isError: false, result: `contents of file ${i}` }))
    log.push(Message.toolResult(call, `contents of file ${i}`))
  }
}
events.push(AgentEvent.make("TurnEnd", place(ITERATIONS), at, { status: "completed", iterations: ITERATIONS, durationMs: at, usage: { inputTokens: 0, outputTokens: 0 } }))

const token = Inspector.makeToken()
const server = HttpRouter.serve(Inspector.layer({ token, events }), { disableLogger: true, disableListenLog: true }).pipe(
  Layer.provide(Layer.merge(SessionStoreMemory.layer({ big: history, long: log }), EventBusLive.layerCapacity())),
  Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
)
const scope = Effect.runSync(Scope.make())
const context = await Effect.runPromise(Layer.buildWithScope(server, scope))
const origin = HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]
})

const measure = async (hash: string, drawn: string) => {
  const times: Array<number> = []
  for (let run = 0; run <= RUNS; run++) {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage()
    await page.goto(`${Inspector.url(origin, token)}${hash}`)
    await page.waitForSelector(drawn, { timeout: 60_000 })
    const time = await page.evaluate(() => performance.getEntriesByName("inspector:drawn")[0]!.startTime)
    // the first load warms the server and the browser up; it is not counted
    if (run > 0) times.push(time)
    await page.context().close()
  }
  times.sort((a, b) => a - b)
  return `median ${times[Math.floor(times.length / 2)]!.toFixed(0)} ms, worst ${times.at(-1)!.toFixed(0)} ms (${RUNS} loads)`
}

console.log(`inspector: a ${MESSAGES}-message session, first entries drawn: ${await measure("#/s/big", '#conversation [data-index="0"]')}`)
console.log(`inspector: a ${ITERATIONS}-iteration turn's timeline drawn: ${await measure("#/s/long/t/long-turn", "#gantt-rows .row")}`)
await browser.close()
await Effect.runPromise(Scope.close(scope, Exit.void))
