/**
 * `Hooks`: the registry of hooks and the runner of each hook point (DESIGN §6).
 *
 * The loop runs a point and gets the combined outcome of every handler of it: changes chained in
 * priority order (each handler sees the changes before it), the first block/deny/abort winning,
 * patches accumulated. `run(point, input)` runs every point but `approveTool`, whose own method
 * fails closed. A point no hook handles costs nothing: `handles(point)` is false and `run` returns
 * at once.
 *
 * Nothing here fails: a handler that fails, dies or times out counts as "continue" (approval:
 * "deny") and is reported as an `Error` event. Every text a hook puts into the turn (reasons,
 * feedback, added messages, patched results, failure messages) is scrubbed of known secrets and
 * cut to `Hook.TEXT_LIMIT`; system prompts and response contents it substitutes are scrubbed.
 * `onEvent` observers are not called by the loop: each one is a bus subscriber of its own, so a
 * stalled observer loses its own events and never slows a turn.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import type { Approve, Deny, Hook, InputOf, Point, RegisterOptions, StopOf } from "../domain/Hook.ts"

/** A stopping decision with the name of the hook that made it, for the `Error` event. */
export type Named<D> = D & { readonly hook: string }

/** A registered hook, as `hooks list` shows it. */
export interface HookInfo {
  readonly name: string
  readonly priority: number
  readonly source: string
  readonly handlers: ReadonlyArray<Point>
}

/** The points `run` runs: all but `onEvent` (bus observers) and `approveTool` (fail-closed, see `approveTool`). */
export type RunPoint = Exclude<Point, "onEvent" | "approveTool">

/**
 * The combined outcome of a point: the input as the handlers left it, with the names of the hooks
 * whose changes (`Modify`, `Patch`) were applied, in order; or the decision that ended it.
 */
export type HookOutcome<K extends RunPoint> =
  | { readonly _tag: "Continue"; readonly input: InputOf<K>; readonly changedBy?: ReadonlyArray<string> }
  | Named<StopOf<K>>

/** The hook registry and runner. */
export interface HooksShape {
  /** Registers a hook for the life of the scope. */
  readonly register: (hook: Hook, options?: RegisterOptions) => Effect.Effect<void, never, Scope.Scope>
  /** The registered hooks, in run order. */
  readonly list: Effect.Effect<ReadonlyArray<HookInfo>>
  /**
   * Whether some registered hook handles `point` now. When false, running the point would
   * return "continue" with its input unchanged, so a caller on a hot path may skip it (the loop
   * does, at every point of every iteration: DESIGN §11 measures it). `true` is always safe.
   */
  readonly handles: (point: Point) => boolean
  /** Runs the handlers of `point` on `input`, in priority order, and combines their decisions. */
  readonly run: <K extends RunPoint>(point: K, input: InputOf<K>) => Effect.Effect<HookOutcome<K>>
  /** Only for tools that require approval; no approver means deny unless `autoApprove`; timeout denies. */
  readonly approveTool: (input: InputOf<"approveTool">) => Effect.Effect<Approve | Named<Deny>>
}

/** The hooks service. Layers: `HooksLive` (the registry), `FileHooks` (scripts on disk). */
export class Hooks extends Context.Service<Hooks, HooksShape>()("effect-agent-loop/Hooks") {}
