/**
 * Log lines of the library (warnings such as a skipped file hook) as the CLI's own stderr lines,
 * `agent-loop: warn: …`, instead of the default format. They go through the `Screen`, so a warning
 * in the middle of streamed text starts on a line of its own. They often quote paths and server
 * messages, so they are cleaned of escape sequences. A log with a cause says what it was, in one
 * line (the error's tag and message, and the ones beneath it).
 *
 * A long-running process (`serve`) starts each line with its ISO time, as a log collector wants.
 */
import * as Cause from "effect/Cause"
import * as Logger from "effect/Logger"
import { clean } from "../terminal/safeText.ts"
import type { ScreenShape } from "../terminal/screen.ts"

const text = (message: unknown): string =>
  (Array.isArray(message) ? message : [message]).map((part) => typeof part === "string" ? part : JSON.stringify(part)).join(" ")

/** An error as `Tag: message`, then what caused it, a few levels deep. */
const describe = (error: unknown, depth = 0): string => {
  if (typeof error !== "object" || error === null) return String(error)
  const record = error as { readonly _tag?: unknown; readonly name?: unknown; readonly message?: unknown; readonly cause?: unknown }
  const name = typeof record._tag === "string" ? record._tag : typeof record.name === "string" ? record.name : "Error"
  const message = typeof record.message === "string" && record.message !== "" ? `: ${record.message}` : ""
  const beneath = depth < 3 && record.cause !== undefined && record.cause !== error ? ` <- ${describe(record.cause, depth + 1)}` : ""
  return `${name}${message}${beneath}`
}

/** What a log's cause was, in one line (its errors as names and messages: JSON would show `{}`); empty for none. */
export const causeText = (cause: Cause.Cause<unknown>): string =>
  cause.reasons.length > 0 && Cause.hasInterruptsOnly(cause)
    ? "interrupted"
    : cause.reasons
      .flatMap((reason) => Cause.isFailReason(reason) ? [describe(reason.error)] : Cause.isDieReason(reason) ? [describe(reason.defect)] : [])
      .join("; ")

/** The CLI's logger on `screen`, replacing the default one; with `timestamps`, each line starts with its time. */
export const layer = (screen: ScreenShape, options: { readonly timestamps?: boolean } = {}) =>
  Logger.layer([
    Logger.make(({ cause, date, logLevel, message }) => {
      const why = causeText(cause)
      const line = `agent-loop: ${logLevel.toLowerCase()}: ${clean(text(message))}${why === "" ? "" : ` (cause: ${clean(why)})`}`
      screen.lineSync(options.timestamps === true ? `${date.toISOString()} ${line}` : line)
    })
  ])
