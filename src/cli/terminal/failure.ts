/**
 * How the CLI ends badly: one line on stderr and an exit code, never a stack trace unless
 * `--verbose` asked for one.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as CliError from "effect/cli/CliError"
import { clean } from "./safeText.ts"

/** Exit codes of `agent-loop`. */
export const ExitCode = {
  ok: 0,
  /** The turn failed, was blocked or hit `--max-iterations`; or the CLI could not start. */
  failed: 1,
  /** Ctrl-C: the turn was interrupted or aborted (the shell convention for SIGINT). */
  interrupted: 130,
  /** SIGTERM (128 + 15). */
  terminated: 143
} as const

/**
 * A reason to stop with `code` (which `runMain` exits with). `message` is printed as
 * `agent-loop: <message>` unless it is empty (already reported).
 */
export class CliFailure extends Schema.TaggedError<CliFailure>()("CliFailure", { message: Schema.String, code: Schema.Number }) {
  override readonly [Runtime.errorExitCode]: number = this.code
}

/** A failure with the default exit code. */
export const fail = (message: string, code: number = ExitCode.failed) => Effect.fail(new CliFailure({ message, code }))

/** The first line of a message, so that one failure is one line. */
const oneLine = (text: string): string => {
  const line = text.split("\n").find((l) => l.trim() !== "") ?? text
  // messages quote servers, files and models: nothing in them may drive the terminal
  return clean(line).trim()
}

const describe = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error && typeof error.message === "string" && error.message !== ""
    ? `${"_tag" in error && typeof error._tag === "string" ? `${error._tag}: ` : ""}${error.message}`
    : String(error)

/**
 * Turns any failure or defect of `program` into a `CliFailure` whose line has been printed:
 * expected failures as their message, defects as "internal error" (the full cause with `verbose`).
 * CLI usage errors from `effect/cli` pass through (it has printed them already).
 */
export const reportFailures = (verbose: boolean, printError: (line: string) => void) =>
<A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<A, CliFailure | E, R> =>
  Effect.catchCause(program, (cause): Effect.Effect<never, CliFailure | E> => {
    if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
    const error = Cause.squash(cause)
    if (error instanceof CliFailure) {
      if (error.message !== "") printError(`agent-loop: ${oneLine(error.message)}`)
      return Effect.fail(new CliFailure({ message: "", code: error.code }))
    }
    if (CliError.isCliError(error)) return Effect.failCause(cause)
    const defect = Cause.hasDies(cause)
    printError(`agent-loop: ${defect ? "internal error: " : ""}${oneLine(describe(error))}`)
    if (verbose) printError(Cause.pretty(cause))
    else if (defect) printError("agent-loop: run with --verbose for details")
    return Effect.fail(new CliFailure({ message: "", code: ExitCode.failed }))
  })
