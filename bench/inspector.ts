/**
 * `node bench/inspector.ts` (not a test): how long the inspector page takes to show a
 * 1,000-message session in headless Chromium (`/usr/bin/chromium`, driven by playwright-core),
 * from the start of the navigation to the conversation's first page drawn (the page's own
 * `inspector:drawn` performance mark), data fetch included; the median and worst
 * of repeated loads (`RUNS`, default 10), each in a fresh browser context (no cache). `MESSAGES`
 * changes the session's length (default 1,000). The session
 * lives in an in-memory store; the server is the library's `Inspector.layer` on 127.0.0.1. Figures
 * depend on the machine and its load: run it on an idle one.
 */
import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { chromium } from "playwright-core"
import { EventBusLive, Inspector, Message, SessionStoreMemory } from "../src/index.ts"

const RUNS = Number(process.env["RUNS"] ?? 10)
const MESSAGES = Number(process.env["MESSAGES"] ?? 1000)

const history = Array.from({ length: MESSAGES }, (_, i) =>
  i % 2 === 0 ? Message.user(`Question ${i}: ${"lorem ipsum dolor sit amet ".repeat(8)}`) : Message.assistant(`Answer ${i}: ${"consectetur adipiscing elit ".repeat(20)}`))
const token = Inspector.makeToken()
const server = HttpRouter.serve(Inspector.layer({ token }), { disableLogger: true, disableListenLog: true }).pipe(
  Layer.provide(Layer.merge(SessionStoreMemory.layer({ big: history }), EventBusLive.layerCapacity())),
  Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
)
const scope = Effect.runSync(Scope.make())
const context = await Effect.runPromise(Layer.buildWithScope(server, scope))
const origin = HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]
})
const times: Array<number> = []
for (let run = 0; run <= RUNS; run++) {
  const page = await (await browser.newContext()).newPage()
  await page.goto(`${Inspector.url(origin, token)}#/s/big`)
  await page.waitForSelector('#conversation [data-index="199"]', { timeout: 60_000 })
  const drawn = await page.evaluate(() => performance.getEntriesByName("inspector:drawn")[0]!.startTime)
  // the first load warms the server and the browser up; it is not counted
  if (run > 0) times.push(drawn)
  await page.context().close()
}
await browser.close()
await Effect.runPromise(Scope.close(scope, Exit.void))
times.sort((a, b) => a - b)
console.log(`inspector: a ${MESSAGES}-message session, first page drawn: median ${times[Math.floor(times.length / 2)]!.toFixed(0)} ms, worst ${times.at(-1)!.toFixed(0)} ms (${RUNS} loads)`)
