/**
 * A line diff of two small texts (an edit's old and new text) as unified-diff rows with line
 * numbers on both sides. Longest common subsequence over lines: edits are a few dozen lines, and
 * past `MAX_CELLS` (old lines × new lines) the rows are simply the old lines removed, then the
 * new ones added, which is still correct, only less precise.
 */

/** One row: a line kept, removed or added, with its numbers in the old and new file. */
export type DiffRow =
  | { readonly kind: "same"; readonly oldLine: number; readonly newLine: number; readonly text: string }
  | { readonly kind: "removed"; readonly oldLine: number; readonly text: string }
  | { readonly kind: "added"; readonly newLine: number; readonly text: string }

const MAX_CELLS = 250_000

/** The rows turning `before` into `after`, numbered from `firstLine` in both files. */
export const diffLines = (before: string, after: string, firstLine = 1): Array<DiffRow> => {
  const a = before === "" ? [] : before.replace(/\r\n/g, "\n").split("\n")
  const b = after === "" ? [] : after.replace(/\r\n/g, "\n").split("\n")
  const rows: Array<DiffRow> = []
  let i = 0
  let j = 0
  const same = () => {
    rows.push({ kind: "same", oldLine: firstLine + i, newLine: firstLine + j, text: a[i]! })
    i++
    j++
  }
  const removed = () => rows.push({ kind: "removed", oldLine: firstLine + i, text: a[i++]! })
  const added = () => rows.push({ kind: "added", newLine: firstLine + j, text: b[j++]! })
  if (a.length * b.length > MAX_CELLS) {
    while (i < a.length) removed()
    while (j < b.length) added()
    return rows
  }
  // lengths of the longest common subsequence of a[i..] and b[j..]
  const width = b.length + 1
  const lcs = new Uint32Array((a.length + 1) * width)
  for (let x = a.length - 1; x >= 0; x--) {
    for (let y = b.length - 1; y >= 0; y--) {
      lcs[x * width + y] = a[x] === b[y] ? lcs[(x + 1) * width + y + 1]! + 1 : Math.max(lcs[(x + 1) * width + y]!, lcs[x * width + y + 1]!)
    }
  }
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) same()
    else if (lcs[(i + 1) * width + j]! >= lcs[i * width + j + 1]!) removed()
    else added()
  }
  while (i < a.length) removed()
  while (j < b.length) added()
  return rows
}
