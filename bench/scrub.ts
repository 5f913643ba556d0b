/**
 * `node bench/scrub.ts` (not a test): what scrubbing known secrets costs the loop. The loop
 * overhead per iteration of `run.ts` (many short turns, a tool call then the answer, 100 text
 * deltas per response), with no secret registered and with two (as the CLI has, the provider keys),
 * alternating runs; the median of each.
 */
import { Effect, Layer } from "effect"
import { AgentLoop, AgentLoopLive, SecretsLive, SessionStoreMemory, ToolRegistryLive } from "../src/index.ts"
import * as Model from "./model.ts"
import { median } from "./workload.ts"

const TURNS = 1000
const RUNS = 7

const loopLayer = (secrets: ReadonlyArray<string>) =>
  AgentLoopLive.layer({ model: "bench", eventBufferCapacity: 16 }).pipe(
    Layer.provide([Model.layer({ deltas: 100, tools: 1 }, (request) => request.messages.at(-1)?.role !== "tool"), ToolRegistryLive.layer([Model.echo]), SessionStoreMemory.layer()]),
    Layer.provide(SecretsLive.layer(secrets)),
    Layer.orDie
  )

/** µs per iteration. */
const overhead = (secrets: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const loop = yield* AgentLoop
    const start = performance.now()
    let iterations = 0
    for (let i = 0; i < TURNS; i++) iterations += (yield* loop.turn(`s${i}`, "go")).iterations
    return ((performance.now() - start) * 1000) / iterations
  }).pipe(Effect.scoped, Effect.provide(loopLayer(secrets)))

const none: Array<number> = []
const two: Array<number> = []
for (let run = 0; run < RUNS; run++) {
  none.push(await Effect.runPromise(overhead([])))
  two.push(await Effect.runPromise(overhead(["sk-proj-bench-0123456789abcdef", "sk-ant-bench-fedcba9876543210"])))
}
const show = (runs: ReadonlyArray<number>) => `${median(runs).toFixed(1)} µs/iteration (runs: ${runs.map((r) => r.toFixed(1)).join(", ")})`
console.log(`no secret:    ${show(none)}`)
console.log(`two secrets:  ${show(two)}`)
