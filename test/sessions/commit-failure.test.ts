/**
 * A turn is `completed` only when its commit is stored. A commit that fails for a moment (the
 * store's database restarting: a transient `SessionStoreError`) is retried with backoff on the
 * Clock; one that still cannot be stored, or fails for good, ends the turn `failed` with nothing
 * of it in the log, saying which tools ran.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, AgentLoopLive, Scripted, SessionStore, SessionStoreError, SessionStoreMemory, Tool, ToolRegistryLive } from "effect-agent-loop"

/** A tool that is not idempotent: each run is counted. */
const exec = (runs: { count: number }) =>
  Tool.make({
    name: "exec",
    description: "Runs a command",
    parameters: Schema.Struct({ cmd: Schema.String }),
    execute: () => Effect.sync(() => `ran ${++runs.count}`)
  })

/** The memory store, whose appends fail `failures` times first (transient or not). */
const flakyStore = (failures: number, transient: boolean) =>
  Layer.effect(
    SessionStore,
    Effect.map(SessionStoreMemory.make(), (store) => {
      let left = failures
      return {
        ...store,
        append: (key: string, entries: Parameters<typeof store.append>[1]) =>
          Effect.suspend(() =>
            left-- > 0
              ? Effect.fail(new SessionStoreError({ sessionKey: key, message: "cannot append to session: PgConnection: Failed to connect", ...(transient ? { transient: true } : {}) }))
              : store.append(key, entries)
          )
      }
    })
  )

const loopWith = (store: Layer.Layer<SessionStore>, runs: { count: number }) =>
  AgentLoopLive.layer({ model: "m" }).pipe(
    Layer.provideMerge(Layer.mergeAll(
      Scripted.layer([{ toolCalls: [{ id: "c1", name: "exec", arguments: { cmd: "date" } }] }, { content: "done" }]),
      ToolRegistryLive.layer([exec(runs)]),
      store
    )),
    Layer.orDie
  )

describe("a turn's commit", () => {
  it.effect("retried through a transient failure under the Clock: completed, in the log once, the tool run once", () => {
    const runs = { count: 0 }
    return Effect.gen(function*() {
      const loop = yield* AgentLoop
      const fiber = yield* Effect.forkChild(loop.turn("s", "go"))
      // three failed attempts: 100 + 200 + 400 ms of backoff, which only the TestClock lets pass
      for (let i = 0; i < 20 && fiber.pollUnsafe() === undefined; i++) yield* TestClock.adjust("500 millis")
      const result = yield* Fiber.join(fiber)
      expect(result.status).toBe("completed")
      expect(result.error).toBeUndefined()
      const log = yield* (yield* SessionStore).log("s")
      expect(log.filter((entry) => "role" in entry && entry.role === "user").length).toBe(1)
      expect(runs.count).toBe(1)
    }).pipe(Effect.provide(loopWith(flakyStore(3, true), runs)))
  })

  it.effect("that fails for good: failed, not completed; nothing in the log; the error names the tools that ran", () => {
    const runs = { count: 0 }
    return Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.status).toBe("failed")
      expect(result.messages).toEqual([])
      expect(result.error).toMatch(/^the turn could not be stored, so it did not complete: cannot append to session: .*; tools that ran: exec$/)
      expect(result.failure?._tag).toBe("SessionStoreError")
      expect(yield* (yield* SessionStore).log("s")).toEqual([])
      expect(runs.count).toBe(1)
    }).pipe(Effect.provide(loopWith(flakyStore(1, false), runs)))
  })

  it.effect("transient past the retry bound (30 s on the Clock): failed, nothing in the log", () => {
    const runs = { count: 0 }
    return Effect.gen(function*() {
      const fiber = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      for (let i = 0; i < 100 && fiber.pollUnsafe() === undefined; i++) yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(fiber)
      expect(result.status).toBe("failed")
      expect(yield* (yield* SessionStore).log("s")).toEqual([])
      expect(runs.count).toBe(1)
    }).pipe(Effect.provide(loopWith(flakyStore(1_000_000, true), runs)))
  })
})
