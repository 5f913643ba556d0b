/**
 * Our side of the peer comparison: the workload on `AgentLoopLive` with the bench model (`model.ts`),
 * an in-memory session store and one lossless subscriber that drains every event.
 *
 * The subscriber drains what is buffered as a batch (`subscription.stream`, as the README's
 * renderer does with `loop.events`). `take` in an `Effect.forever` loop is the other way to
 * consume (`consumer = "take"`): `Effect.forever` yields to the scheduler after every event, a
 * macrotask per event (~1–5 µs on this machine kind) paid by the consumer's own loop, whatever
 * the bus does.
 */
import { Deferred, Effect, Layer, Stream } from "effect"
import { type AgentEvent, AgentLoop, AgentLoopLive, SessionStoreMemory, ToolRegistryLive } from "../src/index.ts"
import * as Model from "./model.ts"
import { planner, type Measurement, settle, stopwatch, type Workload } from "./workload.ts"

/** How the subscriber consumes: batches of what is buffered, or one `take` per event. */
export type Consumer = "stream" | "take"

/** Runs one turn of `workload` and measures it. */
const turn = (workload: Workload, sessionKey: string, consumer: Consumer) =>
  Effect.gen(function*() {
    const loop = yield* AgentLoop
    const subscription = yield* loop.subscribe({ strategy: "lossless" })
    const ended = yield* Deferred.make<void>()
    let events = 0
    const onEvent = (event: AgentEvent.AgentEvent) => {
      events++
      return event._tag === "TurnEnd" && event.depth === 0 ? Deferred.succeed(ended, undefined) : Effect.void
    }
    yield* Effect.forkScoped(
      consumer === "stream"
        ? Stream.runForEach(subscription.stream, onEvent)
        : Effect.forever(Effect.flatMap(subscription.take, onEvent))
    )
    yield* Effect.promise(settle)
    const stop = stopwatch()
    const result = yield* loop.turn(sessionKey, "go")
    yield* Deferred.await(ended)
    const { cpuMicros, mainCpuMicros, micros } = stop()
    if (result.status !== "completed") throw new Error(`turn ended ${result.status}: ${result.error ?? ""}`)
    if ((yield* subscription.droppedTotal) > 0) throw new Error("the subscriber lost events")
    const calls = workload.iterations + 1
    return {
      microsPerIteration: micros / calls,
      cpuMicrosPerIteration: cpuMicros / calls,
      mainCpuMicrosPerIteration: mainCpuMicros / calls,
      eventsPerIteration: events / calls
    }
  }).pipe(Effect.scoped)

/**
 * A warm-up turn, then the measured one, each with a model of its own plan; both are timed.
 * `around` runs the measured turn (a profiler starts and stops there, see `inspected.ts`).
 */
export const run = (
  workload: Workload,
  warmUp: Workload,
  consumer: Consumer = "stream",
  path: Model.Path = "whole",
  around: <A, E, R>(measured: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> = (measured) => measured
): Promise<Measurement> => {
  let plan = planner(warmUp)
  const layer = AgentLoopLive.layer({ model: "bench", maxIterations: workload.iterations + 1 }).pipe(
    Layer.provide([Model.layer(workload, () => plan.next(), path), ToolRegistryLive.layer([Model.echo]), SessionStoreMemory.layer()]),
    Layer.orDie
  )
  return Effect.runPromise(Effect.gen(function*() {
    const first = yield* turn(warmUp, "warm-up", consumer)
    plan = planner(workload)
    const measured = yield* around(turn(workload, "measured", consumer))
    return { ...measured, firstTurnMicrosPerIteration: first.microsPerIteration } satisfies Measurement
  }).pipe(Effect.provide(layer)))
}
