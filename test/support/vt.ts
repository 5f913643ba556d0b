/**
 * A small terminal emulator for tests of what a renderer leaves on screen: printable text wraps at
 * `columns`, and the few controls our renderers write are honoured (`\n`, `\r`, cursor up `ESC[nA`,
 * erase below `ESC[J`, erase line `ESC[K`); styles (`ESC[…m`) are dropped. Wide characters count
 * as one cell here, so tests keep to narrow text.
 */
export interface Vt {
  readonly write: (bytes: string) => void
  /** The screen's lines, trailing blanks trimmed, trailing empty lines dropped. */
  readonly lines: () => Array<string>
}

export const makeVt = (columns: number): Vt => {
  const rows: Array<Array<string>> = [[]]
  let row = 0
  let col = 0
  /** The cursor sits past the last column until the next character wraps it (as xterm does). */
  const put = (char: string) => {
    if (col >= columns) {
      row++
      col = 0
    }
    while (rows.length <= row) rows.push([])
    rows[row]![col] = char
    col++
  }
  const write = (bytes: string) => {
    for (let i = 0; i < bytes.length; i++) {
      const char = bytes[i]!
      if (char === "\u001b") {
        const match = /^\u001b\[(\d*)([A-Za-z])/.exec(bytes.slice(i))
        if (match === null) throw new Error(`unexpected escape at ${JSON.stringify(bytes.slice(i, i + 8))}`)
        i += match[0].length - 1
        const n = match[1] === "" ? 1 : Number(match[1])
        if (match[2] === "A") row = Math.max(0, row - n)
        else if (match[2] === "J") {
          rows.length = row + 1
          rows[row] = (rows[row] ?? []).slice(0, col)
        } else if (match[2] === "K") rows[row] = (rows[row] ?? []).slice(0, col)
        else if (match[2] !== "m") throw new Error(`unexpected control ${match[0]}`)
        continue
      }
      if (char === "\n") {
        row++
        col = 0
        while (rows.length <= row) rows.push([])
      } else if (char === "\r") col = 0
      else put(char)
    }
  }
  const lines = () => {
    const out = rows.map((cells) => Array.from(cells, (c) => c ?? " ").join("").trimEnd())
    while (out.length > 0 && out[out.length - 1] === "") out.pop()
    return out
  }
  return { write, lines }
}
