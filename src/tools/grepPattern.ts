/**
 * What `grep` knows of a JavaScript pattern before running it: whether ripgrep can pick the files
 * it matches in (`ripgrepPattern`), and which text every match must contain (`requiredLiterals`),
 * so a file without it is passed by unread by the regex.
 *
 * grep's answer is always JavaScript's: ripgrep only names the files worth reading, and every line
 * shown is matched by the JavaScript pattern (`searchWorkers.ts`). So the translation must never
 * make ripgrep miss a file JavaScript would match in; matching more is only slower. It reads the
 * pattern as JavaScript does without the `u` flag (what grep compiles), and gives up — leaving the
 * search to the built-in engine — on anything it is not sure of: lookaround, backreferences, `\n`,
 * Annex B oddities (`\8`, `\a`, `{` that is almost a quantifier), characters outside the BMP or
 * case-insensitive letters outside ASCII. What remains differs between the two engines only where
 * the translation widens ripgrep's pattern:
 *
 * - JavaScript matches UTF-16 code units and sees each malformed UTF-8 sequence as U+FFFD; ripgrep
 *   matches UTF-8 code points, and raw bytes. So `.` and negated classes, which can match half of
 *   a surrogate pair or a U+FFFD, become "one character, a run of bytes ≥ 0x80, or nothing".
 * - `\d`, `\w`, `\s`, `\b` are JavaScript's (ASCII; `\s` with U+FEFF) spelled out; `i` becomes
 *   explicit ASCII case pairs, which is exactly what JavaScript's non-Unicode `i` does for them
 *   (other characters are taken under `i` only when they have no case at all).
 * - the UTF-8 byte-order mark JavaScript's decoder drops may follow `^`, and the CR of a CRLF line
 *   ending (which grep's lines do not have) may precede `$`.
 */

import { type Alternation, type Atom, fail, parse, type Sequence, Unsupported } from "./grepPatternParse.ts"

/**
 * Whether a character has no other case: then JavaScript's non-Unicode `i` matches it to itself
 * alone (no character's upper case is a character without case; checked over the whole BMP).
 */
const uncased = (code: number) => {
  const c = String.fromCharCode(code)
  return c.toUpperCase() === c && c.toLowerCase() === c
}

/** Whether the characters of `ranges` above ASCII are few and all without case. */
const uncasedAbove0x7f = (ranges: ReadonlyArray<number>): boolean => {
  let count = 0
  for (let r = 0; r < ranges.length; r += 2) {
    for (let code = Math.max(ranges[r]!, 0x80); code <= ranges[r + 1]!; code++) {
      if (++count > 512 || !uncased(code)) return false
    }
  }
  return true
}

const isAsciiLetter = (code: number) => (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a)

/** `ranges` with the other ASCII case of every ASCII letter in them (JavaScript's non-Unicode `i`). */
const withAsciiCases = (ranges: ReadonlyArray<number>): Array<number> => {
  const out = [...ranges]
  for (let r = 0; r < ranges.length; r += 2) {
    for (const [from, to, shift] of [[0x41, 0x5a, 0x20], [0x61, 0x7a, -0x20]] as const) {
      const lo = Math.max(ranges[r]!, from)
      const hi = Math.min(ranges[r + 1]!, to)
      if (lo <= hi) out.push(lo + shift, hi + shift)
    }
  }
  return out
}

const hex = (code: number) => `\\x{${code.toString(16).toUpperCase()}}`
const literal = (code: number) => (/[0-9A-Za-z]/.test(String.fromCharCode(code)) ? String.fromCharCode(code) : hex(code))

/** `ranges` without the code units in [lo, hi]. */
const without = (ranges: ReadonlyArray<number>, lo: number, hi: number): Array<number> => {
  const out: Array<number> = []
  for (let r = 0; r < ranges.length; r += 2) {
    const from = ranges[r]!
    const to = ranges[r + 1]!
    if (to < lo || from > hi) out.push(from, to)
    else {
      if (from < lo) out.push(from, lo - 1)
      if (to > hi) out.push(hi + 1, to)
    }
  }
  return out
}

const overlaps = (ranges: ReadonlyArray<number>, lo: number, hi: number): boolean => {
  for (let r = 0; r < ranges.length; r += 2) if (ranges[r]! <= hi && ranges[r + 1]! >= lo) return true
  return false
}

const classBody = (ranges: ReadonlyArray<number>) => {
  let body = ""
  for (let r = 0; r < ranges.length; r += 2) body += ranges[r] === ranges[r + 1] ? hex(ranges[r]!) : `${hex(ranges[r]!)}-${hex(ranges[r + 1]!)}`
  return body
}

/** One character JavaScript may see as one or two code units, a U+FFFD for bytes that are not UTF-8, or nothing. */
const ANY_BYTES = "(?-u:[\\x80-\\xFF])+"

