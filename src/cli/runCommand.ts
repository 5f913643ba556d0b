/**
 * `agent-loop run "prompt"`: one turn, streamed to the terminal. Exits 0 when the turn completes,
 * 130 after Ctrl-C (interrupted or aborted), 1 with a one-line reason otherwise.
 */
import { Effect } from "effect"
import type { TurnResult } from "../domain/Turn.ts"
import { AgentLoop } from "../services/AgentLoop.ts"
import { LoopConfig } from "../services/LoopConfig.ts"
import * as App from "./app.ts"
import * as CtrlC from "./ctrlC.ts"
import { ExitCode, fail } from "./failure.ts"
import type { AgentFlags } from "./flags.ts"
import * as LineInput from "./lineInput.ts"
import { Screen } from "./screen.ts"
import { attach, warnDropped } from "./session.ts"
import * as Settings from "./settings.ts"

/** The exit of a finished turn. */
const outcome = (result: TurnResult, maxIterations: number) => {
  switch (result.status) {
    case "completed":
      return Effect.void
    case "interrupted":
    case "aborted":
      return fail("", ExitCode.interrupted)
    case "max_iterations":
      return fail(`no final answer after ${maxIterations} iterations (raise --max-iterations)`)
    case "blocked":
      return fail(result.error ?? "blocked by a hook")
    case "failed":
      return fail(result.error ?? "the turn failed")
  }
}

/** Runs one turn of `prompt`. */
export const run = (prompt: string, flags: AgentFlags) =>
  Effect.gen(function*() {
    const settings = yield* Settings.resolve(flags)
    yield* Effect.scoped(Effect.gen(function*() {
      const screen = yield* Screen
      const loop = yield* AgentLoop
      const input = screen.interactive ? yield* LineInput.make : undefined
      const sink = yield* attach(settings, input?.ask)
      const main = yield* Effect.fiber
      yield* CtrlC.install({
        sessionKey: settings.sessionKey,
        onIdle: () => Effect.sync(() => main.interruptUnsafe()),
        cancelQuestions: input?.cancelQuestions
      })
      const result = yield* loop.turn(settings.sessionKey, prompt)
      yield* sink.flushed(result.turnId)
      yield* warnDropped(sink)
      return yield* outcome(result, (yield* LoopConfig).maxIterations)
    })).pipe(Effect.provide(App.layer(settings)))
  }) satisfies Effect.Effect<void, unknown, Screen | App.Platform>
