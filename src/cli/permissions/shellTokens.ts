/**
 * Every word-like token of shell text, for deny and ask rules where the reader (`shellWords.ts`)
 * cannot place the words: an opaque command, a command whose name is computed, code in a string
 * (`sh -c '…'`, `find -exec`, `awk 'BEGIN { system(…) }'`). Any token may start a command, so a
 * rule is matched at each (`commandRules.ts`).
 *
 * Tokens are cut at any blank (every Unicode space and control character) and shell operator; an
 * expansion inside a word is a `*` in its token (`t$()ouch` could be `touch`), and what is inside
 * it is tokens of its own. Cutting `generous`ly, expansions cut too, and so does any other ASCII
 * punctuation but `_`, `.`, `/` and glob characters (`alias.x=!touch`, `{touch,x}`,
 * `${x:-touch}`); a rule's words may hold such punctuation (`build:prod`, `-rf`), so rules are
 * matched against both. Quotes are dropped and backslashes undone, so `t''ouch`, `"touch"` and
 * `\touch` are `touch`; `$'\x74ouch'` is decoded as bash decodes it. One pass, linear in the text.
 */

/** Characters that end a token besides spaces and control characters. */
const CUTS: ReadonlySet<string> = new Set([";", "&", "|", "(", ")", "<", ">", "`", "$"])
/** Whether `c` stays in a token when cutting generously: letters, digits, `_ . /`, glob characters, and any non-ASCII. */
const keptGenerously = (c: string): boolean =>
  (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || "_./*?[]".includes(c) || c > "\u007f"

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

/** An expansion a token is inside of, and the token it interrupted (see `tokens`). */
interface Open {
  readonly close: ")" | "`" | "}"
  readonly text: string
  readonly literal: boolean
}

const isNameChar = (c: string | undefined): boolean =>
  c !== undefined && ((c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || c === "_")

/**
 * The tokens of `text` (see the module doc). Cutting plainly, an expansion inside a word is a `*`
 * in its token (`t$()ouch` is `t*ouch`, which could be `touch`), and what is inside a `$(…)`,
 * backticks or `${…}` is tokens of its own; a token that is only expansions (`$x`) is left out.
 * Cutting generously, every expansion's characters cut.
 */
export const tokens = (text: string, generous: boolean): ReadonlyArray<string> => {
  const found: Array<string> = []
  const open: Array<Open> = []
  let token = ""
  /** Whether any of the token came from the text, not only from expansions. */
  let literal = false
  const cut = (): void => {
    if (literal) found.push(token)
    token = ""
    literal = false
  }
  const add = (c: string): void => {
    if (isSpace(c) || CUTS.has(c) || (generous && !keptGenerously(c))) cut()
    else {
      token += c
      literal = true
    }
  }
  /** Starts an expansion that ends at `close`: its inside is read as tokens of its own. */
  const enter = (close: Open["close"]): void => {
    open.push({ close, text: token, literal })
    token = ""
    literal = false
  }
  /** Ends the innermost expansion: the token it interrupted goes on, with a `*` for its value. */
  const leave = (): void => {
    cut()
    const before = open.pop()!
    token = `${before.text}*`
    literal = before.literal
  }
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    const next = text[i + 1]
    const closing = open.length > 0 ? open[open.length - 1]!.close : undefined
    if (c === "$" && next === "'") {
      const decoded = ansiC(text, i + 2)
      for (const d of decoded.text) add(d)
      i = decoded.next
    } else if (c === "'" || c === "\"") {
      i++
    } else if (c === "\\") {
      // a line continuation joins; any other escaped character is itself
      if (next !== "\n" && i + 1 < text.length) add(next!)
      i += 2
    } else if (generous) {
      add(c)
      i++
    } else if (c === closing) {
      leave()
      i++
    } else if (c === "$" && (next === "(" || next === "{")) {
      enter(next === "(" ? ")" : "}")
      i += 2
    } else if (c === "`") {
      enter("`")
      i++
    } else if (c === "$" && next !== undefined && (isNameChar(next) || "@*#?-$!".includes(next))) {
      // `$x`, `$1`, `$@`: a value (the name is no command); a name goes on, a digit or sign is one character
      i += 2
      if (!(next >= "0" && next <= "9") && isNameChar(next)) while (isNameChar(text[i])) i++
      token += "*"
    } else {
      add(c)
      i++
    }
  }
  cut()
  return found
}
