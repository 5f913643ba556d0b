/**
 * `Screen`: where the CLI writes. The model's text goes to stdout, everything else (tool calls,
 * status lines, prompts, warnings) to stderr, so `agent-loop run "…" > answer.txt` keeps only the
 * answer. Both usually share one terminal, so a line on stderr first ends any partial text line.
 */
import { Context, Effect } from "effect"
import { type Style, styleFor } from "./style.ts"

/** The CLI's output. */
export interface ScreenShape {
  /** Streamed model text, to stdout, as it arrives. */
  readonly text: (chunk: string) => Effect.Effect<void>
  /** One whole line to stderr (after ending a partial text line). */
  readonly line: (line: string) => Effect.Effect<void>
  /** `line` for callers outside an Effect: the logger, and the failure line at exit. */
  readonly lineSync: (line: string) => void
  /** A prompt to stderr, left open for the answer. */
  readonly prompt: (text: string) => Effect.Effect<void>
  /** Styles for stdout. */
  readonly out: Style
  /** Styles for stderr. */
  readonly err: Style
  /** Whether stdin is a terminal someone can answer prompts on. */
  readonly interactive: boolean
}

/** The screen service. */
export class Screen extends Context.Service<Screen, ScreenShape>()("effect-agent-loop/cli/Screen") {}

/** Minimal writable streams, so that the screen can be pointed anywhere. */
export interface Streams {
  readonly stdout: { write: (text: string) => unknown; readonly isTTY?: boolean }
  readonly stderr: { write: (text: string) => unknown; readonly isTTY?: boolean }
  readonly stdinIsTTY: boolean
  readonly env: NodeJS.ProcessEnv
}

/** A screen over the given streams. */
export const make = (streams: Streams): ScreenShape => {
  let atLineStart = true
  const endPartialLine = () => {
    if (!atLineStart) streams.stdout.write("\n")
    atLineStart = true
  }
  const lineSync = (line: string) => {
    endPartialLine()
    streams.stderr.write(`${line}\n`)
  }
  return {
    text: (chunk) =>
      Effect.sync(() => {
        if (chunk === "") return
        streams.stdout.write(chunk)
        atLineStart = chunk.endsWith("\n")
      }),
    line: (line) => Effect.sync(() => lineSync(line)),
    lineSync,
    prompt: (text) =>
      Effect.sync(() => {
        endPartialLine()
        streams.stderr.write(text)
      }),
    out: styleFor(streams.stdout.isTTY === true, streams.env),
    err: styleFor(streams.stderr.isTTY === true, streams.env),
    interactive: streams.stdinIsTTY
  }
}

/** The screen of this process; one per process, since it tracks where the text on stdout ends. */
export const ofProcess = (): ScreenShape =>
  make({ stdout: process.stdout, stderr: process.stderr, stdinIsTTY: process.stdin.isTTY === true, env: process.env })
