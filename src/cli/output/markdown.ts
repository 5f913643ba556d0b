/**
 * Model answers rendered as Markdown on a terminal, while they stream.
 *
 * Line by line: a line is drawn once it is complete (headings, emphasis, inline code, links,
 * lists, quotes, rules, fenced code with highlighting). The line still arriving is shown as plain
 * text and replaced by its rendering when its newline comes: the only redraw there is, so the
 * bytes written per delta stay proportional to the changed line, not the transcript (no
 * full-screen repaint, no flicker). A table is shown plain while its rows arrive and redrawn
 * aligned when it ends, if it still fits on the screen.
 *
 * The input is model text: every escape sequence and control character is removed before it is
 * styled (`safeText.ts`), so the only sequences written are ours.
 */
import { clean } from "../terminal/safeText.ts"
import { highlight } from "./highlight.ts"
import { inline, type MarkdownStyle, visibleWidth } from "./markdownInline.ts"

export type { MarkdownStyle } from "./markdownInline.ts"

/** What the terminal can tell: its width and height, read at each redraw (it may be resized). */
export interface TerminalSize {
  readonly columns: () => number
  readonly rows: () => number
}

/** A streaming renderer for one answer: `push` each delta, `end` once the answer is complete. */
export interface MarkdownStream {
  /** The bytes to write for this delta. */
  readonly push: (delta: string) => string
  /** The bytes that finish the answer (its last line, a table still open). */
  readonly end: () => string
}

/** Moves the cursor back over `rows` terminal rows of plain text just written and erases them. */
const eraseRows = (rows: number): string => `\r${rows > 1 ? `\u001b[${rows - 1}A` : ""}\u001b[J`

/** The terminal rows `text` (no newline) takes at `columns` wide: at least one. */
const rowsOf = (text: string, columns: number): number => Math.max(1, Math.ceil(visibleWidth(text) / Math.max(1, columns)))

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w+#.-]*)/
const TABLE_ROW = /^\s*\|.*\|\s*$/
const TABLE_RULE = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/

/** The cells of a table row (`| a | b |`), trimmed. */
const cells = (row: string): Array<string> => row.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((cell) => cell.trim())

/** A table's rows aligned in columns, the header bold, the rule drawn. */
const table = (rows: ReadonlyArray<string>, style: MarkdownStyle): Array<string> => {
  const parsed = rows.map((row) => TABLE_RULE.test(row) ? undefined : cells(row).map((cell) => inline(cell, style)))
  const widths: Array<number> = []
  for (const row of parsed) row?.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, visibleWidth(cell))))
  return parsed.map((row, index) =>
    row === undefined
      ? style.dim(widths.map((width) => "─".repeat(width)).join("─┼─"))
      : row.map((cell, i) => {
        const padded = i === row.length - 1 ? cell : cell + " ".repeat(Math.max(0, (widths[i] ?? 0) - visibleWidth(cell)))
        return index === 0 ? style.bold(padded) : padded
      }).join(style.dim(" │ "))
  )
}

/** One complete line outside code and tables. */
const block = (line: string, style: MarkdownStyle, columns: number): string => {
  const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line)
  if (heading !== null) {
    const text = inline(heading[2]!, style)
    return heading[1]!.length <= 2 ? style.bold(style.underline(text)) : style.bold(text)
  }
  if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) return style.dim("─".repeat(Math.min(columns, 80)))
  const quote = /^\s*>\s?(.*)$/.exec(line)
  if (quote !== null) return `${style.dim("│")} ${style.italic(inline(quote[1]!, style))}`
  const bullet = /^(\s*)[-*+]\s+(\[[ xX]\]\s+)?(.*)$/.exec(line)
  if (bullet !== null) {
    const box = bullet[2] === undefined ? style.cyan("•") : /x/i.test(bullet[2]) ? style.green("☑") : "☐"
    return `${bullet[1]}${box} ${inline(bullet[3]!, style)}`
  }
  const numbered = /^(\s*)(\d+[.)])\s+(.*)$/.exec(line)
  if (numbered !== null) return `${numbered[1]}${style.cyan(numbered[2]!)} ${inline(numbered[3]!, style)}`
  return inline(line, style)
}

/**
 * A renderer for one streamed answer. `style` colours (the caller uses this only on a terminal
 * with colours on); `size` is read at each redraw.
 */
export const makeMarkdown = (style: MarkdownStyle, size: TerminalSize): MarkdownStream => {
  /** Text of the line still arriving (cleaned), shown plain. */
  let partial = ""
  /** The open fence (its marker) while inside a code block, and its language. */
  let fence: { readonly marker: string; readonly language: string } | undefined
  /** A table's complete rows, shown plain until it ends, and the rows they take on screen. */
  let tableRows: Array<string> = []
  let tableScreenRows = 0

  /**
   * The table's plain rows redrawn aligned, with the `below` rows under them (the line the cursor
   * is on) erased too; nothing when there is no table, or when it has scrolled out of the cursor's
   * reach (taller than the screen: it then stays plain).
   */
  const closeTable = (below: number): string => {
    if (tableRows.length === 0) return ""
    const rows = tableRows
    const screenRows = tableScreenRows + below
    tableRows = []
    tableScreenRows = 0
    return screenRows >= size.rows() ? "" : `${eraseRows(screenRows)}${table(rows, style).join("\n")}\n`
  }

  /** A complete line outside code and tables, drawn; a fence line opens a code block. */
  const drawn = (line: string, columns: number): string => {
    const opening = FENCE.exec(line)
    if (opening === null) return `${block(line, style, columns)}\n`
    fence = { marker: opening[2]!, language: opening[3]!.toLowerCase() }
    return `${style.dim(line)}\n`
  }

  /** The bytes that replace the plain `line` (on screen, the cursor at its end) with its rendering. */
  const completeLine = (line: string): string => {
    const columns = size.columns()
    const lineRows = rowsOf(line, columns)
    const erase = eraseRows(lineRows)
    if (fence !== undefined) {
      const closing = FENCE.exec(line)
      if (closing !== null && closing[2]![0] === fence.marker[0] && closing[2]!.length >= fence.marker.length && closing[3] === "") {
        fence = undefined
        return `${erase}${style.dim(line)}\n`
      }
      return `${erase}${highlight(line, fence.language, style)}\n`
    }
    if (TABLE_ROW.test(line) || (tableRows.length > 0 && TABLE_RULE.test(line))) {
      // shown plain for now (it is on screen already): redrawn aligned when the table ends
      tableRows.push(line)
      tableScreenRows += lineRows
      return "\n"
    }
    const redrawn = closeTable(lineRows)
    return `${redrawn === "" ? erase : redrawn}${drawn(line, columns)}`
  }

  return {
    push: (delta) => {
      const text = clean(delta)
      let out = ""
      let start = 0
      for (let newline = text.indexOf("\n"); newline !== -1; newline = text.indexOf("\n", start)) {
        const piece = text.slice(start, newline)
        out += piece
        partial += piece
        out += completeLine(partial)
        partial = ""
        start = newline + 1
      }
      const rest = text.slice(start)
      partial += rest
      return out + rest
    },
    end: () => {
      let out = ""
      if (partial !== "") {
        out += completeLine(partial)
        partial = ""
      }
      out += closeTable(1)
      fence = undefined
      // `completeLine` ends every line it draws; the answer's own end had no newline when
      // it finished mid-line, and the screen ends partial lines itself
      return out
    }
  }
}
