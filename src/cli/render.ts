/**
 * The terminal view of the event stream: model text as it streams, one line per tool call start
 * and end (name, short arguments, duration), notes for retries, steering and interrupts, and a
 * closing line per turn with its status, tokens, cost when known, and time.
 */
import { Effect } from "effect"
import type { AgentEvent } from "../domain/Event.ts"
import { DOUBLE_PRESS_MS } from "./ctrlC.ts"
import * as Format from "./format.ts"
import type { ScreenShape } from "./screen.ts"

/** What the renderer shows beyond the essentials. */
export interface RenderOptions {
  /** Reasoning, tool results and every `Error` event. */
  readonly verbose: boolean
}

/** A function drawing each event; keeps the little state streaming needs. */
export const makeRenderer = (screen: ScreenShape, options: RenderOptions) => {
  const { err } = screen
  let reasoning = ""
  const indent = (depth: number) => "  ".repeat(depth)

  const flushReasoning = Effect.suspend(() => {
    const text = reasoning.trim()
    reasoning = ""
    return text === "" ? Effect.void : screen.line(err.dim(`(thinking) ${text}`))
  })

  return (event: AgentEvent): Effect.Effect<void> => {
    const pad = indent(event.depth)
    switch (event._tag) {
      case "LLMDelta":
        if (event.depth > 0) return Effect.void
        if (event.kind === "reasoning") {
          if (options.verbose) reasoning += event.text
          return Effect.void
        }
        return event.kind === "text" ? Effect.andThen(flushReasoning, screen.text(event.text)) : Effect.void
      case "LLMResponse":
        return flushReasoning
      case "ToolExecStart":
        return screen.line(`${pad}${err.cyan("⚙")} ${err.bold(event.toolName)} ${err.dim(Format.args(event.arguments))}`)
      case "ToolExecEnd": {
        const mark = event.isError ? err.red("✗") : err.green("✓")
        const detail = event.isError || options.verbose ? ` ${err.dim(Format.truncate(event.result, options.verbose ? 400 : 120))}` : ""
        return screen.line(`${pad}  ${mark} ${event.toolName} ${err.dim(Format.duration(event.durationMs))}${detail}`)
      }
      case "ToolExecSkipped":
        return screen.line(`${pad}  ${err.dim(`⊘ ${event.toolName} skipped: ${event.reason}`)}`)
      case "LLMRetry":
        return screen.line(
          `${pad}${err.yellow(`↻ retry ${event.attempt} in ${Format.duration(event.delayMs)}`)} ${err.dim(Format.truncate(event.reason, 160))}`
        )
      case "ContextCompress":
        return screen.line(err.dim(`${pad}(context ${event.reason}: dropped ${Format.plural(event.dropped, "message")}, ${event.remaining} left)`))
      case "SessionSummarize":
        return screen.line(err.dim(`${pad}(summarised ${Format.plural(event.summarized, "message")} of the session)`))
      case "SteeringInjected":
        return screen.line(err.dim(`${pad}(steering: ${Format.plural(event.count, "message")} sent to the model)`))
      case "FollowUpQueued":
        return screen.line(err.dim(`${pad}(follow-up queued: ${Format.truncate(event.content, 60)})`))
      case "InterruptReceived":
        return event.kind === "graceful"
          ? screen.line(err.yellow(`${pad}⏸ interrupting: the model will sum up (Ctrl-C again within ${DOUBLE_PRESS_MS / 1000} s to abort)`))
          : event.kind === "hard"
          ? screen.line(err.yellow(`${pad}⏹ aborting`))
          : Effect.void
      case "SubTurnSpawn":
        return screen.line(err.dim(`${pad}↳ sub-turn ${event.childTurnId} (${event.model}${event.async ? ", async" : ""})`))
      case "SubTurnEnd":
        return screen.line(err.dim(`${pad}↳ sub-turn ${event.childTurnId} ${event.status}`))
      case "SubTurnOrphan":
        return options.verbose ? screen.line(err.dim(`${pad}↳ sub-turn ${event.childTurnId} result dropped (${event.reason})`)) : Effect.void
      case "Error":
        return event.hook !== undefined || options.verbose
          ? screen.line(err.yellow(`${pad}! ${event.hook !== undefined ? `hook ${event.hook}, ` : ""}${event.stage}: ${Format.truncate(event.message, 200)}`))
          : Effect.void
      case "TurnEnd": {
        if (event.depth > 0) return Effect.void
        const status = event.status === "completed"
          ? err.green(event.status)
          : event.status === "interrupted"
          ? err.yellow(event.status)
          : err.red(event.status)
        const stats = [Format.plural(event.iterations, "iteration"), Format.usage(event.usage), Format.duration(event.durationMs)]
        return Effect.andThen(flushReasoning, screen.line(`${err.dim("──")} ${status} ${err.dim(`· ${stats.join(" · ")}`)}`))
      }
      case "TurnStart":
      case "LLMRequest":
      case "SubTurnResultDelivered":
        return Effect.void
    }
  }
}
