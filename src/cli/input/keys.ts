/**
 * Tab, Shift-Tab, Ctrl-R, focus reports and the status line's row, handled before readline does
 * (`lineInput.ts` installs them for the chat):
 *
 * - Tab completes the word before the cursor (`complete`: slash commands, `@` paths, agents): one
 *   candidate replaces the word, several put their common start in and are listed under the line;
 * - Shift-Tab is handed to `onShiftTab` (the chat cycles its permission mode);
 * - Ctrl-R searches the input history backwards, as shells do: typed text narrows it, Ctrl-R again
 *   goes further back, Enter runs the match, Tab or → puts it in the line to edit, Esc or Ctrl-G
 *   gives the line back as it was;
 * - focus reports (`CSI I`, `CSI O`, asked for with `CSI ?1004h`) go to `onFocus` and never into the line;
 * - `below()` (the status line) is kept on the row under the input: drawn again after readline
 *   redraws the line (which clears what is below it), erased when the line is sent. It is drawn
 *   only while the input takes one row, so that it never lands on the input itself.
 *
 * readline exposes no hook for keys, so its `_ttyWrite` (every key's entry point) is wrapped.
 */
import type * as readline from "node:readline"

/** What a key carries, as readline's `emitKeypressEvents` parses it. */
export interface Key {
  readonly name?: string | undefined
  readonly ctrl?: boolean | undefined
  readonly meta?: boolean | undefined
  readonly shift?: boolean | undefined
  readonly sequence?: string | undefined
  readonly code?: string | undefined
}

/** Completions of the word before the cursor: where the word starts in the line, and the candidates (each a whole replacement). */
export interface Completion {
  readonly from: number
  readonly candidates: ReadonlyArray<string>
}

/** The handlers a chat gives. */
export interface KeyOptions {
  readonly complete?: ((before: string) => Completion | undefined) | undefined
  readonly onShiftTab?: (() => void) | undefined
  readonly onFocus?: ((focused: boolean) => void) | undefined
  /** The text of the row under the input while the prompt is open, if any. */
  readonly below?: (() => string | undefined) | undefined
}

/** What the installed keys tell the line editor's other listeners. */
export interface Installed {
  /** Whether Ctrl-R's search is under way: its Esc ends the search, and is no other key's. */
  readonly searching: () => boolean
}

/** Draws `text` on the row under the cursor's, the cursor put back. */
export const drawBelow = (output: NodeJS.WritableStream, text: string): void => {
  output.write(`\u001b7\u001b[1B\r\u001b[2K${text}\u001b8`)
}

/** readline's internals this module uses (stable for years, though undocumented). */
interface Editor {
  line: string
  cursor: number
  _ttyWrite: (s: string | undefined, key: Key | undefined) => void
  _refreshLine: () => void
  _prompt: string
  _getDisplayPos: (text: string) => { readonly rows: number }
  getCursorPos: () => { readonly rows: number }
}

/** How many candidates a Tab lists at most. */
const MAX_LISTED = 30

/** The longest start the strings share. */
export const commonPrefix = (values: ReadonlyArray<string>): string => {
  if (values.length === 0) return ""
  let prefix = values[0]!
  for (const value of values) while (!value.startsWith(prefix)) prefix = prefix.slice(0, -1)
  return prefix
}

/** The newest entry of `history` (newest first) at or after `start` holding `query`; its index. */
export const searchHistory = (history: ReadonlyArray<string>, query: string, start: number): number => {
  const wanted = query.toLowerCase()
  for (let i = start; i < history.length; i++) if (history[i]!.toLowerCase().includes(wanted)) return i
  return -1
}

