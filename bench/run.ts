/**
 * `npm run bench` (not a test): the loop's own costs, each printed with the runs it is the median of.
 *
 * - loop overhead per iteration over many short turns, with and without 100 text deltas per response
 * - event bus throughput to 16 subscribers, one of them stalled
 * - whether a stalled subscriber slows the loop (plain and stalled runs alternate)
 * - a turn on a JSON Lines session of 1k / 10k / 50k messages
 * - the heap a 10,000-iteration turn leaves behind
 *
 * The comparison with pi-agent-core is `npm run bench:peers` (`peers.ts`).
 */
import { Effect, Layer } from "effect"
import { AgentLoop, AgentLoopLive, SessionStoreMemory, ToolRegistryLive } from "../src/index.ts"
import { throughput } from "./bus.ts"
import { heapAfterTurn } from "./heap.ts"
import * as Model from "./model.ts"
import { inTempDir, jsonl, turnsOnSession } from "./session.ts"
import { median } from "./workload.ts"

const TURNS = 1000
const RUNS = 5

const loopLayer = (deltas: number) =>
  AgentLoopLive.layer({ model: "bench", eventBufferCapacity: 16 }).pipe(
    Layer.provide([Model.layer({ deltas, tools: 1 }, (request) => request.messages.at(-1)?.role !== "tool"), ToolRegistryLive.layer([Model.echo]), SessionStoreMemory.layer()]),
    Layer.orDie
  )

/** µs per iteration over TURNS turns of two iterations (a tool call, then the answer) (each on a fresh session, so histories stay small). */
const loopOverhead = (deltas: number, stalled: boolean) =>
  Effect.gen(function*() {
    const loop = yield* AgentLoop
    if (stalled) yield* loop.subscribe({ capacity: 16 })
    const start = performance.now()
    let iterations = 0
    for (let i = 0; i < TURNS; i++) iterations += (yield* loop.turn(`s${i}`, "go")).iterations
    return ((performance.now() - start) * 1000) / iterations
  }).pipe(Effect.scoped, Effect.provide(loopLayer(deltas)))

const print = (name: string, result: number, runs: ReadonlyArray<number>, digits = 1) =>
  console.log(`${name.padEnd(70)} ${result.toFixed(digits)}  (runs: ${runs.map((v) => v.toFixed(digits)).join(", ")})`)

const measure = <A>(name: string, run: Effect.Effect<A>, pick: (a: A) => number) =>
  Effect.gen(function*() {
    yield* run
    const values: Array<number> = []
    for (let i = 0; i < RUNS; i++) values.push(pick(yield* run))
    const result = median(values)
    print(name, result, values)
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

const sessions = Effect.gen(function*() {
  const perSize: Array<number> = []
  for (const size of [1_000, 10_000, 50_000]) {
    // 21 turns, as bench/sessionStore.ts takes: with a 50k-message history in the heap, a major
    // collection lands in some turns, and a median of five was decided by where they fell.
    const { times } = yield* inTempDir((dir) => turnsOnSession(size, jsonl(dir), 21))
    perSize.push(median(times))
    print(`turn on a JSONL session of ${size} messages, ms`, median(times), times, 2)
  }
  console.log(`a turn on 50k messages costs ${(perSize[2]! / perSize[0]!).toFixed(2)}x a turn on 1k`)
})

const main = Effect.gen(function*() {
  console.log(`node ${process.version}, median of ${RUNS} runs after a warm-up\n`)
  yield* measure(`loop overhead, µs/iteration (${TURNS} turns, no deltas)`, loopOverhead(0, false), (x) => x)
  yield* measure(`loop overhead, µs/iteration (${TURNS} turns, 100 deltas)`, loopOverhead(100, false), (x) => x)
  for (const way of ["make+publish", "publish", "publishUnsafe"] as const) {
    yield* measure(`event bus, events/s to 16 subscribers (1 stalled), ${way}`, throughput(way), (x) => x.eventsPerSecond)
  }
  const { plain, stalled } = yield* stalledComparison
  console.log(`alternating runs: ${plain.toFixed(1)} µs/iteration without, ${stalled.toFixed(1)} with a stalled subscriber`)
  console.log(`the stalled subscriber changes the loop's time by ${(((stalled - plain) / plain) * 100).toFixed(1)}%\n`)
  yield* sessions
  const heap = yield* heapAfterTurn()
  console.log(`\nheap retained after a 10,000-iteration turn: ${heap.megabytes.toFixed(1)} MB (${heap.messages} messages in the session)`)
  const scripted = yield* heapAfterTurn(10_000, "scripted")
  console.log(`the same on Scripted, its log of 10,001 requests included: ${scripted.megabytes.toFixed(1)} MB`)
})

Effect.runPromise(main)