const emitAtom = (atom: Atom, ignoreCase: boolean): string => {
  switch (atom._tag) {
    case "Char": {
      if (ignoreCase && atom.code >= 0x80 && !uncased(atom.code)) return fail()
      if (ignoreCase && isAsciiLetter(atom.code)) return `[${String.fromCharCode(atom.code)}${String.fromCharCode(atom.code ^ 0x20)}]`
      return literal(atom.code)
    }
    case "Dot":
      return `(?:[^\\n\\r]|${ANY_BYTES})?`
    case "Set": {
      if (atom.loose) return `(?:[^\\n]|${ANY_BYTES})?`
      if (atom.negated) {
        // excluding fewer characters only widens the match: drop what ripgrep cannot exclude
        let excluded = ignoreCase ? withAsciiCases(atom.ranges) : [...atom.ranges]
        if (ignoreCase) excluded = without(excluded, 0x80, 0x10ffff)
        excluded = without(without(excluded, 0xd800, 0xdfff), 0x0a, 0x0a)
        return `(?:[^\\n${classBody(excluded)}]|${ANY_BYTES})?`
      }
      if (ignoreCase && !uncasedAbove0x7f(atom.ranges)) fail()
      const included = without(ignoreCase ? withAsciiCases(atom.ranges) : atom.ranges, 0x0a, 0x0a)
      // ripgrep has no surrogates, and its U+FFFD is not JavaScript's (which also stands for bad bytes)
      if (included.length === 0 || overlaps(included, 0xd800, 0xdfff) || overlaps(included, 0xfffd, 0xfffd)) fail()
      return `[${classBody(included)}]`
    }
    case "Group":
      return `(?:${emitAlternation(atom.alternation, ignoreCase)})`
    case "Assert":
      return atom.kind === "^" ? "^(?:\\x{FEFF})?" : atom.kind === "$" ? "\\r?$" : atom.kind === "b" ? "(?-u:\\b)" : "(?-u:\\B)"
    case "Opaque":
      return fail()
  }
}

const emitQuantifier = (min: number, max: number) =>
  min === 1 && max === 1 ? "" :
  min === 0 && max === Infinity ? "*" :
  min === 1 && max === Infinity ? "+" :
  min === 0 && max === 1 ? "?" :
  max === Infinity ? `{${min},}` :
  min === max ? `{${min}}` :
  `{${min},${max}}`

const emitAlternation = (alternation: Alternation, ignoreCase: boolean): string =>
  alternation.map((sequence) => sequence.map((item) => emitAtom(item.atom, ignoreCase) + emitQuantifier(item.min, item.max)).join("")).join("|")

/**
 * A pattern for ripgrep's default engine that matches on every line the JavaScript pattern
 * `source` (flags `i` when `ignoreCase`, never `u`) matches on, as grep splits and decodes lines;
 * `undefined` when the pattern is not one this is sure of (see the module doc).
 */
export const ripgrepPattern = (source: string, ignoreCase: boolean): string | undefined => {
  const parsed = parse(source)
  if (parsed === undefined) return undefined
  try {
    return emitAlternation(parsed, ignoreCase)
  } catch (error) {
    if (error instanceof Unsupported) return undefined
    throw error
  }
}

/** A choice of texts one of which every match contains, best first by the shortest of them. */
type Literals = ReadonlyArray<string>

const MAX_ALTERNATIVES = 16

const score = (literals: Literals | undefined) => literals === undefined ? 0 : Math.min(...literals.map((text) => text.length))

const literalsOfAlternation = (alternation: Alternation): Literals | undefined => {
  const all: Array<string> = []
  for (const sequence of alternation) {
    const best = literalsOfSequence(sequence)
    if (best === undefined) return undefined
    all.push(...best)
  }
  return all.length > MAX_ALTERNATIVES ? undefined : [...new Set(all)]
}

const literalsOfSequence = (sequence: Sequence): Literals | undefined => {
  let best: Literals | undefined
  let run = ""
  const offer = (candidate: Literals | undefined) => {
    if (candidate !== undefined && score(candidate) > score(best)) best = candidate
  }
  const endRun = () => {
    if (run !== "") offer([run])
    run = ""
  }
  for (const { atom, max, min } of sequence) {
    if (atom._tag === "Char" && min >= 1 && atom.code !== 0xfffd && atom.code !== 0xfeff) {
      run += String.fromCharCode(atom.code)
      if (max !== 1) endRun()
    } else if (atom._tag === "Group" && min >= 1) {
      endRun()
      offer(literalsOfAlternation(atom.alternation))
    } else if (atom._tag === "Assert") {
      // zero-width: the characters on both sides are still adjacent
    } else {
      endRun()
    }
  }
  endRun()
  return best
}

/**
 * Texts of which every match of `source` contains at least one (as UTF-16 code units, so as UTF-8
 * bytes in the file), or `undefined` when there are none worth looking for. With `ignoreCase`,
 * only texts whose letters are ASCII (their other cases are ASCII too). Texts holding U+FFFD or
 * U+FEFF are never given: the decoder makes those from other bytes.
 */
export const requiredLiterals = (source: string, ignoreCase: boolean): Literals | undefined => {
  const parsed = parse(source)
  if (parsed === undefined) return undefined
  const literals = literalsOfAlternation(parsed)
  if (literals === undefined || literals.length === 0) return undefined
  if (literals.some((text) => text === "" || /[\uFFFD\uFEFF]/.test(text))) return undefined
  if (ignoreCase && literals.some((text) => [...text].some((c) => c.charCodeAt(0) >= 0x80 && !uncased(c.charCodeAt(0))))) return undefined
  return literals
}

const hasLookaround = (alternation: Alternation): boolean =>
  alternation.some((sequence) =>
    sequence.some(({ atom }) =>
      atom._tag === "Opaque" ? atom.lookaround : atom._tag === "Group" ? hasLookaround(atom.alternation) : false
    )
  )

/**
 * Whether lines matching `source` can be found by running it, with the `m` flag, over a whole
 * text: every match on a line is then a match in the text too (`^` and `$` hold at line ends,
 * `\b` sees the same non-word character beyond them), so the lines where the text's matches start
 * are the only ones to try. Not with lookaround, which could look past a line's end.
 */
export const scansWholeText = (source: string): boolean => {
  const parsed = parse(source)
  return parsed !== undefined && !hasLookaround(parsed)
}
