/**
 * What `run --output-format json` prints when the turn has ended: one object on one line, the
 * turn's status, answer, session, model, usage, cost and error (and with `--output-schema` the
 * typed answer). `stream-json`'s result line (`streamJson.ts`) is built on it.
 */
import type { TurnResult } from "../../domain/Turn.ts"
import type { Usage } from "../../domain/Usage.ts"
import { tokensKnown } from "../terminal/format.ts"

/** What `--output-format json` prints: one object, on one line, when the turn has ended. */
export interface RunResult {
  readonly type: "result"
  readonly status: TurnResult["status"]
  /** The final answer; empty when there is none. */
  readonly result: string
  readonly sessionKey: string
  readonly model: string
  readonly iterations: number
  readonly durationMs: number
  /** `null` when the provider reported no token counts. */
  readonly usage: Usage | null
  /** `null` when the model has no price, or the tokens are unknown. */
  readonly costUsd: number | null
  /** Why the turn did not complete; `null` when it did. */
  readonly error: string | null
  /** With `--output-schema` only: the typed answer, decoded by the schema; `null` when there is none. */
  readonly output?: unknown
}

/** The `--output-format json` object of a finished turn. */
export const runResult = (result: TurnResult, model: string, durationMs: number, typed = false): RunResult => {
  const known = tokensKnown(result.usage)
  return {
    type: "result",
    status: result.status,
    result: result.finalMessage?.content ?? "",
    sessionKey: result.sessionKey,
    model,
    iterations: result.iterations,
    durationMs,
    usage: known ? result.usage : null,
    costUsd: known ? result.usage.costUsd ?? null : null,
    error: result.error ?? (result.status === "completed" ? null : result.status),
    ...(typed ? { output: result.output ?? null } : {})
  }
}
