/**
 * `Screen`: where the CLI writes. The model's text goes to stdout, everything else (tool calls,
 * status lines, prompts, warnings) to stderr, so `agent-loop run "…" > answer.txt` keeps only the
 * answer. Both usually share one terminal, so a line on stderr first ends any partial text line.
 *
 * On a terminal, text is cleaned of escape sequences (`safeText.ts`) and stderr may carry one
 * transient status line (the waiting indicator), erased before anything else is written.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { clean } from "./safeText.ts"
import { type Style, styleFor } from "./style.ts"

/** The CLI's output. */
export interface ScreenShape {
  /** Streamed model text, to stdout, as it arrives (cleaned when stdout is a terminal). */
  readonly text: (chunk: string) => Effect.Effect<void>
  /**
   * Text already made safe and styled by the caller (rendered Markdown, which may redraw the line
   * it is on), to stdout as it is.
   */
  readonly styled: (chunk: string) => Effect.Effect<void>
  /** Whole lines to stdout exactly as given (JSON output), after ending a partial text line. */
  readonly raw: (lines: string) => Effect.Effect<void>
  /** One whole line to stderr (after ending a partial text line). */
  readonly line: (line: string) => Effect.Effect<void>
  /** `line` for callers outside an Effect: the logger, and the failure line at exit. */
  readonly lineSync: (line: string) => void
  /** A prompt to stderr, left open for the answer. */
  readonly prompt: (text: string) => Effect.Effect<void>
  /** The prompt that waits for its answer on the current line, if any (line editing redraws it). */
  readonly openPrompt: () => string | undefined
  /**
   * Shows `text` as the transient status line on stderr, replacing the previous one, or erases it
   * (`undefined`). Does nothing unless `live`, nor while stdout's terminal line holds partial text,
   * nor while a prompt waits for its answer (until the next line or text is written).
   */
  readonly status: (text: string | undefined) => Effect.Effect<void>
  /** Styles for stdout. */
  readonly out: Style
  /** Styles for stderr. */
  readonly err: Style
  /** Whether stdin is a terminal someone can answer prompts on. */
  readonly interactive: boolean
  /** Whether stdout is a terminal: text is then shown as it streams, else one whole response at a time. */
  readonly streaming: boolean
  /** Whether stderr is a terminal with styling on (not `NO_COLOR`, not `TERM=dumb`): status lines are shown. */
  readonly live: boolean
  /** Whether answers are rendered as Markdown: stdout is a terminal with styling on (not `NO_COLOR`, not `TERM=dumb`). */
  readonly markdown: boolean
  /** stdout's terminal size (80×24 when it cannot say). */
  readonly size: { readonly columns: () => number; readonly rows: () => number }
}

/** The screen service. */
export class Screen extends Context.Service<Screen, ScreenShape>()("effect-agent-loop/cli/Screen") {}

/** Minimal writable streams, so that the screen can be pointed anywhere. */
export interface Streams {
  readonly stdout: { write: (text: string) => unknown; readonly isTTY?: boolean; readonly columns?: number; readonly rows?: number }
  readonly stderr: { write: (text: string) => unknown; readonly isTTY?: boolean }
  readonly stdinIsTTY: boolean
  readonly env: NodeJS.ProcessEnv
}

/** Erase the current terminal line: carriage return, then clear to its end. */
const ERASE_LINE = "\r\u001b[K"

/** A screen over the given streams. */
export const make = (streams: Streams): ScreenShape => {
  const streaming = streams.stdout.isTTY === true
  const err = styleFor(streams.stderr.isTTY === true, streams.env)
  const live = streams.stderr.isTTY === true && err.enabled && streams.env["TERM"] !== "dumb"
  let atLineStart = true
  let statusShown = false
  /** A prompt waits for its answer on the current line: drawing a status line would erase it. */
  let promptOpen = false
  let promptText = ""
  const eraseStatus = () => {
    if (statusShown) streams.stderr.write(ERASE_LINE)
    statusShown = false
  }
  const endPartialLine = () => {
    eraseStatus()
    promptOpen = false
    if (!atLineStart) streams.stdout.write("\n")
    atLineStart = true
  }
  const lineSync = (line: string) => {
    endPartialLine()
    streams.stderr.write(`${line}\n`)
  }
  const out = styleFor(streaming, streams.env)
  const write = (shown: string) => {
    if (shown === "") return
    eraseStatus()
    promptOpen = false
    streams.stdout.write(shown)
    atLineStart = shown.endsWith("\n")
  }
  return {
    styled: (chunk) => Effect.sync(() => write(chunk)),
    text: (chunk) =>
      Effect.sync(() => write(streaming ? clean(chunk) : chunk)),
    raw: (lines) =>
      Effect.sync(() => {
        endPartialLine()
        streams.stdout.write(lines)
      }),
    line: (line) => Effect.sync(() => lineSync(line)),
    lineSync,
    prompt: (text) =>
      Effect.sync(() => {
        endPartialLine()
        streams.stderr.write(text)
        promptOpen = true
        promptText = text
      }),
    openPrompt: () => promptOpen ? promptText : undefined,
    status: (text) =>
      Effect.sync(() => {
        if (!live) return
        if (text === undefined) return eraseStatus()
        // stdout's partial line, or an open prompt, is on the same terminal: drawing would overwrite it
        if (promptOpen || (streaming && !atLineStart)) return
        streams.stderr.write(`${ERASE_LINE}${text}`)
        statusShown = true
      }),
    out,
    err,
    interactive: streams.stdinIsTTY,
    streaming,
    live,
    markdown: streaming && out.enabled && streams.env["TERM"] !== "dumb",
    // read at each use: the terminal may be resized
    size: { columns: () => streams.stdout.columns ?? 80, rows: () => streams.stdout.rows ?? 24 }
  }
}

/** The screen of this process; one per process, since it tracks where the text on stdout ends. */
export const ofProcess = (): ScreenShape =>
  make({ stdout: process.stdout, stderr: process.stderr, stdinIsTTY: process.stdin.isTTY === true, env: process.env })
