/**
 * A turn on a JSON Lines session that already holds many messages: what a long-lived session
 * costs a turn (loading and decoding its history, appending the turn).
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AgentLoop, AgentLoopLive, Message, Scripted, SessionStore, SessionStoreJsonl, ToolRegistry } from "../src/index.ts"

/** A history of `size` messages: user and assistant, about 100 characters each. */
const history = (size: number): ReadonlyArray<Message.Message> =>
  Array.from({ length: size }, (_, i) =>
    i % 2 === 0
      ? Message.user(`question ${i}: ${"lorem ipsum dolor sit amet ".repeat(3)}`)
      : Message.assistant(`answer ${i}: ${"consectetur adipiscing elit ".repeat(3)}`))

/** Milliseconds per turn (median of `turns`) on a session seeded with `size` messages. */
export const turnOnSession = (size: number, turns = 5): Effect.Effect<ReadonlyArray<number>> => {
  const dir = mkdtempSync(join(tmpdir(), "bench-sessions-"))
  const layer = AgentLoopLive.layer({ model: "bench" }).pipe(
    Layer.provideMerge(Layer.mergeAll(Scripted.layer(() => ({ content: "done" })), ToolRegistry.layer([]))),
    Layer.provideMerge(SessionStoreJsonl.layer(dir)),
    Layer.provide(NodeServices.layer),
    Layer.orDie
  )
  return Effect.gen(function*() {
    const store = yield* SessionStore
    yield* Effect.orDie(store.append("long", history(size)))
    const loop = yield* AgentLoop
    yield* loop.turn("long", "warm up")
    const times: Array<number> = []
    for (let i = 0; i < turns; i++) {
      const start = performance.now()
      const result = yield* loop.turn("long", `question ${i}`)
      times.push(performance.now() - start)
      if (result.status !== "completed") throw new Error(`turn ended ${result.status}`)
    }
    return times
  }).pipe(Effect.provide(layer), Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true }))))
}
