/**
 * Our side of the peer comparison: the workload on `AgentLoopLive` with the bench model (`model.ts`),
 * an in-memory session store and one subscriber that takes every event.
 */
import { Deferred, Effect, Layer } from "effect"
import { AgentLoop, AgentLoopLive, SessionStoreMemory, ToolRegistry } from "../src/index.ts"
import * as Model from "./model.ts"
import { planner, type Measurement, type Workload } from "./workload.ts"

/** Runs one turn of `workload` and measures it. */
const turn = (workload: Workload, sessionKey: string) =>
  Effect.gen(function*() {
    const loop = yield* AgentLoop
    const subscription = yield* loop.subscribe({ strategy: "lossless" })
    const ended = yield* Deferred.make<void>()
    let events = 0
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(subscription.take, (event) => {
      events++
      return event._tag === "TurnEnd" && event.depth === 0 ? Deferred.succeed(ended, undefined) : Effect.void
    })))
    const start = performance.now()
    const result = yield* loop.turn(sessionKey, "go")
    yield* Deferred.await(ended)
    const micros = (performance.now() - start) * 1000
    if (result.status !== "completed") throw new Error(`turn ended ${result.status}: ${result.error ?? ""}`)
    if ((yield* subscription.droppedTotal) > 0) throw new Error("the subscriber lost events")
    const calls = workload.iterations + 1
    return { microsPerIteration: micros / calls, eventsPerIteration: events / calls } satisfies Measurement
  }).pipe(Effect.scoped)

/** A warm-up turn, then the measured one, each with a model of its own plan. */
export const run = (workload: Workload, warmUp: Workload): Promise<Measurement> => {
  let plan = planner(warmUp)
  const layer = AgentLoopLive.layer({ model: "bench", maxIterations: workload.iterations + 1 }).pipe(
    Layer.provide([Model.layer(workload, () => plan.next()), ToolRegistry.layer([Model.echo]), SessionStoreMemory.layer()]),
    Layer.orDie
  )
  return Effect.runPromise(Effect.gen(function*() {
    yield* turn(warmUp, "warm-up")
    plan = planner(workload)
    return yield* turn(workload, "measured")
  }).pipe(Effect.provide(layer)))
}
