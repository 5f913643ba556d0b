/**
 * `CurrentTurn`: what a tool can reach of the turn that called it, provided per call.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { CurrentTurn } from "effect-agent-loop"
 *
 * const delegate = Effect.gen(function*() {
 *   const turn = yield* CurrentTurn
 *   return yield* turn.spawnSubTurn({ model: "small", task: "Summarise README.md" })
 * })
 * ```
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type {
  ConcurrencyTimeout,
  DepthLimitExceeded,
  InvalidSubTurnConfig,
  SubTurnBlocked
} from "../domain/errors.ts"
import type { TodoItem } from "../domain/Event.ts"
import type { SubTurnConfigInput } from "../domain/SubTurn.ts"
import type { TurnResult } from "../domain/Turn.ts"

/** Why a sub-turn could not be started. */
export type SpawnError = DepthLimitExceeded | InvalidSubTurnConfig | ConcurrencyTimeout | SubTurnBlocked

/** The calling turn. */
export interface CurrentTurnShape {
  readonly turnId: string
  readonly sessionKey: string
  /** The model this turn talks to (the default for sub-turns). */
  readonly model: string
  readonly depth: number
  readonly parentTurnId: string | undefined
  /** Runs a child turn (DESIGN §7) and returns its result; `async: true` also delivers it to this turn. */
  readonly spawnSubTurn: (config: SubTurnConfigInput) => Effect.Effect<TurnResult, SpawnError>
  /**
   * Starts a child turn in a fiber owned by this turn (by the loop when `critical`) and returns
   * its id at once; its result reaches this turn as a pending result or an orphan.
   */
  readonly spawnDetached: (config: SubTurnConfigInput) => Effect.Effect<string, SpawnError>
  /**
   * Publishes the turn's todo list as it now stands (`TodoUpdated`), for the call `toolCallId`
   * (`todo_write`). The loop's turns have it; a stand-in `CurrentTurn` may leave it out.
   */
  readonly updateTodos?: (toolCallId: string, todos: ReadonlyArray<TodoItem>) => Effect.Effect<void>
  /**
   * The turn's plan mode (`TurnOptions.planMode`), for `exit_plan_mode`: whether it plans now,
   * leaving it (the next model call is offered every tool), and ending the turn with the plan as
   * its answer once the running tool batch is over. The loop's turns have it.
   */
  readonly planMode?: {
    readonly active: () => boolean
    readonly leave: Effect.Effect<void>
    readonly endWith: (plan: string) => Effect.Effect<void>
  }
}

/** The current turn, as seen from inside a tool. */
export class CurrentTurn extends Context.Service<CurrentTurn, CurrentTurnShape>()("effect-agent-loop/CurrentTurn") {}