/** Wraps `rl`'s key handling; `history` is readline's own list (newest first), `output` where the editor draws. */
export const install = (rl: readline.Interface, history: ReadonlyArray<string>, output: NodeJS.WritableStream, options: KeyOptions): Installed => {
  const editor = rl as unknown as Editor
  const original = editor._ttyWrite.bind(editor)
  /** Whether the input ends on the cursor's row: the row under it is then free for `below`. */
  const oneRow = () => editor._getDisplayPos(editor._prompt + editor.line).rows === editor.getCursorPos().rows
  const refresh = editor._refreshLine.bind(editor)
  editor._refreshLine = () => {
    refresh()
    const text = options.below?.()
    if (text !== undefined && oneRow()) drawBelow(output, text)
  }
  /** The reverse search under way: what is typed, the match's index, and the line before it started. */
  let search: { query: string; at: number; readonly saved: string; readonly cursor: number } | undefined

  const setLine = (text: string) => {
    editor.line = text
    editor.cursor = text.length
  }
  const drawSearch = () => {
    if (search === undefined) return
    const match = search.at < 0 ? "" : history[search.at]!.replaceAll(/[\r\n]+/g, " ⏎ ")
    const failing = search.at < 0 && search.query !== "" ? "failing " : ""
    output.write(`\r\u001b[K(${failing}reverse-i-search)'${search.query}': ${match}`)
  }
  const endSearch = (text: string | undefined) => {
    const ended = search!
    search = undefined
    output.write("\r\u001b[K")
    if (text === undefined) {
      setLine(ended.saved)
      editor.cursor = ended.cursor
    } else setLine(text.replaceAll("\n", "\r"))
    editor._refreshLine()
  }
  const searchKey = (s: string | undefined, key: Key | undefined) => {
    const state = search!
    const match = state.at < 0 ? undefined : history[state.at]
    if (key?.ctrl === true && key.name === "r") {
      const next = searchHistory(history, state.query, state.at + 1)
      if (next >= 0) state.at = next
      return drawSearch()
    }
    if (key?.name === "escape" || (key?.ctrl === true && (key.name === "g" || key.name === "c"))) return endSearch(undefined)
    if (key?.name === "return" || key?.name === "enter") {
      endSearch(match ?? state.saved)
      if (options.below?.() !== undefined && oneRow()) drawBelow(output, "")
      return original("\r", { name: "return" })
    }
    if (key?.name === "tab" || key?.name === "right") return endSearch(match ?? state.saved)
    if (key?.name === "backspace") {
      state.query = state.query.slice(0, -1)
      state.at = state.query === "" ? -1 : searchHistory(history, state.query, 0)
      return drawSearch()
    }
    if (typeof s === "string" && s.length > 0 && key?.ctrl !== true && key?.meta !== true && !/[\u0000-\u001f\u007f]/.test(s)) {
      state.query += s
      state.at = searchHistory(history, state.query, Math.max(0, state.at))
      return drawSearch()
    }
  }

  const tab = () => {
    const before = editor.line.slice(0, editor.cursor)
    const completion = options.complete?.(before)
    if (completion === undefined || completion.candidates.length === 0) return
    const word = before.slice(completion.from)
    const replace = (text: string) => {
      const after = editor.line.slice(editor.cursor)
      editor.line = before.slice(0, completion.from) + text + after
      editor.cursor = completion.from + text.length
      editor._refreshLine()
    }
    if (completion.candidates.length === 1) {
      const only = completion.candidates[0]!
      return replace(only.endsWith("/") ? only : `${only} `)
    }
    const prefix = commonPrefix(completion.candidates)
    if (prefix.length > word.length) return replace(prefix)
    const shown = completion.candidates.slice(0, MAX_LISTED)
    const more = completion.candidates.length - shown.length
    // over the row under the line, which may hold the status line
    output.write(`\r\n\u001b[2K${shown.join("  ")}${more > 0 ? `  (${more} more)` : ""}\r\n`)
    editor._refreshLine()
  }

  /** Inside a bracketed paste: a pasted tab is text, not completion. */
  let pasting = false
  editor._ttyWrite = (s, key) => {
    if (key?.name === "paste-start") pasting = true
    else if (key?.name === "paste-end") pasting = false
    if (key?.code === "[I" || key?.code === "[O") return options.onFocus?.(key.code === "[I")
    if (pasting) return original(s, key)
    if (search !== undefined) return searchKey(s, key)
    if (key?.ctrl === true && key.name === "r") {
      search = { query: "", at: -1, saved: editor.line, cursor: editor.cursor }
      return drawSearch()
    }
    if (key?.name === "tab" && key.shift === true) {
      options.onShiftTab?.()
      // what was typed stays, after the prompt (drawn again when the mode was said on a line of its own)
      return editor._refreshLine()
    }
    if (key?.name === "tab" && options.complete !== undefined) return tab()
    // the line is sent: the row under it is the output's
    if ((key?.name === "return" || key?.name === "enter") && options.below?.() !== undefined && oneRow()) drawBelow(output, "")
    return original(s, key)
  }
  return { searching: () => search !== undefined }
}
