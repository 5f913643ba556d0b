/**
 * A loop for tests: scripted provider, given tools, memory store, default services — the package's
 * own test kit (`src/testing`), in the shape the tests use.
 */
import { Effect, Layer } from "effect"
import type { AgentLoopConfigInput } from "../../src/domain/Config.ts"
import type { AgentEvent } from "../../src/domain/Event.ts"
import type { Message } from "../../src/domain/Message.ts"
import type { Tool } from "../../src/domain/Tool.ts"
import type * as Scripted from "../../src/layers/providers/Scripted.ts"
import { AgentLoop } from "../../src/services/AgentLoop.ts"
import type { CurrentTurn } from "../../src/services/CurrentTurn.ts"
import * as Testing from "../../src/testing/index.ts"

export interface HarnessOptions {
  readonly script: Scripted.Script
  readonly tools?: ReadonlyArray<Tool<CurrentTurn>>
  readonly config?: Partial<AgentLoopConfigInput>
  readonly seed?: Readonly<Record<string, ReadonlyArray<Message>>>
}

/** The whole loop over a scripted provider and a memory store: the package's test kit, config errors as defects. */
export const harness = (options: HarnessOptions) =>
  Testing.layer({ ...options, ...(options.seed ? { sessions: options.seed } : {}) }).pipe(Layer.orDie)

/** Records every event from now on; the returned effect gives all of them so far. */
export const recordEvents = Effect.map(Testing.recordEvents, (recorder) => recorder.all)

/** The tags of events, optionally only of some kinds. */
export const tags = (events: ReadonlyArray<AgentEvent>, kinds?: ReadonlyArray<AgentEvent["_tag"]>) =>
  events.filter((e) => !kinds || kinds.includes(e._tag)).map((e) => e._tag)

/** Waits (on fiber yields, not time) until a condition holds. */
export const eventually = <A>(check: Effect.Effect<A | undefined>, tries = 1000): Effect.Effect<A> =>
  Effect.gen(function*() {
    for (let i = 0; i < tries; i++) {
      const value = yield* check
      if (value !== undefined && value !== false) return value
      yield* Effect.yieldNow
    }
    return yield* Effect.die(new Error("condition never held"))
  })

export { AgentLoop }
