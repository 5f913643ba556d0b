/**
 * A loop for tests: scripted provider, given tools, memory store, default services — the package's
 * own test kit (`src/testing`), in the shape the tests use.
 */
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import {
  type Event as AgentEvent,
  AgentLoop,
  type AgentLoopConfig,
  type CurrentTurn,
  type Message,
  type Scripted,
  type Tool
} from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

export interface HarnessOptions {
  readonly script: Scripted.Script
  readonly tools?: ReadonlyArray<Tool.Tool<CurrentTurn>>
  readonly config?: Partial<AgentLoopConfig.AgentLoopConfigInput>
  readonly seed?: Readonly<Record<string, ReadonlyArray<Message.Message>>>
}

/** The whole loop over a scripted provider and a memory store: the package's test kit, config errors as defects. */
export const harness = (options: HarnessOptions) =>
  Testing.layer({ ...options, ...(options.seed ? { sessions: options.seed } : {}) }).pipe(Layer.orDie)

/** Records every event from now on; the returned effect gives all of them so far. */
export const recordEvents = Effect.map(Testing.recordEvents, (recorder) => recorder.all)

/** The tags of events, optionally only of some kinds. */
export const tags = (events: ReadonlyArray<AgentEvent>, kinds?: ReadonlyArray<AgentEvent["_tag"]>) =>
  events.filter((e) => !kinds || kinds.includes(e._tag)).map((e) => e._tag)

/**
 * Lets every fiber of the loop run on to its next wait — one `TestClock.adjust(0)`, no polling —
 * and returns the condition's value, which must hold by then.
 */
export const settled = <A>(check: Effect.Effect<A | undefined | false>): Effect.Effect<A> =>
  Effect.andThen(TestClock.adjust(0), check).pipe(
    Effect.flatMap((value) =>
      value === undefined || value === false ? Effect.die(new Error("the condition does not hold once the loop has settled")) : Effect.succeed(value)
    )
  )

export { AgentLoop }
