/**
 * The heap a long turn leaves behind: heap in use (after a full GC) once a turn of 10,000
 * iterations has ended, minus the heap before it, with the loop and its in-memory session still
 * alive, on the bench model or on `Scripted` (which keeps a log of every request it received).
 * Needs `--expose-gc` (the `bench` script passes it).
 */
import { Effect, Layer, Option } from "effect"
import { AgentLoop, AgentLoopLive, Scripted, SessionStore, SessionStoreMemory, ToolRegistryLive } from "../src/index.ts"
import * as Model from "./model.ts"

const heapAfterGc = (): number => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error("run node with --expose-gc")
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

/** Retained heap in MB after a turn of `iterations` one-tool iterations, and how many messages it kept. */
export const heapAfterTurn = (
  iterations = 10_000,
  provider: "bench" | "scripted" = "bench"
): Effect.Effect<{ readonly megabytes: number; readonly messages: number }> => {
  let calls = 0
  const model = provider === "bench"
    ? Model.layer({ deltas: 0, tools: 1 }, () => calls++ < iterations)
    : Scripted.layer((_, index) => index < iterations ? { toolCalls: [{ name: "echo", arguments: { text: "e0" } }] } : { content: "done" })
  const layer = AgentLoopLive.layer({ model: "bench", maxIterations: iterations + 1 }).pipe(
    Layer.provideMerge(Layer.mergeAll(model, ToolRegistryLive.layer([Model.echo]), SessionStoreMemory.layer())),
    Layer.orDie
  )
  return Effect.gen(function*() {
    const loop = yield* AgentLoop
    const before = heapAfterGc()
    const result = yield* loop.turn("long", "go")
    if (result.status !== "completed") throw new Error(`turn ended ${result.status}`)
    const after = heapAfterGc()
    const stored = yield* Effect.orDie((yield* SessionStore).load("long"))
    const log = yield* Effect.serviceOption(Scripted.ScriptedLog)
    if (Option.isSome(log) && (yield* log.value.requests).length !== iterations + 1) throw new Error("the scripted log lost requests")
    return { megabytes: (after - before) / 2 ** 20, messages: stored.length }
  }).pipe(Effect.provide(layer))
}
