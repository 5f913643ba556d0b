/**
 * What a finished tool call shows under its line, so a user can review it without asking: an
 * edit as a coloured diff with line numbers, a written file's first lines, the last lines a
 * command printed, and for a failure its cause in one line. Long previews are folded (the number
 * of hidden lines is said); `--verbose` shows results whole instead.
 */
import type { Style } from "../terminal/style.ts"
import { clean } from "../terminal/safeText.ts"
import * as Format from "../terminal/format.ts"
import { diffLines, type DiffRow } from "./lineDiff.ts"

/** Lines of a diff or a written file shown before folding. */
export const DIFF_LINES = 20
/** Last lines of a command's output shown. */
export const OUTPUT_LINES = 5

/** The longest command shown whole under its call's line (a command of megabytes is cut there, saying so). */
const MAX_COMMAND = 4000

/** The call as it started: its tool's name and its arguments as JSON. */
export interface StartedCall {
  readonly toolName: string
  readonly arguments: string
}

/** The call as it ended. */
export interface EndedCall {
  readonly isError: boolean
  readonly result: string
}

const parse = (json: string): Record<string, unknown> => {
  try {
    const value: unknown = JSON.parse(json)
    return typeof value === "object" && value !== null ? value as Record<string, unknown> : {}
  } catch {
    return {}
  }
}

const text = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/** At most `max` of `lines`, and a dimmed note of how many more there are. */
const folded = (lines: ReadonlyArray<string>, max: number, style: Style, pad: string): Array<string> =>
  lines.length <= max ? [...lines] : [...lines.slice(0, max), `${pad}${style.dim(`… ${Format.plural(lines.length - max, "more line")}`)}`]

/** A line fitted to the terminal's width (`clean` first: every line here is text from outside). */
const fit = (line: string, width: number) => Format.truncate(clean(line).replace(/\t/g, "  "), Math.max(20, width))

const diffRow = (row: DiffRow, numberWidth: number, style: Style, pad: string, width: number): string => {
  const number = (n: number | undefined) => (n === undefined ? "" : String(n)).padStart(numberWidth)
  const body = (mark: string, line: string) => `${mark} ${fit(line, width - numberWidth - pad.length - 3)}`
  switch (row.kind) {
    case "same":
      return `${pad}${style.dim(`${number(row.newLine)} ${body(" ", row.text)}`)}`
    case "removed":
      return `${pad}${style.dim(number(row.oldLine))} ${style.red(body("-", row.text))}`
    case "added":
      return `${pad}${style.dim(number(row.newLine))} ${style.green(body("+", row.text))}`
  }
}

/** A failed call's cause in one line: its result's first line that says something (not the bare exit code). */
export const causeLine = (result: string): string | undefined =>
  result.split("\n").map((line) => line.trim()).find((line) => line !== "" && !/^exit code: \d+$/.test(line)) ??
    result.split("\n").find((line) => line.trim() !== "")

/** The lines under a call that succeeded (none when there is nothing worth showing). */
export const preview = (call: StartedCall, end: EndedCall, style: Style, pad: string, width: number, whole = false): Array<string> => {
  const args = parse(call.arguments)
  // the whole of what a call returned, as the model got it (Ctrl-O in chat)
  const result = () => end.result.replace(/\n+$/, "").split("\n").map((line) => `${pad}${style.dim(clean(line).replace(/\t/g, "  "))}`)
  if (end.isError) return whole ? result() : []
  const fold = whole ? Infinity : DIFF_LINES
  switch (call.toolName) {
    case "edit_file": {
      const before = text(args["old_text"])
      const after = text(args["new_text"])
      if (before === undefined || after === undefined) return []
      const at = /at line (\d+)/.exec(end.result)
      const rows = diffLines(before, after, at === null ? 1 : Number(at[1]))
      const numberWidth = String(Math.max(1, ...rows.map((row) => row.kind === "removed" ? row.oldLine : row.newLine))).length
      return folded(rows.map((row) => diffRow(row, numberWidth, style, pad, width)), fold, style, pad)
    }
    case "write_file": {
      const content = text(args["content"])
      if (content === undefined || content === "") return []
      const lines = content.replace(/\n$/, "").split("\n")
      const numberWidth = String(lines.length).length
      return folded(lines.map((line, i) => diffRow({ kind: "added", newLine: i + 1, text: line }, numberWidth, style, pad, width)), fold, style, pad)
    }
    case "exec": {
      const output = end.result.replace(/^exit code: \d+\n?/, "").replace(/\n+$/, "")
      if (output === "") return []
      const lines = output.split("\n")
      if (whole) return lines.map((line) => `${pad}${style.dim(clean(line).replace(/\t/g, "  "))}`)
      const shown = lines.slice(-OUTPUT_LINES).map((line) => `${pad}${style.dim(fit(line, width - pad.length))}`)
      return lines.length > OUTPUT_LINES ? [`${pad}${style.dim(`… ${Format.plural(lines.length - OUTPUT_LINES, "earlier line")}`)}`, ...shown] : shown
    }
    default:
      return whole ? result() : []
  }
}

/** What the call's start line says of its arguments: the command for `exec`, the path and range for a read. */
export const startDetail = (call: StartedCall, width: number): string | undefined => {
  const args = parse(call.arguments)
  switch (call.toolName) {
    case "exec": {
      const command = text(args["command"])
      // whole (the terminal wraps it): a user approves and reviews what runs, not a cut of it
      return command === undefined ? undefined : `$ ${Format.truncate(command.replace(/\n/g, " ⏎ "), MAX_COMMAND)}`
    }
    case "read_file": {
      const path = text(args["path"])
      if (path === undefined) return undefined
      const offset = typeof args["offset"] === "number" ? args["offset"] : undefined
      const limit = typeof args["limit"] === "number" ? args["limit"] : undefined
      const range = offset === undefined && limit === undefined
        ? ""
        : limit === undefined
        ? ` from line ${offset}`
        : ` lines ${offset ?? 1}–${(offset ?? 1) + limit - 1}`
      return fit(`${path}${range}`, width)
    }
    case "edit_file":
    case "write_file": {
      const path = text(args["path"])
      return path === undefined ? undefined : fit(path, width)
    }
    default:
      return undefined
  }
}
