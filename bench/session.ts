/**
 * A turn on a session that already holds many messages: what a long-lived session costs a turn
 * (loading and decoding its history, calling a zero-latency model, appending the turn), on any
 * store. `npm run bench` measures the JSON Lines store with it; `bench/sessionStore.ts` every store.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Layer, type Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { SessionStoreShape } from "../src/index.ts"
import { AgentLoop, AgentLoopLive, Message, Scripted, SessionStore, SessionStoreJsonl, ToolRegistryLive } from "../src/index.ts"

/** A store under test: the layer the loop uses, and how to open a second, cold store on the same data. */
export interface Backend {
  readonly store: Layer.Layer<SessionStore, unknown>
  readonly fresh: Effect.Effect<SessionStoreShape, unknown, Scope.Scope>
}

/** A history of `size` messages: user and assistant, about 100 characters each. */
const history = (size: number): ReadonlyArray<Message.Message> =>
  Array.from({ length: size }, (_, i) =>
    i % 2 === 0
      ? Message.user(`question ${i}: ${"lorem ipsum dolor sit amet ".repeat(3)}`)
      : Message.assistant(`answer ${i}: ${"consectetur adipiscing elit ".repeat(3)}`))

/**
 * Seeds a session with `size` messages, times the first load of a cold store on it, then the
 * milliseconds of each of `turns` turns after three warm-up turns.
 */
export const turnsOnSession = (size: number, backend: Backend, turns: number) =>
  Effect.gen(function*() {
    yield* Effect.orDie((yield* SessionStore).append("long", history(size)))
    const fresh = yield* backend.fresh
    const coldStart = performance.now()
    yield* Effect.orDie(fresh.load("long"))
    const coldLoadMs = performance.now() - coldStart
    const loop = yield* AgentLoop
    for (let i = 0; i < 3; i++) yield* loop.turn("long", `warm up ${i}`)
    const times: Array<number> = []
    for (let i = 0; i < turns; i++) {
      const start = performance.now()
      const result = yield* loop.turn("long", `question ${i}`)
      times.push(performance.now() - start)
      if (result.status !== "completed") throw new Error(`turn ended ${result.status}`)
    }
    return { times, coldLoadMs }
  }).pipe(
    Effect.scoped,
    Effect.provide(AgentLoopLive.layer({ model: "bench" }).pipe(
      Layer.provideMerge(Layer.mergeAll(Scripted.layer(() => ({ content: "done" })), ToolRegistryLive.layer([]))),
      Layer.provideMerge(backend.store),
      Layer.orDie
    ))
  )

/** Runs `f` with a fresh temporary directory, removed afterwards. */
export const inTempDir = <A, E, R>(f: (dir: string) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "bench-session-"))),
    f,
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/** The JSON Lines store in `dir`. */
export const jsonl = (dir: string): Backend => ({
  store: SessionStoreJsonl.layer(dir).pipe(Layer.provide(NodeServices.layer)),
  fresh: SessionStoreJsonl.make(dir).pipe(Effect.provide(NodeServices.layer))
})
