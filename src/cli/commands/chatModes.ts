/**
 * The chat's permission mode, status line, notifications and Tab completion, around its prompt
 * (`chat.ts` uses it):
 *
 * - the permission mode, Claude Code's: `default`, `acceptEdits`, `plan` (and `bypassPermissions`
 *   when the chat started in it), cycled by Shift-Tab in that order, set by `/plan` and by an
 *   accepted plan; in plan mode turns plan first (`TurnOptions.planMode`), and the plan's question
 *   is asked here (`planReview.ts`); `bypassPermissions` approves what would ask, the others ask;
 * - the status line under the prompt (`keys.ts` keeps it there while the line is edited): model,
 *   mode, context used as a share of the model's window (the last model call's tokens), and the
 *   session's cost in this chat; only where the cursor can move (a terminal, not `TERM=dumb`);
 * - notifications (`notify.ts`) when a turn ends or a question waits while the terminal is not focused;
 * - what Tab completes (`completion.ts`).
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { TurnResult } from "../../domain/Turn.ts"
import type * as Usage from "../../domain/Usage.ts"
import { AgentLoop } from "../../services/AgentLoop.ts"
import { LoopConfig } from "../../services/LoopConfig.ts"
import type { ApprovalPolicy, PermissionMode } from "../config/approvalPolicy.ts"
import * as Completion from "../input/completion.ts"
import { drawBelow, type KeyOptions } from "../input/keys.ts"
import * as PlanReview from "../output/planReview.ts"
import * as PlanSlot from "../runtime/planSlot.ts"
import type * as Settings from "../settings/settings.ts"
import * as Notify from "../terminal/notify.ts"
import { clean } from "../terminal/safeText.ts"
import type { ScreenShape } from "../terminal/screen.ts"
import * as Slash from "./slashCommands.ts"

/** How each mode is named on the status line. */
const LABELS: Record<PermissionMode, string> = {
  default: "default mode",
  acceptEdits: "accept edits",
  plan: "plan mode",
  bypassPermissions: "bypass permissions",
  dontAsk: "don't ask"
}

/** The modes Shift-Tab goes through, from the one the chat started in. */
export const cycleOf = (started: PermissionMode): ReadonlyArray<PermissionMode> =>
  started === "bypassPermissions" || started === "dontAsk" ? ["default", "acceptEdits", "plan", started] : ["default", "acceptEdits", "plan"]

/** The mode after `mode` in `cycle`. */
export const nextMode = (cycle: ReadonlyArray<PermissionMode>, mode: PermissionMode): PermissionMode =>
  cycle[(cycle.indexOf(mode) + 1) % cycle.length] ?? "default"

/** The approval policy of a mode, from the one the chat was started with. */
export const policyOf = (mode: PermissionMode, started: ApprovalPolicy): ApprovalPolicy =>
  mode === "bypassPermissions" ? "approve" : mode === "dontAsk" ? "deny" : started === "approve" || started === "deny" ? "ask" : started

/** A share as a percentage: one decimal under 10%, whole above, at most 100%. */
const percent = (share: number): string => {
  const value = Math.min(100, share * 100)
  return `${value < 10 ? value.toFixed(1).replace(/\.0$/, "") : Math.round(value)}%`
}

/** The status line's text (unstyled parts, styled by the caller). */
export const statusText = (parts: {
  readonly model: string
  readonly mode: PermissionMode
  readonly contextTokens: number | undefined
  readonly contextWindow: number | undefined
  readonly costUsd: number | undefined
}): ReadonlyArray<string> => {
  const context = parts.contextTokens === undefined
    ? "context 0%"
    : parts.contextWindow === undefined || parts.contextWindow <= 0
    ? `context ${parts.contextTokens} tokens`
    : `context ${percent(parts.contextTokens / parts.contextWindow)}`
  return [clean(parts.model), LABELS[parts.mode], context, parts.costUsd === undefined ? "cost unknown" : `$${parts.costUsd.toFixed(4)}`]
}

/** What the chat keeps of these. */
export interface ChatView {
  readonly mode: () => PermissionMode
  /** Whether the next turn plans first. */
  readonly planning: () => boolean
  /** Sets the mode (`/plan`, an accepted plan), saying so. */
  readonly setMode: (mode: PermissionMode) => Effect.Effect<void>
  /** The approval policy of the session now (`Approval.register`'s `policyFor`). */
  readonly policyFor: (sessionKey: string) => ApprovalPolicy | undefined
  /** The status line, drawn under the prompt just shown (the cursor stays after the prompt). */
  readonly statusLine: Effect.Effect<void>
  /** Erases the status line under the open prompt, before lines are written there (Ctrl-O's). */
  readonly clearStatus: Effect.Effect<void>
  /** A turn ended: the status line comes again, and the user is notified when away. */
  readonly turnEnded: (result: TurnResult) => Effect.Effect<void>
  /** What the line editor does with Tab, Shift-Tab, Ctrl-R and focus reports. */
  readonly keys: KeyOptions
  /** Starts what follows the loop (the context used) and asks for focus reports, for the scope. */
  readonly start: (ask: Effect.Effect<string | undefined> | undefined) => Effect.Effect<void, never, AgentLoop | LoopConfig | Scope.Scope>
}

