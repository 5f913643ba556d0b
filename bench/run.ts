/**
 * Benchmarks (not tests): loop overhead per iteration, with and without streamed deltas, event
 * bus throughput with a stalled subscriber, and whether that subscriber slows the loop.
 *
 * Run with `npm run bench`. Numbers are medians of several runs on this machine.
 */
import { Effect, Layer, Schema } from "effect"
import * as AgentEvent from "../src/domain/Event.ts"
import * as Tool from "../src/domain/Tool.ts"
import * as EventBusLive from "../src/layers/EventBus.ts"
import * as Scripted from "../src/layers/providers/Scripted.ts"
import * as SessionStoreMemory from "../src/layers/SessionStoreMemory.ts"
import * as AgentLoopLive from "../src/programs/defaults.ts"
import { AgentLoop } from "../src/services/AgentLoop.ts"
import { EventBus } from "../src/services/EventBus.ts"
import { ToolRegistry } from "../src/services/ToolRegistry.ts"

const TURNS = 1000
const RUNS = 5

const noop = Tool.make({
  name: "noop",
  description: "does nothing",
  parameters: Schema.Struct({}),
  readOnly: true,
  execute: () => Effect.succeed("ok")
})

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

/** A turn is a tool call then a final answer: two iterations. */
const script = (deltas: number): Scripted.Script => (request) => {
  const lastIsTool = request.messages.at(-1)?.role === "tool"
  const content = Array.from({ length: deltas }, (_, i) => `d${i} `)
  return lastIsTool ? { content: deltas > 0 ? content : "done" } : { toolCalls: [{ name: "noop" }], content }
}

const loopLayer = (deltas: number) =>
  AgentLoopLive.layer({ model: "bench", eventBufferCapacity: 16 }).pipe(
    Layer.provide([Scripted.layer(script(deltas)), ToolRegistry.layer([noop]), SessionStoreMemory.layer()]),
    Layer.orDie
  )

/** µs per iteration over TURNS turns (each on a fresh session, so histories stay small). */
const loopOverhead = (deltas: number, stalled: boolean) =>
  Effect.gen(function*() {
    const loop = yield* AgentLoop
    if (stalled) yield* loop.subscribe({ capacity: 16 })
    const start = performance.now()
    let iterations = 0
    for (let i = 0; i < TURNS; i++) iterations += (yield* loop.turn(`s${i}`, "go")).iterations
    return ((performance.now() - start) * 1000) / iterations
  }).pipe(Effect.scoped, Effect.provide(loopLayer(deltas)))

const place = { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }
const event = (i: number) => AgentEvent.make("LLMDelta", place, i, { kind: "text", text: "x" })

/** Events per second published to 16 subscribers: 15 drained as they go, 1 never read. */
const busThroughput = Effect.gen(function*() {
  const bus = yield* EventBus
  const readers = yield* Effect.forEach(Array.from({ length: 15 }), () => bus.subscribe({ capacity: 1024 }))
  const stalled = yield* bus.subscribe({ capacity: 16 })
  const total = 1_000_000
  const start = performance.now()
  for (let i = 0; i < total; i++) {
    yield* bus.publish(event(i))
    if (i % 1000 === 999) yield* Effect.forEach(readers, (r) => r.takeAll)
  }
  const seconds = (performance.now() - start) / 1000
  return { eventsPerSecond: total / seconds, stalledDropped: yield* stalled.droppedTotal }
}).pipe(Effect.scoped, Effect.provide(EventBusLive.layerCapacity(16)))

const measure = <A>(name: string, run: Effect.Effect<A>, pick: (a: A) => number) =>
  Effect.gen(function*() {
    yield* run
    const values: Array<number> = []
    for (let i = 0; i < RUNS; i++) values.push(pick(yield* run))
    const result = median(values)
    console.log(`${name.padEnd(58)} ${result.toFixed(2)}  (runs: ${values.map((v) => v.toFixed(1)).join(", ")})`)
    return result
  })

/** Plain and stalled runs alternate, so warm-up and machine noise fall on both alike. */
const stalledComparison = Effect.gen(function*() {
  const plain: Array<number> = []
  const stalled: Array<number> = []
  for (let i = 0; i < 2 * RUNS + 1; i++) {
    plain.push(yield* loopOverhead(0, false))
    stalled.push(yield* loopOverhead(0, true))
  }
  return { plain: median(plain.slice(1)), stalled: median(stalled.slice(1)) }
})

const main = Effect.gen(function*() {
  console.log(`node ${process.version}, ${TURNS} turns x 2 iterations, median of ${RUNS} runs after a warm-up\n`)
  yield* measure("loop overhead, µs/iteration (no deltas)", loopOverhead(0, false), (x) => x)
  yield* measure("loop overhead, µs/iteration (100 text deltas/response)", loopOverhead(100, false), (x) => x)
  yield* measure("event bus, events/s to 16 subscribers (1 stalled)", busThroughput, (x) => x.eventsPerSecond)
  const { plain, stalled } = yield* stalledComparison
  console.log(`\nalternating runs: ${plain.toFixed(1)} µs/iteration without, ${stalled.toFixed(1)} with a stalled subscriber`)
  console.log(`the stalled subscriber changes the loop's time by ${(((stalled - plain) / plain) * 100).toFixed(1)}%`)
})

Effect.runPromise(main)
