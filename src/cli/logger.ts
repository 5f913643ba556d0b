/**
 * Log lines of the library (warnings such as a skipped file hook) as the CLI's own stderr lines,
 * `agent-loop: warn: …`, instead of the default timestamped format. They go through the `Screen`,
 * so a warning in the middle of streamed text starts on a line of its own. They often quote paths
 * and server messages, so they are cleaned of escape sequences.
 */
import { Logger } from "effect"
import { clean } from "./safeText.ts"
import type { ScreenShape } from "./screen.ts"

const text = (message: unknown): string =>
  (Array.isArray(message) ? message : [message]).map((part) => typeof part === "string" ? part : JSON.stringify(part)).join(" ")

/** The CLI's logger on `screen`, replacing the default one. */
export const layer = (screen: ScreenShape) =>
  Logger.layer([
    Logger.make(({ logLevel, message }) => {
      screen.lineSync(`agent-loop: ${logLevel.toLowerCase()}: ${clean(text(message))}`)
    })
  ])
