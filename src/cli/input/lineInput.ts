/**
 * Lines typed on stdin. A question (the approval prompt) takes the next line; every other line is
 * input for the command. By default the terminal stays in its normal (cooked) mode, so it echoes
 * and edits lines itself and Ctrl-C arrives as SIGINT (see `ctrlC.ts`).
 *
 * `chat` reads its terminal with line editing instead (`terminal`): up/down recall earlier inputs,
 * kept in a private, bounded file; a pasted block (bracketed paste) is one input. The terminal is
 * then in raw mode, where Ctrl-C reaches readline, not the process: readline's press is handed to
 * the process's SIGINT listeners, so `ctrlC.ts` reacts exactly as in cooked mode. Tools' child
 * processes run in their own process groups either way and are stopped by the loop, not the terminal.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import type * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Keys from "./keys.ts"

/** Lines from stdin. */
export interface LineInput {
  /** The next line that is not an answer; `None` once stdin has ended. */
  readonly next: Effect.Effect<Option.Option<string>>
  /** Asks for one line: the next line typed, or `undefined` if stdin ends or the question is cancelled first. */
  readonly ask: Effect.Effect<string | undefined>
  /**
   * Answers every open question with `undefined` (no answer, which the approval prompt takes as
   * no), so that Ctrl-C does not leave a prompt waiting for a `y` that would still be obeyed.
   */
  readonly cancelQuestions: Effect.Effect<void>
  /**
   * With line editing: hands the terminal's raw input to `onData` instead of the line editor (so
   * a picker can read arrow keys) until the returned function gives it back. Absent otherwise.
   */
  readonly borrowKeys?: ((onData: (chunk: string) => void) => () => void) | undefined
  /** With line editing: puts `text` (one line) in the line being edited, as if typed (`/rewind` offers the message again). */
  readonly prefill?: ((text: string) => void) | undefined
  /** With line editing: whether `line`, as `next` gave it, holds pasted text (a typed `# note` must not be pasted). */
  readonly wasPasted?: ((line: string) => boolean) | undefined
}

/** How many earlier inputs up/down can recall (and the history file keeps). */
export const HISTORY_SIZE = 500

/** Line editing on a terminal. */
export interface TerminalOptions {
  /** Where typed text is echoed (and the prompt redrawn when a line is edited). */
  readonly output: NodeJS.WritableStream
  /** The prompt the caller has drawn on the current line, if any, so that readline redraws the same one. */
  readonly prompt: () => string | undefined
  /** A file for the history of earlier runs (JSON lines, oldest first, private); none keeps it in memory. */
  readonly historyFile?: string | undefined
  /** Tab completion, Shift-Tab, Ctrl-R's history search and focus reports (`keys.ts`). */
  readonly keys?: Keys.KeyOptions | undefined
  /** Called when Esc is pressed on its own (not as the start of another key's sequence, nor in a paste), with the line being edited. */
  readonly onEscape?: ((line: string) => void) | undefined
  /** Called when Ctrl-O is pressed (not in a paste): chat shows the last tool call whole. */
  readonly onExpand?: (() => void) | undefined
}

/** A key as readline's `keypress` event gives it. */
interface KeyPress {
  readonly name?: string
  readonly meta?: boolean
  readonly ctrl?: boolean
  /** The sequence's code when readline has no name for it (`[13;2u`). */
  readonly code?: string
}

/**
 * Shift-Enter where the terminal reports it: Esc Enter (what terminals set up for it send, and
 * Alt-Enter), or the CSI u form `CSI 13;2u` (kitty's keyboard protocol, tmux's extended keys).
 */
const isShiftEnter = (key: KeyPress | undefined): boolean =>
  (key?.name === "return" && key.meta === true) || key?.code === "[13;2u"

/**
 * How long a lone Esc waits for the rest of a key's sequence before it counts as Esc (readline's
 * default is 500 ms): a terminal sends a key's whole sequence at once, so a short wait tells them
 * apart and Esc acts at once.
 */
const ESCAPE_TIMEOUT_MS = 50

/** Bracketed paste: the terminal marks pasted text, so its newlines do not send lines one by one. */
const PASTE_ON = "\x1b[?2004h"
const PASTE_OFF = "\x1b[?2004l"

