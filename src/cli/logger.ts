/**
 * Log lines of the library (warnings such as a skipped file hook) as the CLI's own stderr lines,
 * `agent-loop: warn: …`, instead of the default timestamped format. They go through the `Screen`,
 * so a warning in the middle of streamed text starts on a line of its own. They often quote paths
 * and server messages, so they are cleaned of escape sequences.
 */
import { Cause, Logger } from "effect"
import { clean } from "./safeText.ts"
import type { ScreenShape } from "./screen.ts"

/** A cause in a log line, as its error's name and message (JSON would show `{}`). */
const causeText = (cause: Cause.Cause<unknown>): string => {
  if (Cause.hasInterruptsOnly(cause)) return "(interrupted)"
  const error = Cause.squash(cause)
  if (error instanceof Error) return `${error.name}: ${error.message}`
  if (typeof error === "object" && error !== null && "_tag" in error) {
    return `${String(error._tag)}${"message" in error && error.message ? `: ${String(error.message)}` : ""}`
  }
  return String(error)
}

const text = (message: unknown, cause: Cause.Cause<unknown>): string =>
  [
    ...(Array.isArray(message) ? message : [message]).map((part) =>
      typeof part === "string" ? part : Cause.isCause(part) ? `(cause: ${causeText(part)})` : JSON.stringify(part)
    ),
    ...(cause.reasons.length === 0 ? [] : [`(cause: ${causeText(cause)})`])
  ].join(" ")

/** The CLI's logger on `screen`, replacing the default one. */
export const layer = (screen: ScreenShape) =>
  Logger.layer([
    Logger.make(({ cause, logLevel, message }) => {
      screen.lineSync(`agent-loop: ${logLevel.toLowerCase()}: ${clean(text(message, cause))}`)
    })
  ])
