/**
 * A test kit for applications built on the loop: the whole loop over a scripted model and an
 * in-memory session store, an event recorder, and `advance` for the Clock. Imported from
 * `effect-agent-loop/testing`, so production code never loads it.
 *
 * Everything the loop waits for (retries, timeouts, a model's delays, sub-turns) waits on the
 * Effect Clock, and a turn runs on to its first wait before its caller goes on. So under
 * `TestClock` (e.g. `@effect/vitest`'s `it.effect`) a test forks a turn, calls `advance(d)` once,
 * and every wait of that turn and of its sub-turns that is due within `d` has happened.
 *
 * @example
 * ```ts
 * import { Effect, Fiber } from "effect"
 * import { AgentLoop } from "effect-agent-loop"
 * import * as Testing from "effect-agent-loop/testing"
 *
 * const test = Effect.gen(function*() {
 *   const events = yield* Testing.recordEvents
 *   const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "hi"))
 *   yield* Testing.advance("2 seconds")
 *   const result = yield* Fiber.join(turn)
 *   const [response] = yield* events.ofKind("LLMResponse")
 *   return { answer: result.finalMessage?.content, at: response?.at } // { answer: "hello", at: 1000 }
 * }).pipe(
 *   Effect.scoped,
 *   Effect.provide(Testing.layer({ script: [{ content: "hello", delay: "1 second" }] }))
 * )
 * ```
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as TestClock from "effect/testing/TestClock"
import type { AgentLoopConfigInput } from "../domain/Config.ts"
import type { InvalidConfig } from "../domain/errors.ts"
import type { AgentEvent, EventKind, EventOf } from "../domain/Event.ts"
import type { Message } from "../domain/Message.ts"
import type { ProviderRequest } from "../domain/Provider.ts"
import type * as Tool from "../domain/Tool.ts"
import * as Scripted from "../layers/providers/Scripted.ts"
import * as SessionStoreMemory from "../layers/SessionStoreMemory.ts"
import * as AgentLoopLive from "../programs/AgentLoopLive.ts"
import type { AgentLoop } from "../services/AgentLoop.ts"
import type { CurrentTurn } from "../services/CurrentTurn.ts"
import { EventBus } from "../services/EventBus.ts"
import type { EventJournal } from "../services/EventJournal.ts"
import type { Hooks } from "../services/Hooks.ts"
import type { LoopConfig } from "../services/LoopConfig.ts"
import type { Provider } from "../services/Provider.ts"
import type { SessionStore } from "../services/SessionStore.ts"
import { ToolRegistry } from "../services/ToolRegistry.ts"
import * as ToolRegistryLive from "../layers/ToolRegistry.ts"

/** What a test loop is made of; `Tools` are its tools, whatever services they need. */
export interface TestLoopOptions<Tools extends ReadonlyArray<Tool.Any> = ReadonlyArray<Tool.Any>> {
  /** The model's answers, in order, or a function of each request (see `Scripted`). */
  readonly script: Scripted.Script
  /** The tools; what they need (but `CurrentTurn`, given per call) the layer requires. */
  readonly tools?: Tools
  /** Config fields; `model` defaults to `"test-model"`. */
  readonly config?: Partial<AgentLoopConfigInput>
  /** Sessions the in-memory store starts with. */
  readonly sessions?: Readonly<Record<string, ReadonlyArray<Message>>>
}

/**
 * The whole loop over a scripted model (`ScriptedLog` keeps its requests) and an in-memory session
 * store. Tools that need services make a layer that requires them, as `ToolRegistryLive.layer`
 * does: the test provides them, `Testing.layer({ tools: [lookupOrder], script }).pipe(Layer.provide(OrderDbTest))`.
 */
export const layer = <const Tools extends ReadonlyArray<Tool.Any> = readonly []>(
  options: TestLoopOptions<Tools>
): Layer.Layer<
  AgentLoop | EventBus | EventJournal | Hooks | LoopConfig | Provider | Scripted.ScriptedLog | ToolRegistry | SessionStore,
  InvalidConfig,
  Exclude<Tool.Requirements<Tools[number]>, CurrentTurn>
> =>
  AgentLoopLive.layer({ model: "test-model", ...options.config }).pipe(
    Layer.provideMerge(Layer.mergeAll(
      Scripted.layer(options.script),
      // no tools: a registry that needs nothing (`[]` is not a `Tools` to the compiler, only in fact)
      ToolRegistryLive.layer(options.tools ?? ([] as unknown as Tools)),
      SessionStoreMemory.layer(options.sessions)
    ))
  )

/**
 * How many sessions a loop holds state for now: a session's state is let go once it has been idle
 * for `sessionIdleTimeout` (DESIGN §5), which a test checks with this.
 */
export { heldSessions } from "../programs/AgentLoopProgram.ts"

/** Every event published since the recorder started. */
export interface EventRecorder {
  readonly all: Effect.Effect<ReadonlyArray<AgentEvent>>
  readonly ofKind: <K extends EventKind>(kind: K) => Effect.Effect<ReadonlyArray<EventOf<K>>>
}

/** Starts recording every event (losslessly) until the scope closes. */
export const recordEvents: Effect.Effect<EventRecorder, never, EventBus | Scope.Scope> = Effect.gen(function*() {
  const bus = yield* EventBus
  const subscription = yield* bus.subscribe({ strategy: "lossless" })
  const seen: Array<AgentEvent> = []
  const all = Effect.map(subscription.takeAll, (batch): ReadonlyArray<AgentEvent> => {
    seen.push(...batch)
    return seen
  })
  return {
    all,
    ofKind: <K extends EventKind>(kind: K) => Effect.map(all, (events) => events.filter((e): e is EventOf<K> => e._tag === kind))
  }
})

/** The requests the scripted model received so far. */
export const requests: Effect.Effect<ReadonlyArray<ProviderRequest>, never, Scripted.ScriptedLog> = Effect.gen(function*() {
  return yield* (yield* Scripted.ScriptedLog).requests
})

/**
 * Moves the `TestClock` forward by `duration`: every wait of the loop (and of the turns it forked
 * and their sub-turns) due by then happens, in time order.
 */
export const advance = (duration: Duration.Input): Effect.Effect<void> => TestClock.adjust(duration)

/** The kinds (`_tag`s) of events in order, optionally only those of the given kinds. */
export const kinds = (events: ReadonlyArray<AgentEvent>, only?: ReadonlyArray<EventKind>): ReadonlyArray<EventKind> =>
  events.filter((e) => !only || only.includes(e._tag)).map((e) => e._tag)

/**
 * Lets every fiber of the loop run on to its next wait (one `TestClock.adjust(0)`, no polling) and
 * returns the condition's value, which must hold by then: `false` or `undefined` is a defect that
 * says so.
 */
export const settled = <A>(check: Effect.Effect<A | undefined | false>): Effect.Effect<A> =>
  Effect.andThen(TestClock.adjust(0), check).pipe(
    Effect.flatMap((value) =>
      value === undefined || value === false
        ? Effect.die(new Error("the condition does not hold once the loop has settled"))
        : Effect.succeed(value)
    )
  )
