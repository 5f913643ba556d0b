/**
 * Glob matching for permission rules, without regular expressions: rules are the user's, but the
 * text matched (a command, a path) is the model's, so every match is a bounded loop — at most the
 * pattern's length times the text's — never a backtracking search.
 */

/**
 * Whether `text` matches `pattern`, where `*` is any run of characters and `?` any one. The
 * classic two-pointer match: it returns to the last star only.
 */
export const starMatch = (pattern: string, text: string): boolean => {
  let p = 0
  let t = 0
  let star = -1
  let resume = 0
  while (t < text.length) {
    const c = pattern[p]
    if (c === "*") {
      star = p++
      resume = t
    } else if (c !== undefined && (c === text[t] || c === "?")) {
      p++
      t++
    } else if (star >= 0) {
      p = star + 1
      t = ++resume
    } else return false
  }
  while (pattern[p] === "*") p++
  return p === pattern.length
}

/**
 * Whether the path `segments` match the glob `pattern` segments, where a `**` segment is any
 * number of segments (none included) and other segments match one by `starMatch`. A table over
 * (pattern position, path position), so the cost is their product however many `**` there are.
 */
export const pathMatch = (pattern: ReadonlyArray<string>, path: ReadonlyArray<string>): boolean => {
  // reach[s]: the first p pattern segments can match the first s path segments
  let reach: Array<boolean> = new Array(path.length + 1).fill(false)
  reach[0] = true
  for (const part of pattern) {
    const next: Array<boolean> = new Array(path.length + 1).fill(false)
    if (part === "**") {
      let any = false
      for (let s = 0; s <= path.length; s++) {
        any = any || reach[s]!
        next[s] = any
      }
    } else {
      for (let s = 1; s <= path.length; s++) next[s] = reach[s - 1]! && starMatch(part, path[s - 1]!)
    }
    reach = next
  }
  return reach[path.length]!
}
