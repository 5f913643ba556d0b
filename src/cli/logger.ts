/**
 * Log lines of the library (warnings such as a skipped file hook) as the CLI's own stderr lines,
 * `agent-loop: warn: …`, instead of the default timestamped format.
 */
import { Logger } from "effect"

const text = (message: unknown): string =>
  (Array.isArray(message) ? message : [message]).map((part) => typeof part === "string" ? part : JSON.stringify(part)).join(" ")

/** The CLI's logger, replacing the default one. */
export const layer = Logger.layer([
  Logger.make(({ logLevel, message }) => {
    process.stderr.write(`agent-loop: ${logLevel.toLowerCase()}: ${text(message)}\n`)
  })
])
