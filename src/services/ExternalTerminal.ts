/**
 * `ExternalTerminal`: an optional service that runs `exec`'s commands somewhere other than the
 * loop's own processes, for the sessions it chooses: an editor's terminal over ACP
 * (`terminal/*`), where the user watches them. Such commands run outside the loop's sandbox, so a
 * host provides it only where the user opted in.
 *
 * `exec` looks for it with `Effect.serviceOption`: without it, or when it answers `None` for a
 * session, the command runs as always, in the `Sandbox` of the context. Approval happens before
 * either, under the same rules.
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { ToolError } from "../domain/errors.ts"

/** A command `exec` was asked to run (in the foreground). */
export interface ExternalCommand {
  readonly sessionKey: string
  readonly toolCallId: string
  /** The shell command, for `sh -c`. */
  readonly command: string
  /** The directory it runs in (the workspace root). */
  readonly cwd: string
  /** How long it may run before it is killed. */
  readonly timeout: Duration.Duration
  /** Most bytes of output kept (the first ones are dropped past it). */
  readonly maxOutputBytes: number
}

/** How an external command ended. */
export interface ExternalExit {
  /** Its exit code; `null` when a signal ended it. */
  readonly exitCode: number | null
  readonly signal: string | null
  /** Its output (stdout and stderr together, as the terminal shows them). */
  readonly output: string
  /** Whether output was dropped past `maxOutputBytes`. */
  readonly truncated: boolean
  /** Whether it was killed at its timeout. */
  readonly timedOut: boolean
}

/** Runs a command outside the loop for the sessions that want it. */
export interface ExternalTerminalShape {
  /** Runs `command` there and waits for it; `None` when its session's commands run in the loop (nothing was run). */
  readonly run: (command: ExternalCommand) => Effect.Effect<Option.Option<ExternalExit>, ToolError>
}

/** Where `exec`'s commands run instead of the loop's sandbox, for some sessions; optional. */
export class ExternalTerminal extends Context.Service<ExternalTerminal, ExternalTerminalShape>()("effect-agent-loop/ExternalTerminal") {}
