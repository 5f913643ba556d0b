/**
 * The terminal view of the event stream: model text, one line per tool call start and end (name,
 * short arguments, duration), notes for retries, steering and interrupts, and a closing line per
 * turn with its status, tokens (or "tokens unknown"), cost when known, and time.
 *
 * Model text goes to stdout as it streams when stdout is a terminal; otherwise (a pipe, a file)
 * each completed response is written whole, so that text a retry discarded never reaches the
 * output. On a terminal, a retry after text was shown says that the text above is discarded.
 * On a terminal with styling on, streamed text is rendered as Markdown (`markdown.ts`).
 */
import * as Effect from "effect/Effect"
import type { AgentEvent, TodoItem } from "../../domain/Event.ts"
import { EXIT_PLAN_MODE } from "../../domain/Tool.ts"
import { DOUBLE_PRESS_MS } from "../terminal/ctrlC.ts"
import * as Format from "../terminal/format.ts"
import { clean } from "../terminal/safeText.ts"
import type { ScreenShape } from "../terminal/screen.ts"
import type { Style } from "../terminal/style.ts"
import { makeMarkdown, type MarkdownStream } from "./markdown.ts"
import { markdownStyle } from "./markdownInline.ts"
import { causeLine, type EndedCall, preview, startDetail, type StartedCall } from "./toolPreview.ts"

/** Where model text goes: streamed, one whole response at a time, or nowhere (JSON output). */
export type TextMode = "stream" | "responses" | "none"

/** What the renderer shows beyond the essentials. */
export interface RenderOptions {
  /** Reasoning, tool results and every `Error` event. */
  readonly verbose: boolean
  /** Default: `stream` when stdout is a terminal, else `responses`. */
  readonly text?: TextMode
  /** Where the last top-level tool call that ended is kept, for showing it whole (`expanded`). */
  readonly lastCall?: LastCall
}

/** The last top-level tool call that ended: how it started, and what it returned. */
export interface LastCall {
  current: { readonly call: StartedCall; readonly end: EndedCall } | undefined
}

/**
 * The last call whole, as chat's Ctrl-O shows it: its line, then its diff unfolded, every line a
 * command printed, or whatever it returned (an error's whole text); nothing before the first call.
 */
export const expanded = (last: LastCall, screen: ScreenShape): ReadonlyArray<string> => {
  const current = last.current
  if (current === undefined) return []
  const { err } = screen
  const head = `${err.cyan("⚙")} ${err.bold(Format.truncate(current.call.toolName, 80))} ${err.dim(Format.args(current.call.arguments))}`
  const body = preview(current.call, current.end, err, "    ", screen.size.columns(), true)
  return [head, ...(body.length === 0 ? [`    ${err.dim("(it returned nothing to show)")}`] : body)]
}

/** The todo list as a checklist: done items dimmed, the one in progress bold (in its active form). */
const todoLines = (todos: ReadonlyArray<TodoItem>, style: Style, pad: string): Array<string> =>
  todos.map((todo) =>
    todo.status === "completed"
      ? `${pad}  ${style.green("☑")} ${style.dim(clean(todo.content))}`
      : todo.status === "in_progress"
      ? `${pad}  ${style.yellow("◐")} ${style.bold(clean(todo.activeForm ?? todo.content))}`
      : `${pad}  ☐ ${clean(todo.content)}`
  )

/** How much of the reasoning is kept without `--verbose`: its start, for its folded line. */
const REASONING_START = 400

