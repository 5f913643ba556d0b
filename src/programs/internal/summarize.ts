/**
 * Session summaries (DESIGN §8): after a turn, when a session's estimated size passes
 * `summarizeThreshold` of the context window, a `summary` compaction record is appended: the view
 * then starts with one summary message written by the provider instead of the older part, which
 * stays in the log. It runs after the turn's reply is out, under the session's lock so no turn
 * starts from a view the summary is about to change, and a failure appends nothing. Because it holds
 * that lock, the provider call is bounded by `SUMMARY_TIMEOUT`: a summary that hangs must not stall
 * the session's next turn for ever (nobody can interrupt it: the session has no active turn).
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { readCause, show, tagged } from "../../domain/causeMessage.ts"
import type { AgentLoopConfig } from "../../domain/Config.ts"
import * as Message from "../../domain/Message.ts"
import { SUMMARY_TIMEOUT } from "../../domain/SessionLog.ts"
import { runesOf, splitForSummary } from "./compaction.ts"
import { tooLarge } from "./providerCall.ts"
import type { Engine } from "./engine.ts"
import * as RunningTurn from "./runningTurn.ts"

/** What the summariser is asked. */
export const SUMMARY_INSTRUCTION =
  "Summarise the conversation below for your own later use: the user's goals, decisions made, facts learned, " +
  "files and tools involved, and open questions. Be concise and complete."

/** The first line of the summary message a `summary` record stands for in the view. */
export { SUMMARY_PREFIX } from "../../domain/SessionLog.ts"

/** How long the summary's provider call may take before it is given up (history kept). */
export { SUMMARY_TIMEOUT }

const transcript = (messages: ReadonlyArray<Message.Message>) =>
  messages.map((m) =>
    m.role === "assistant" && m.toolCalls?.length
      ? `assistant: ${m.content}\n${m.toolCalls.map((c) => `  called ${c.name}(${c.arguments})`).join("\n")}`
      : m.role === "tool"
      ? `tool ${m.toolName}: ${Message.textOf(m.content)}`
      : `${m.role}: ${Message.textOf(m.content)}`
  ).join("\n\n")

/** Whether a history is past the threshold (size estimated at four characters per token). */
export const needsSummary = (config: AgentLoopConfig, history: ReadonlyArray<Message.Message>) =>
  config.summarizeThreshold > 0 && runesOf(history) / 4 > config.summarizeThreshold * config.contextWindow

/** What a summary did: replaced the older messages, found nothing old enough to replace, or failed (history kept). */
export type SummaryOutcome =
  | { readonly _tag: "Summarized"; readonly summarized: number; readonly remaining: number }
  | { readonly _tag: "NotNeeded"; readonly remaining: number }
  | { readonly _tag: "Failed"; readonly message: string }

/** How a summary is asked for: after a turn past the threshold, or now (`AgentLoop.compact`). */
export interface SummaryOptions {
  /** Summarise even under `summarizeThreshold`. */
  readonly force: boolean
  /** The newest messages kept verbatim. */
  readonly keep: number
}

const failed = (message: string): SummaryOutcome => ({ _tag: "Failed", message })

/**
 * Summarises the session's older messages if it is past the threshold (or `force`); events carry
 * `turn`'s place (the turn just ended). The summary record is appended through the session's
 * `commit`. A failure appends nothing and is published as an `Error` event as well as returned.
 */
export const summarize = (
  engine: Engine,
  session: RunningTurn.SessionPort,
  turn: RunningTurn.RunningTurn,
  options: SummaryOptions = { force: false, keep: engine.config.summarizeKeepMessages }
): Effect.Effect<SummaryOutcome> =>
  Effect.gen(function*() {
    const { config, hooks, provider } = engine
    const history = yield* session.load
    if (!options.force && !needsSummary(config, history)) return { _tag: "NotNeeded", remaining: history.length } as const
    const { newer, older } = splitForSummary(history, options.keep)
    // the view may already start with an earlier summary: summarising it alone gains nothing
    if (older.length === 0 || (older.length === 1 && older[0]!.role === "system")) return { _tag: "NotNeeded", remaining: history.length } as const
    const where = RunningTurn.hookContext(turn)
    const verdict = yield* hooks.run("beforeCompact", { context: where, reason: "summary", messages: history })
    if (verdict._tag !== "Continue") return failed("a beforeCompact hook stopped the summary; history kept")
    // the summary is a model response like any other: bounded by `maxResponseBytes`
    const pieces: Array<string> = []
    let bytes = 0
    const collected = yield* Stream.runForEachArray(provider.stream({
      model: turn.model,
      messages: [Message.system(SUMMARY_INSTRUCTION), Message.user(transcript(older))],
      tools: []
    }), (chunks) => {
      for (const chunk of chunks) {
        if (chunk._tag !== "TextDelta") continue
        bytes += Buffer.byteLength(chunk.text, "utf8")
        if (bytes > config.maxResponseBytes) return Effect.fail(tooLarge(config.maxResponseBytes))
        pieces.push(chunk.text)
      }
      return Effect.void
    }).pipe(Effect.timeoutOption(SUMMARY_TIMEOUT))
    if (Option.isNone(collected)) return yield* report(turn, `The summary took longer than ${Duration.toMillis(SUMMARY_TIMEOUT)}ms; history kept`)
    const text = pieces.join("")
    if (text.trim() === "") return yield* report(turn, "The summary came back empty; history kept")
    yield* session.commit([{ role: "compaction", reason: "summary", cut: older.length, summary: engine.secrets.scrub(text) }])
    const remaining = 1 + newer.length
    yield* RunningTurn.emit(turn, "SessionSummarize", { summarized: older.length, remaining })
    yield* hooks.run("afterCompact", { context: where, reason: "summary", dropped: older.length, remaining })
    return { _tag: "Summarized", summarized: older.length, remaining } as const
  }).pipe(
    Effect.catchCause((cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
      const reading = readCause(cause)
      const message = reading._tag === "Error"
        ? tagged(reading.error)
        : `The summary failed: ${show(reading._tag === "Defect" ? reading.defect : Cause.squash(cause))}`
      return report(turn, `${message}; history kept`)
    }),
    Effect.withSpan("agent.summarize", { attributes: { "agent.session.key": turn.sessionKey } })
  )

/** A failed summary: an `Error` event, and the outcome saying so. */
const report = (turn: RunningTurn.RunningTurn, message: string) => Effect.as(RunningTurn.emit(turn, "Error", { stage: "summarize", message }), failed(message))
