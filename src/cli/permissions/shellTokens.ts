/**
 * Every word-like token of shell text, for deny and ask rules where the reader (`shellWords.ts`)
 * cannot place the words: an opaque command, a command whose name is computed, code in a string
 * (`sh -c '…'`, `find -exec`, `awk 'BEGIN { system(…) }'`). Any token may start a command, so a
 * rule is matched at each (`commandRules.ts`).
 *
 * Tokens are cut at any blank (every Unicode space and control character), shell operator, `$`
 * and backtick; `generous` also cuts at `=`, `,`, braces, `!`, `:` and `@` (`alias.x=!touch`,
 * `{touch,x}`), which a rule's words may hold (`build:prod`), so rules are matched against both.
 * Quotes are dropped and backslashes undone, so `t''ouch`, `"touch"` and `\touch` are `touch`;
 * `$'\x74ouch'` is decoded as bash decodes it. One pass, linear in the text.
 */

/** Characters that end a token besides spaces and control characters. */
const CUTS: ReadonlySet<string> = new Set([";", "&", "|", "(", ")", "<", ">", "`", "$"])
/** Characters that also end a token when cutting generously. */
const MORE_CUTS: ReadonlySet<string> = new Set(["=", ",", "{", "}", "!", ":", "@"])

const isSpace = (c: string): boolean => c <= " " || c === "\u0085" || c === "\u00a0" || c === "\u1680" || c === "\u180e" ||
  (c >= "\u2000" && c <= "\u200b") || c === "\u2028" || c === "\u2029" || c === "\u202f" || c === "\u205f" || c === "\u3000" ||
  c === "\ufeff"

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  a: "\u0007", b: "\b", e: "\u001b", E: "\u001b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\", "'": "'", "\"": "\"", "?": "?"
}

const HEX = /^[0-9a-fA-F]$/
const OCTAL = /^[0-7]$/

/** Reads up to `max` digits of `base` from `at`; the character and where it ends. */
const codePoint = (text: string, at: number, max: number, digit: RegExp, base: number): { readonly char: string; readonly next: number } => {
  let end = at
  while (end < text.length && end - at < max && digit.test(text[end]!)) end++
  if (end === at) return { char: "", next: at }
  const value = Number.parseInt(text.slice(at, end), base)
  return { char: value <= 0x10ffff ? String.fromCodePoint(value) : "", next: end }
}

/**
 * Decodes bash's `$'…'` from `at` (the first character after `$'`): the text and the index after
 * the closing quote (the end of the text when there is none).
 */
export const ansiC = (text: string, at: number): { readonly text: string; readonly next: number } => {
  let out = ""
  let i = at
  while (i < text.length && text[i] !== "'") {
    if (text[i] !== "\\" || i + 1 >= text.length) {
      out += text[i++]
      continue
    }
    const e = text[i + 1]!
    const simple = SIMPLE_ESCAPES[e]
    if (simple !== undefined) {
      out += simple
      i += 2
    } else if (e === "x" || e === "u" || e === "U") {
      const read = codePoint(text, i + 2, e === "x" ? 2 : e === "u" ? 4 : 8, HEX, 16)
      out += read.next === i + 2 ? `\\${e}` : read.char
      i = read.next === i + 2 ? i + 2 : read.next
    } else if (OCTAL.test(e)) {
      const read = codePoint(text, i + 1, 3, OCTAL, 8)
      out += read.char
      i = read.next
    } else if (e === "c" && i + 2 < text.length) {
      out += String.fromCharCode(text.charCodeAt(i + 2) & 0x1f)
      i += 3
    } else {
      out += `\\${e}`
      i += 2
    }
  }
  return { text: out, next: i + 1 }
}

/** The tokens of `text` (see the module doc). */
export const tokens = (text: string, generous: boolean): ReadonlyArray<string> => {
  const found: Array<string> = []
  let token = ""
  const cut = (): void => {
    if (token !== "") found.push(token)
    token = ""
  }
  const add = (c: string): void => {
    if (isSpace(c) || CUTS.has(c) || (generous && MORE_CUTS.has(c))) cut()
    else token += c
  }
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (c === "$" && text[i + 1] === "'") {
      const decoded = ansiC(text, i + 2)
      for (const d of decoded.text) add(d)
      i = decoded.next
    } else if (c === "'" || c === "\"") {
      i++
    } else if (c === "\\") {
      // a line continuation joins; any other escaped character is itself
      if (text[i + 1] !== "\n" && i + 1 < text.length) add(text[i + 1]!)
      i += 2
    } else {
      add(c)
      i++
    }
  }
  cut()
  return found
}
