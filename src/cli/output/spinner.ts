/**
 * The waiting indicator: on a terminal, a spinner with the elapsed time on stderr's status line
 * while the model has not started to answer and while tools run, so that a long wait never looks
 * like a hang. It follows the events; a fiber redraws it on the Effect Clock. Nothing is drawn
 * unless the screen is `live` (stderr a terminal, styling on).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { AgentEvent } from "../../domain/Event.ts"
import * as Format from "../terminal/format.ts"
import type { ScreenShape } from "../terminal/screen.ts"

/** How often the indicator is redrawn. */
export const TICK_MS = 100

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

/** What is being waited for. */
type Waiting =
  | { readonly _tag: "Idle" }
  | { readonly _tag: "Model"; readonly model: string; readonly since: number; readonly thinking: boolean }

/** The indicator's state and its reaction to events; `draw` renders it for a moment. */
export const makeIndicator = () => {
  let waiting: Waiting = { _tag: "Idle" }
  const tools = new Map<string, { readonly name: string; readonly since: number }>()

  const handle = (event: AgentEvent): void => {
    switch (event._tag) {
      case "LLMRequest":
        if (event.depth === 0) waiting = { _tag: "Model", model: event.model, since: event.at, thinking: false }
        return
      case "LLMDelta":
        if (event.depth === 0 && waiting._tag === "Model") {
          // reasoning is shown (folded) only once the answer starts: the wait goes on, as thinking
          waiting = event.kind === "reasoning" ? { ...waiting, thinking: true } : { _tag: "Idle" }
        }
        return
      case "LLMRetry":
        if (event.depth === 0 && waiting._tag === "Model") waiting = { ...waiting, thinking: false }
        return
      case "LLMResponse":
        if (event.depth === 0) waiting = { _tag: "Idle" }
        return
      case "ToolExecStart":
        tools.set(event.toolCallId, { name: event.toolName, since: event.at })
        return
      case "ToolExecEnd":
      case "ToolExecSkipped":
        tools.delete(event.toolCallId)
        return
      case "TurnEnd":
        if (event.depth === 0) {
          waiting = { _tag: "Idle" }
          tools.clear()
        }
        return
      default:
        return
    }
  }

  /** The status line at `now`, or `undefined` when nothing is awaited. */
  const draw = (now: number, frame: number): string | undefined => {
    const spin = FRAMES[frame % FRAMES.length]
    if (tools.size > 0) {
      const since = Math.min(...[...tools.values()].map((tool) => tool.since))
      const what = tools.size === 1 ? `running ${Format.truncate([...tools.values()][0]!.name, 40)}` : `running ${tools.size} tools`
      return `${spin} ${what} · ${Format.duration(Math.max(0, now - since))}`
    }
    if (waiting._tag === "Model") {
      const what = waiting.thinking ? `${Format.truncate(waiting.model, 40)} is thinking` : `waiting for ${Format.truncate(waiting.model, 40)}`
      return `${spin} ${what} · ${Format.duration(Math.max(0, now - waiting.since))}`
    }
    return undefined
  }

  return { handle, draw }
}

/**
 * Starts the indicator on `screen` for the life of the scope; returns the event handler that feeds
 * it. On a screen that is not live, the handler does nothing and no fiber runs.
 */
export const start = (screen: ScreenShape) =>
  Effect.gen(function*() {
    if (!screen.live) return (_event: AgentEvent): Effect.Effect<void> => Effect.void
    const indicator = makeIndicator()
    let frame = 0
    let shown = false
    const redraw = Effect.gen(function*() {
      const line = indicator.draw(yield* Clock.currentTimeMillis, frame++)
      if (line !== undefined) yield* screen.status(screen.err.dim(line))
      else if (shown) yield* screen.status(undefined)
      shown = line !== undefined
    })
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(redraw, Effect.sleep(TICK_MS))))
    yield* Effect.addFinalizer(() => screen.status(undefined))
    return (event: AgentEvent): Effect.Effect<void> =>
      Effect.suspend(() => {
        indicator.handle(event)
        return redraw
      })
  }) satisfies Effect.Effect<unknown, never, Scope.Scope>
