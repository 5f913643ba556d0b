/**
 * How the approval prompt shows a call: all of it, never cut. An `exec` command is shown as
 * written, wrapped to the terminal, with its shell metacharacters highlighted and listed (so
 * `git status … ; touch PWNED` shows its `;` even without colours); other calls as indented JSON.
 * Characters that would hide or reorder text on a terminal (controls, escapes, bidirectional
 * overrides, zero-width characters) are shown as `\u{…}` escapes. A call too long to show on the
 * screen is written whole to a private file whose path is shown with its first lines.
 */
import type { Style } from "../terminal/style.ts"

/** The lines of a call as shown, wrapped, before styling. */
export interface Shown {
  /** The text lines, wrapped, each already styled. */
  readonly lines: ReadonlyArray<string>
  /** The whole call as plain text (what goes to a file when it is too long). */
  readonly plain: string
  /** The shell operators in an `exec` command, in order of first appearance. */
  readonly operators: ReadonlyArray<string>
}

/** Most wrapped lines shown on the screen; a longer call is shown from a file. */
export const MAX_SHOWN_LINES = 40

/** Code points a terminal would not show as themselves: controls, bidirectional marks, zero-width and separators. */
const hidden = (code: number): boolean =>
  (code < 0x20 && code !== 0x0a) || (code >= 0x7f && code <= 0x9f) || (code >= 0x200b && code <= 0x200f) ||
  (code >= 0x2028 && code <= 0x202e) || (code >= 0x2060 && code <= 0x2069) || code === 0xfeff || code === 0x061c ||
  (code >= 0xfff9 && code <= 0xfffb) || (code >= 0xe0000 && code <= 0xe007f)

/** `text` with every hidden character as a visible `\u{…}` escape; one pass. */
export const visible = (text: string): string => {
  let out = ""
  for (const char of text) {
    const code = char.codePointAt(0)!
    out += hidden(code) ? `\\u{${code.toString(16)}}` : char
  }
  return out
}

const OPERATORS = ["&&", "||", "$(", "<(", ">(", ">>", ";", "|", "&", "`", ">", "<", "$", "\\", "(", ")", "{", "}", "*", "?", "~", "#"] as const
const META = new Set(";&|`$<>()\\{}*?~#")

/** The shell operators of `command`, in order of first appearance (newlines count as `newline`). */
export const operatorsOf = (command: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!
    if (c === "\n") {
      if (!found.includes("newline")) found.push("newline")
      continue
    }
    if (!META.has(c)) continue
    const op = OPERATORS.find((candidate) => command.startsWith(candidate, i))!
    if (!found.includes(op)) found.push(op)
    i += op.length - 1
  }
  return found
}

/** Cuts `line` into pieces of at most `width` characters (code points). */
const wrap = (line: string, width: number): ReadonlyArray<string> => {
  const chars = Array.from(line)
  if (chars.length <= width) return [line]
  const pieces: Array<string> = []
  for (let i = 0; i < chars.length; i += width) pieces.push(chars.slice(i, i + width).join(""))
  return pieces
}

const highlight = (piece: string, style: Style): string => {
  let out = ""
  for (const c of piece) out += META.has(c) ? style.bold(style.red(c)) : c
  return out
}

/** The call's lines (wrapped to `width` columns after a 4-space indent). */
export const show = (call: { readonly name: string; readonly arguments: unknown }, style: Style, width: number): Shown => {
  const room = Math.max(20, width - 4)
  const args = typeof call.arguments === "object" && call.arguments !== null ? (call.arguments as Record<string, unknown>) : undefined
  const command = call.name === "exec" && typeof args?.["command"] === "string" ? (args["command"] as string) : undefined
  if (command !== undefined) {
    const text = visible(command)
    const rest = Object.entries(args!).filter(([key]) => key !== "command").map(([key, value]) => `${key}: ${visible(JSON.stringify(value))}`)
    const pieces = text.split("\n").flatMap((line) => wrap(line, room))
    return {
      lines: [...pieces.map((piece) => `    ${highlight(piece, style)}`), ...rest.flatMap((line) => wrap(line, room)).map((piece) => `    ${style.dim(piece)}`)],
      plain: [text, ...rest].join("\n"),
      operators: operatorsOf(command)
    }
  }
  const text = visible(JSON.stringify(call.arguments ?? {}, null, 2) ?? "null")
  return { lines: text.split("\n").flatMap((line) => wrap(line, room)).map((piece) => `    ${piece}`), plain: text, operators: [] }
}
