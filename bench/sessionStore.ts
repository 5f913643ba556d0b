/**
 * What a long JSON Lines session costs a turn: a turn (load, call a zero-latency model, append)
 * on sessions of 1k, 10k and 50k messages, medians of several turns after a warm-up turn, plus
 * the first load of a fresh store (the whole file decoded once per process) for scale.
 *
 * Run: `node bench/sessionStore.ts [turns]`. Target: a turn at 50k costs at most 2× a turn at 1k.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AgentLoop, AgentLoopLive, Message, Scripted, SessionStore, SessionStoreJsonl, ToolRegistry } from "../src/index.ts"

const turns = Number(process.argv[2] ?? 15)

/** A history of `size` messages, about 100 characters each. */
const history = (size: number): ReadonlyArray<Message.Message> =>
  Array.from({ length: size }, (_, i) =>
    i % 2 === 0
      ? Message.user(`question ${i}: ${"lorem ipsum dolor sit amet ".repeat(3)}`)
      : Message.assistant(`answer ${i}: ${"consectetur adipiscing elit ".repeat(3)}`))

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const measure = (size: number) => {
  const dir = mkdtempSync(join(tmpdir(), "bench-session-store-"))
  const layer = AgentLoopLive.layer({ model: "bench" }).pipe(
    Layer.provideMerge(Layer.mergeAll(Scripted.layer(() => ({ content: "done" })), ToolRegistry.layer([]))),
    Layer.provideMerge(SessionStoreJsonl.layer(dir)),
    Layer.provide(NodeServices.layer),
    Layer.orDie
  )
  return Effect.gen(function*() {
    yield* Effect.orDie((yield* SessionStore).append("long", history(size)))
    const fresh = yield* SessionStoreJsonl.make(dir)
    const coldStart = performance.now()
    yield* Effect.orDie(fresh.load("long"))
    const cold = performance.now() - coldStart
    const loop = yield* AgentLoop
    yield* loop.turn("long", "warm up")
    const times: Array<number> = []
    for (let i = 0; i < turns; i++) {
      const start = performance.now()
      const result = yield* loop.turn("long", `question ${i}`)
      times.push(performance.now() - start)
      if (result.status !== "completed") throw new Error(`turn ended ${result.status}`)
    }
    return { size, turnMs: median(times), coldLoadMs: cold }
  }).pipe(Effect.provide(layer), Effect.provide(NodeServices.layer), Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true }))))
}

const main = Effect.gen(function*() {
  const rows = []
  for (const size of [1_000, 10_000, 50_000]) rows.push(yield* measure(size))
  console.table(rows.map((r) => ({ messages: r.size, "turn ms (median)": r.turnMs.toFixed(2), "first load ms": r.coldLoadMs.toFixed(1) })))
  console.log(`turn at 50k / turn at 1k: ${(rows[2]!.turnMs / rows[0]!.turnMs).toFixed(2)} (target ≤ 2)`)
})

Effect.runPromise(main)