/** A function drawing each event; keeps the little state streaming needs. */
export const makeRenderer = (screen: ScreenShape, options: RenderOptions) => {
  const { err } = screen
  const textMode = options.text ?? (screen.streaming ? "stream" : "responses")
  let reasoning = ""
  /** The reasoning's whole length; without `--verbose` only its start is kept in `reasoning`. */
  let reasoningLength = 0
  /** Text of the current provider call already on the screen. */
  let shown = false
  /** Responses of the current turn whose provider reported no usage. */
  let unreported = 0
  const indent = (depth: number) => "  ".repeat(depth)
  const style = markdownStyle(screen.out)
  /** The calls started and not yet ended, for the preview drawn when each ends. */
  const started = new Map<string, StartedCall>()
  /** The answer being rendered as Markdown, while one streams. */
  let markdown: MarkdownStream | undefined
  /** Ends the Markdown answer in progress: its last line drawn before anything else is written. */
  const endMarkdown = Effect.suspend(() => {
    const open = markdown
    markdown = undefined
    return open === undefined ? Effect.void : screen.styled(open.end())
  })

  /**
   * The reasoning that came before the answer's text or a tool call, dimmed: whole with `--verbose`,
   * else folded to one line, its start and its length (only that much of it is kept).
   */
  const flushReasoning = Effect.suspend(() => {
    const text = clean(reasoning.trim())
    const length = reasoningLength
    const kept = reasoning.length
    reasoning = ""
    reasoningLength = 0
    if (text === "") return Effect.void
    if (options.verbose) return screen.line(err.dim(`(thinking) ${text}`))
    const start = Format.truncate(text, Math.max(20, Math.min(100, screen.size.columns() - 50)))
    const folded = start.endsWith("…") || length > kept
    return screen.line(err.dim(`(thinking) ${start}${folded ? ` (${length.toLocaleString("en-US")} characters; --verbose shows it whole)` : ""}`))
  })

  const retryLine = (event: Extract<AgentEvent, { readonly _tag: "LLMRetry" }>, pad: string) => {
    const when = event.delayMs > 0 ? ` in ${Format.duration(event.delayMs)}` : ""
    const discarded = shown ? " (the text above is discarded)" : ""
    shown = false
    return screen.line(`${pad}${err.yellow(`↻ retry ${event.attempt}${when}`)} ${err.dim(`${Format.truncate(event.reason, 160)}${discarded}`)}`)
  }

  const draw = (event: AgentEvent): Effect.Effect<void> => {
    const pad = indent(event.depth)
    switch (event._tag) {
      case "LLMRequest":
        if (event.depth === 0) shown = false
        return Effect.void
      case "LLMDelta":
        if (event.depth > 0) return Effect.void
        if (event.kind === "reasoning") {
          reasoningLength += event.text.length
          if (options.verbose || reasoning.length < REASONING_START) reasoning += event.text
          return Effect.void
        }
        if (event.kind !== "text" || textMode !== "stream") return Effect.void
        shown = shown || event.text !== ""
        if (!screen.markdown) return Effect.andThen(flushReasoning, screen.text(event.text))
        return Effect.andThen(flushReasoning, Effect.suspend(() => screen.styled((markdown ??= makeMarkdown(style, screen.size)).push(event.text))))
      case "LLMResponse": {
        if (event.depth > 0) return Effect.void
        if (!Format.tokensKnown(event.usage)) unreported++
        const whole = textMode === "responses" && event.content !== "" ? screen.text(event.content) : Effect.void
        return Effect.andThen(flushReasoning, whole)
      }
      case "ToolExecStart": {
        if (event.depth === 0 && reasoning !== "") return Effect.andThen(flushReasoning, draw(event))
        const call = { toolName: event.toolName, arguments: event.arguments }
        started.set(event.toolCallId, call)
        // a plan is shown whole by its question (`planReview.ts`), which may already be on the screen
        if (event.toolName === EXIT_PLAN_MODE) return Effect.void
        const shown = Format.args(event.arguments)
        const line = screen.line(`${pad}${err.cyan("⚙")} ${err.bold(Format.truncate(event.toolName, 80))} ${err.dim(shown)}`)
        // arguments cut short above: the command or path whole, on its own line
        const whole = shown.endsWith("…") ? startDetail(call, screen.size.columns() - pad.length - 4) : undefined
        return whole === undefined ? line : Effect.andThen(line, screen.line(`${pad}    ${err.dim(whole)}`))
      }
      case "ToolExecEnd": {
        const call = started.get(event.toolCallId)
        started.delete(event.toolCallId)
        if (call !== undefined && event.depth === 0 && options.lastCall !== undefined) options.lastCall.current = { call, end: event }
        const mark = event.isError ? err.red("✗") : err.green("✓")
        const detail = options.verbose
          ? ` ${err.dim(Format.truncate(event.result, 400))}`
          : event.isError
          ? ` ${err.dim(Format.truncate(causeLine(event.result) ?? "", 160))}`
          : ""
        const line = screen.line(`${pad}  ${mark} ${Format.truncate(event.toolName, 80)} ${err.dim(Format.duration(event.durationMs))}${detail}`)
        // what the call did, to review: a diff, a file's first lines, a command's last lines
        const lines = call === undefined || event.isError || (options.verbose && call.toolName === "exec")
          ? []
          : preview(call, event, err, `${pad}    `, screen.size.columns())
        return lines.length === 0 ? line : Effect.andThen(line, Effect.forEach(lines, screen.line, { discard: true }))
      }
      case "ToolExecSkipped":
        return screen.line(`${pad}  ${err.dim(`⊘ ${Format.truncate(event.toolName, 80)} skipped: ${Format.truncate(event.reason, 400)}`)}`)
      case "LLMRetry":
        return event.depth > 0 ? screen.line(`${pad}${err.yellow(`↻ retry ${event.attempt}`)} ${err.dim(Format.truncate(event.reason, 160))}`) : retryLine(event, pad)
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
      case "Resumed":
        return screen.line(err.yellow(`${pad}↻ resumed after a crash from iteration ${event.fromIteration}${event.runner === undefined ? "" : ` on ${Format.truncate(event.runner, 80)}`}`))
      case "SubTurnSpawn":
        return screen.line(err.dim(`${pad}↳ sub-turn ${event.childTurnId} (${Format.truncate(event.model, 80)}${event.async ? ", async" : ""})`))
      case "SubTurnEnd":
        return screen.line(err.dim(`${pad}↳ sub-turn ${event.childTurnId} ${event.status}`))
      case "SubTurnOrphan":
        return options.verbose ? screen.line(err.dim(`${pad}↳ sub-turn ${event.childTurnId} result dropped (${event.reason})`)) : Effect.void
      case "Error":
        return event.hook !== undefined || options.verbose
          ? screen.line(err.yellow(`${pad}! ${event.hook !== undefined ? `hook ${Format.truncate(event.hook, 80)}, ` : ""}${event.stage}: ${Format.truncate(event.message, 200)}`))
          : Effect.void
      case "TurnEnd": {
        if (event.depth > 0) return Effect.void
        // calls an abort cut before their end leave no preview behind
        started.clear()
        const status = event.status === "completed"
          ? err.green(event.status)
          : event.status === "interrupted"
          ? err.yellow(event.status)
          : err.red(event.status)
        const partly = Format.tokensKnown(event.usage) && unreported > 0 ? ` (${Format.plural(unreported, "response")} without usage)` : ""
        unreported = 0
        const stats = [Format.plural(event.iterations, "iteration"), `${Format.usage(event.usage)}${partly}`, Format.duration(event.durationMs)]
        return Effect.andThen(flushReasoning, screen.line(`${err.dim("──")} ${status} ${err.dim(`· ${stats.join(" · ")}`)}`))
      }
      case "TodoUpdated":
        return Effect.forEach(todoLines(event.todos, err, pad), screen.line, { discard: true })
      case "TurnStart":
      case "SubTurnResultDelivered":
        return Effect.void
    }
  }
  // any other line ends the Markdown line in progress first, so its redraw stays on its own rows
  return (event: AgentEvent): Effect.Effect<void> =>
    Effect.suspend(() =>
      markdown === undefined || (event._tag === "LLMDelta" && event.depth === 0) ? draw(event) : Effect.andThen(endMarkdown, draw(event))
    )
}