/** The chat's view, on `settings`; `model`, `spent` and `sessionKey` are read from the chat's state when drawn. */
export const make = (
  settings: Settings.CliSettings,
  screen: ScreenShape,
  state: { readonly model: () => string; readonly spent: () => Usage.Usage; readonly sessionKey: () => string }
): ChatView => {
  const cycle = cycleOf(settings.permissionMode)
  let mode: PermissionMode = settings.permissionMode
  let contextTokens: number | undefined
  /** The loop's context window (the settings' or the loop's default), read at `start`. */
  let contextWindow = settings.contextWindow
  const notifier = Notify.make(process.stderr, process.env)
  const dim = screen.err.dim

  /** The status line, styled, on one row of the terminal: the hint goes first, then the end is cut. */
  const styledStatus = () => {
    const [model, label, context, cost] = statusText({
      model: state.model(),
      mode,
      contextTokens,
      contextWindow,
      costUsd: state.spent().costUsd
    })
    const marker = mode === "plan" ? "⏸ " : mode === "default" ? "" : "⏵⏵ "
    const columns = Math.max(20, (process.stderr.columns ?? screen.size.columns()) - 1)
    const hint = " · shift+tab: mode"
    const plain = `${model} · ${marker}${label} · ${context} · ${cost}`
    const tail = plain.length + hint.length <= columns ? ` · ${context} · ${cost}${hint}` : ` · ${context} · ${cost}`
    const modeText = `${marker}${label}`
    const shown = mode === "plan" ? screen.err.cyan(modeText) : mode === "default" ? modeText : screen.err.yellow(modeText)
    // too long even so (a long model name): the model's name is cut
    const room = columns - (modeText.length + tail.length + 3)
    const name = model!.length <= room ? model! : `${model!.slice(0, Math.max(1, room - 1))}…`
    return `${dim(`${name} · `)}${shown}${dim(tail)}`
  }

  /** Whether the status line can be drawn under the prompt (cursor movement: a terminal that is not dumb). */
  const redrawable = screen.interactive && process.stderr.isTTY === true && process.env["TERM"] !== "dumb"

  /** A changed mode, shown: at an open prompt the line editor draws the status line again (`keys.ts`), else a line says it. */
  const modeChanged = () => {
    const open = screen.openPrompt()
    if (open !== undefined && redrawable) return
    const said = screen.line(dim(`(${LABELS[mode]}${mode === "plan" ? ": the next turns plan first" : ""})`))
    Effect.runSync(open === undefined ? said : Effect.andThen(Effect.andThen(Effect.sync(() => process.stderr.write("\r\u001b[K")), said), screen.prompt(open)))
  }

  const view: ChatView = {
    mode: () => mode,
    planning: () => mode === "plan",
    setMode: (next) =>
      Effect.suspend(() => {
        mode = next
        return screen.line(dim(`(${LABELS[mode]}${mode === "plan" ? ": the model only reads until you accept its plan; Shift-Tab or an accepted plan leaves it" : ""})`))
      }),
    policyFor: () => policyOf(mode, settings.approval),
    statusLine: Effect.sync(() => {
      const open = screen.openPrompt()
      if (!redrawable || open === undefined) return
      // a row of its own under the prompt (the screen scrolls when the prompt is on its last row), then back after the prompt
      const width = open.replaceAll(/\u001b\[[0-9;]*m/g, "").length
      process.stderr.write(`\n\r\u001b[2K${styledStatus()}\u001b[1A\r${width > 0 ? `\u001b[${width}C` : ""}`)
    }),
    clearStatus: Effect.sync(() => {
      if (redrawable && screen.openPrompt() !== undefined) drawBelow(process.stderr, "")
    }),
    turnEnded: (result) =>
      Effect.sync(() => {
        notifier.notify(`agent-loop: the turn ${result.status === "completed" ? "is done" : `ended ${result.status}`}`)
      }),
    keys: {
      complete: Completion.make({
        commands: () => [...Slash.builtins.map((builtin) => builtin.name), "quit", ...settings.commands.map((command) => command.name)],
        agents: () => settings.agents.map((agent) => agent.name),
        workspace: settings.workspace
      }),
      onShiftTab: () => {
        mode = nextMode(cycle, mode)
        modeChanged()
      },
      onFocus: (focused) => notifier.focused(focused),
      below: () => redrawable && screen.openPrompt() !== undefined ? styledStatus() : undefined
    },
    start: (ask) =>
      Effect.gen(function*() {
        const loop = yield* AgentLoop
        contextWindow = (yield* LoopConfig).contextWindow
        if (screen.interactive && process.stderr.isTTY === true) {
          yield* Effect.acquireRelease(
            Effect.sync(() => process.stderr.write(Notify.FOCUS_ON)),
            () => Effect.sync(() => process.stderr.write(Notify.FOCUS_OFF))
          )
        }
        // the context the last model call of the chat's session used
        const subscription = yield* loop.subscribe()
        yield* subscription.stream.pipe(
          Stream.runForEach((event) =>
            Effect.sync(() => {
              if (event._tag === "LLMResponse" && event.depth === 0 && event.sessionKey === state.sessionKey()) {
                contextTokens = event.usage.inputTokens + event.usage.outputTokens
              }
            })
          ),
          Effect.forkScoped
        )
        // a question waiting (Claude Code's Notification) notifies when the terminal is not focused
        settings.hookBridge.onNotify((_context, message) => Effect.sync(() => notifier.notify(message)))
        if (ask === undefined) return
        PlanSlot.forChat.set(PlanReview.atTerminal(screen, Effect.andThen(Effect.sync(() => notifier.notify("agent-loop: a plan waits for you")), ask), (accepted) =>
          Effect.sync(() => {
            mode = accepted
          })))
      })
  }
  return view
}

