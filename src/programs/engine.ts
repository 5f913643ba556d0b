/**
 * The turn engine, built once per loop the way `effect`'s own `LanguageModel.make` builds a
 * model: the services are resolved once (`Env`), every part of a turn (the provider call, the
 * tool runner, the ways of ending, sub-turns, summaries) is made once over them, and what comes
 * back are plain closures. A turn then costs what it does, not a context lookup per step.
 */
import { Effect, type Scope } from "effect"
import type { TurnResult } from "../domain/Turn.ts"
import type { CurrentTurnShape } from "../services/CurrentTurn.ts"
import * as CallModel from "./callModel.ts"
import * as Env from "./Env.ts"
import * as ExecuteTools from "./executeTools.ts"
import * as RunTurn from "./runTurn.ts"
import * as SubTurns from "./subTurn.ts"
import * as Summarize from "./summarize.ts"
import type { SessionPort, TurnSpec } from "./TurnContext.ts"
import type { TurnControl } from "./TurnControl.ts"
import * as TurnEnd from "./turnEnd.ts"

/** A loop's engine. */
export interface Engine {
  /** What the engine was built from (and the registry of running turns). */
  readonly env: Env.Env
  /** Runs one turn to its end and returns its result; never fails. */
  readonly runTurn: (spec: TurnSpec) => Effect.Effect<TurnResult>
  /** What tools of the turn `control` see. */
  readonly currentTurn: (control: TurnControl) => CurrentTurnShape
  /** Appends a summary record to the session if it is past the threshold; never fails. */
  readonly summarize: (session: SessionPort, control: TurnControl, model: string) => Effect.Effect<void>
}

/** Builds the engine from the loop's services; its scope owns critical sub-turns. */
export const makeEngine: Effect.Effect<Engine, never, Env.Services | Scope.Scope> = Effect.gen(function*() {
  const env = yield* Env.make
  // Sub-turns run turns and turns spawn sub-turns: the runner is bound once both exist.
  let runTurn!: (spec: TurnSpec) => Effect.Effect<TurnResult>
  const subTurns = SubTurns.make(env, (spec) => runTurn(spec))
  runTurn = RunTurn.make(env, {
    model: CallModel.make(env),
    executeTools: ExecuteTools.make(env),
    end: TurnEnd.make(env),
    currentTurn: subTurns.currentTurn
  })
  return { env, runTurn, currentTurn: subTurns.currentTurn, summarize: Summarize.make(env) }
})