/** The history file's inputs, newest first; a missing or unreadable file is an empty history. */
const loadHistory = (file: string): Array<string> => {
  try {
    return fs.readFileSync(file, "utf8").split("\n").flatMap((line) => {
      try {
        const entry: unknown = JSON.parse(line)
        return typeof entry === "string" ? [entry] : []
      } catch {
        return []
      }
    }).reverse().slice(0, HISTORY_SIZE)
  } catch {
    return []
  }
}

/** Writes the history (newest first) oldest first; a failure to save only loses the recall. */
const saveHistory = (file: string, history: ReadonlyArray<string>) => {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
    const text = history.slice(0, HISTORY_SIZE).toReversed().map((entry) => JSON.stringify(entry)).join("\n")
    fs.writeFileSync(file, text + "\n", { mode: 0o600 })
    fs.chmodSync(file, 0o600)
  } catch {
    // best effort: history is a convenience
  }
}

/**
 * Reads `input` line by line until the scope closes. With `continuation` (a terminal), a line that
 * ends with a backslash continues on the next: the lines are one input, joined by newlines, as in a
 * shell; so do the lines of a paste (with `terminal`). Answers to questions are single lines.
 */
export const fromReadable = (
  input: NodeJS.ReadableStream,
  options: { readonly continuation?: boolean; readonly terminal?: TerminalOptions | undefined } = {}
): Effect.Effect<LineInput, never, Scope.Scope> =>
  Effect.gen(function*() {
    const lines = yield* Queue.unbounded<string, Cause.Done>()
    const questions: Array<Deferred.Deferred<string | undefined>> = []
    let closed = false
    const answerAll = (answer: string | undefined) => {
      for (const question of questions.splice(0)) Deferred.doneUnsafe(question, Exit.succeed(answer))
    }
    const terminal = options.terminal
    const rl = yield* Effect.acquireRelease(
      Effect.sync(() => {
        if (terminal === undefined) return readline.createInterface({ input, terminal: false })
        const rl = readline.createInterface({
          input,
          output: terminal.output,
          terminal: true,
          prompt: "",
          history: terminal.historyFile === undefined ? [] : loadHistory(terminal.historyFile),
          historySize: HISTORY_SIZE,
          removeHistoryDuplicates: true,
          escapeCodeTimeout: ESCAPE_TIMEOUT_MS
        })
        terminal.output.write(PASTE_ON)
        return rl
      }),
      (rl) =>
        Effect.sync(() => {
          rl.close()
          if (terminal !== undefined) terminal.output.write(PASTE_OFF)
        })
    )
    // readline keeps the history newest first; it records every line, answers and pieces included
    const history = (rl as unknown as { history?: Array<string> }).history ?? []
    const keys = terminal?.keys === undefined ? undefined : Keys.install(rl, history, terminal.output, terminal.keys)
    let pasting = false
    /** Whether the input being typed holds pasted text; the inputs that did, until `wasPasted` asks (a few at most). */
    let pastedNow = false
    const pastedInputs: Array<string> = []
    if (terminal !== undefined) {
      // Ctrl-C in raw mode: the same listeners as the signal in cooked mode
      rl.on("SIGINT", () => process.emit("SIGINT", "SIGINT"))
      // before readline's own listener: an edit redraws the line with the prompt shown now
      input.prependListener("keypress", (_: unknown, key: KeyPress | undefined) => {
        rl.setPrompt(terminal.prompt() ?? "")
        if (key?.name === "paste-start") pasting = true
        else if (key?.name === "paste-end") pasting = false
        else if (key?.ctrl === true && key.name === "o" && !pasting) terminal.onExpand?.()
        else if (isShiftEnter(key) && !pasting) {
          // a new line in the input, as a trailing backslash makes one: readline itself ignores these keys
          rl.write(null, { ctrl: true, name: "e" })
          rl.write("\\")
          rl.write(null, { name: "return" })
        }
        else if (key?.name === "escape" && !pasting && keys?.searching() !== true) {
          // two presses close together arrive as one key, Esc with meta
          terminal.onEscape?.(rl.line)
          if (key.meta === true) terminal.onEscape?.(rl.line)
        }
        if (pasting) pastedNow = true
      })
    }
    /** Recalls `whole` as one entry instead of its `pieces` (newest last), and saves the history. */
    const remember = (pieces: ReadonlyArray<string>, whole: string | undefined) => {
      if (terminal === undefined) return
      for (const piece of pieces.toReversed()) if (history[0] === piece) history.shift()
      if (whole !== undefined && whole.trim() !== "") {
        const earlier = history.indexOf(whole)
        if (earlier >= 0) history.splice(earlier, 1)
        history.unshift(whole)
        history.splice(HISTORY_SIZE)
      }
      if (terminal.historyFile !== undefined) saveHistory(terminal.historyFile, history)
    }
    // the lines so far of an input continued with trailing backslashes, or pasted
    let continued: Array<string> = []
    let typed: Array<string> = []
    rl.on("line", (received) => {
      // readline hands a recalled multi-line entry back with its newlines as carriage returns
      const line = terminal === undefined ? received : received.replaceAll("\r", "\n")
      const question = questions.shift()
      if (question) {
        remember([line], undefined)
        return Deferred.doneUnsafe(question, Exit.succeed(line))
      }
      typed.push(line)
      if (pasting) {
        continued.push(line)
        return
      }
      if (options.continuation === true && line.endsWith("\\")) {
        continued.push(line.slice(0, -1))
        return
      }
      const whole = [...continued, line].join("\n")
      remember(typed, whole)
      continued = []
      typed = []
      if (pastedNow) pastedInputs.push(whole)
      pastedNow = false
      pastedInputs.splice(0, pastedInputs.length - 16)
      Queue.offerUnsafe(lines, whole)
    })
    rl.once("close", () => {
      // input that ends mid-continuation is still input
      if (continued.length > 0) Queue.offerUnsafe(lines, continued.join("\n"))
      closed = true
      answerAll(undefined)
      Queue.endUnsafe(lines)
    })
    const ask = Effect.suspend(() => {
      if (closed) return Effect.succeed(undefined)
      const question = Deferred.makeUnsafe<string | undefined>()
      questions.push(question)
      return Deferred.await(question).pipe(
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            const at = questions.indexOf(question)
            if (at >= 0) questions.splice(at, 1)
          })
        )
      )
    })
    /** The editor reads keys from `keypress` events: without listeners, the keys go to `onData` alone. */
    const borrowKeys = (onData: (chunk: string) => void) => {
      const editor = input.listeners("keypress") as Array<(...args: Array<unknown>) => void>
      input.removeAllListeners("keypress")
      const listener = (data: Buffer | string) => onData(data.toString())
      input.on("data", listener)
      return () => {
        input.off("data", listener)
        for (const each of editor) input.on("keypress", each)
      }
    }
    return {
      next: Queue.take(lines).pipe(Effect.map(Option.some), Effect.catch(() => Effect.succeed(Option.none<string>()))),
      ask,
      cancelQuestions: Effect.sync(() => answerAll(undefined)),
      ...(terminal === undefined ? {} : {
        borrowKeys,
        prefill: (text: string) => {
          if (!/[\r\n]/.test(text)) rl.write(text)
        },
        wasPasted: (line: string) => {
          const at = pastedInputs.indexOf(line)
          if (at >= 0) pastedInputs.splice(at, 1)
          return at >= 0
        }
      })
    }
  })

/** Reads stdin line by line until the scope closes. */
export const make: Effect.Effect<LineInput, never, Scope.Scope> = Effect.suspend(() =>
  fromReadable(process.stdin, { continuation: process.stdin.isTTY === true })
)

/** Reads stdin with line editing and history when it is a terminal (else as `make`). */
export const makeEditing = (
  options: {
    readonly prompt: () => string | undefined
    readonly historyFile?: string | undefined
    readonly onEscape?: ((line: string) => void) | undefined
    readonly onExpand?: (() => void) | undefined
    readonly keys?: Keys.KeyOptions | undefined
  }
) =>
  Effect.suspend(() =>
    process.stdin.isTTY === true
      ? fromReadable(process.stdin, { continuation: true, terminal: { output: process.stderr, ...options } })
      : fromReadable(process.stdin)
  )
