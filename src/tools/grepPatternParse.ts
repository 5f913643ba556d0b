/**
 * JavaScript patterns (without the `u` flag, as `grep` compiles them) parsed into alternatives of
 * sequences of quantified atoms, for `grepPattern.ts`'s translation to ripgrep and its required
 * literals. Anything not understood for certain is `Unsupported`: the pattern is then left to the
 * built-in engine alone.
 */

/** A parsed pattern: alternatives of sequences of quantified atoms. */
export type Alternation = ReadonlyArray<Sequence>
export type Sequence = ReadonlyArray<Item>
interface Item {
  readonly atom: Atom
  readonly min: number
  readonly max: number
}
export type Atom =
  | { readonly _tag: "Char"; readonly code: number }
  /** A class; `ranges` are inclusive code unit pairs. `loose`: it holds a negated shorthand (`[\W\d]`). */
  | { readonly _tag: "Set"; readonly ranges: ReadonlyArray<number>; readonly negated: boolean; readonly loose: boolean }
  | { readonly _tag: "Dot" }
  | { readonly _tag: "Group"; readonly alternation: Alternation }
  | { readonly _tag: "Assert"; readonly kind: "^" | "$" | "b" | "B" }
  /** Understood, but not ripgrep's: lookaround, backreferences. Breaks literals, blocks ripgrep. */
  | { readonly _tag: "Opaque"; readonly lookaround: boolean }

const DIGIT = [0x30, 0x39]
const WORD = [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a]
const SPACE = [
  0x09, 0x0d, 0x20, 0x20, 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f,
  0x3000, 0x3000, 0xfeff, 0xfeff
]
const SHORTHANDS: Record<string, { readonly ranges: ReadonlyArray<number>; readonly negated: boolean }> = {
  d: { ranges: DIGIT, negated: false },
  D: { ranges: DIGIT, negated: true },
  w: { ranges: WORD, negated: false },
  W: { ranges: WORD, negated: true },
  s: { ranges: SPACE, negated: false },
  S: { ranges: SPACE, negated: true }
}
const SYNTAX = new Set("^$\\.*+?()[]{}|/")
/** The largest repetition bound passed on (ripgrep compiles repetitions out). */
const MAX_REPEAT = 1000

export class Unsupported extends Error {}
export const fail = (): never => {
  throw new Unsupported()
}

const isSurrogate = (code: number) => code >= 0xd800 && code <= 0xdfff
const isLineBreak = (code: number) => code === 0x0a || code === 0x0d || code === 0x2028 || code === 0x2029

class Parser {
  i = 0
  readonly source: string
  constructor(source: string) {
    this.source = source
  }

  peek(offset = 0): string | undefined {
    return this.source[this.i + offset]
  }

  alternation(): Alternation {
    const sequences: Array<Sequence> = [this.sequence()]
    while (this.peek() === "|") {
      this.i++
      sequences.push(this.sequence())
    }
    return sequences
  }

  sequence(): Sequence {
    const items: Array<Item> = []
    while (this.i < this.source.length && this.peek() !== "|" && this.peek() !== ")") {
      const atom = this.term()
      const quantifier = this.quantifier()
      if (quantifier === undefined) {
        items.push({ atom, min: 1, max: 1 })
        continue
      }
      if (atom._tag === "Assert") fail()
      items.push({ atom, ...quantifier })
    }
    return items
  }

  /** `{n}`, `{n,}`, `{n,m}` at the cursor, without consuming it; `undefined` when `{` is a plain character. */
  braces(): { readonly min: number; readonly max: number; readonly length: number } | undefined {
    const match = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.i))
    if (match === null) return undefined
    const min = Number(match[1])
    const max = match[2] === undefined ? min : match[3] === "" ? Infinity : Number(match[3])
    return { min, max, length: match[0].length }
  }

  quantifier(): { readonly min: number; readonly max: number } | undefined {
    const c = this.peek()
    let bounds: { min: number; max: number }
    if (c === "*") bounds = { min: 0, max: Infinity }
    else if (c === "+") bounds = { min: 1, max: Infinity }
    else if (c === "?") bounds = { min: 0, max: 1 }
    else if (c === "{") {
      const braces = this.braces()
      if (braces === undefined) return undefined
      if (braces.min > MAX_REPEAT || (braces.max !== Infinity && braces.max > MAX_REPEAT)) fail()
      this.i += braces.length - 1
      bounds = { min: braces.min, max: braces.max }
    } else return undefined
    this.i++
    if (this.peek() === "?") this.i++
    // a second quantifier is a syntax error JavaScript already reported
    if (this.peek() === "*" || this.peek() === "+" || this.peek() === "?" || (this.peek() === "{" && this.braces() !== undefined)) fail()
    return bounds
  }

  term(): Atom {
    const c = this.source[this.i++]!
    switch (c) {
      case "^":
        return { _tag: "Assert", kind: "^" }
      case "$":
        return { _tag: "Assert", kind: "$" }
      case ".":
        return { _tag: "Dot" }
      case "(":
        return this.group()
      case "[":
        return this.set()
      case "\\":
        return this.escape()
      case "*":
      case "+":
      case "?":
        return fail()
      case "{":
        // `{2}` with nothing before it is a syntax error JavaScript already reported; `{x` is a character
        if (/^\{\d+(,\d*)?\}/.test(this.source.slice(this.i - 1))) fail()
        return { _tag: "Char", code: 0x7b }
      default:
        return this.char(c.charCodeAt(0))
    }
  }

  char(code: number): Atom {
    if (isSurrogate(code) || isLineBreak(code)) fail()
    return { _tag: "Char", code }
  }

  group(): Atom {
    let opaque = false
    if (this.peek() === "?") {
      const next = this.peek(1)
      if (next === ":") this.i += 2
      else if (next === "=" || next === "!") {
        this.i += 2
        opaque = true
      } else if (next === "<" && (this.peek(2) === "=" || this.peek(2) === "!")) {
        this.i += 3
        opaque = true
      } else if (next === "<") {
        const name = /^\?<([A-Za-z_$][\w$]*)>/.exec(this.source.slice(this.i))
        if (name === null) fail()
        this.i += name![0].length
      } else fail()
    }
    const alternation = this.alternation()
    if (this.source[this.i++] !== ")") fail()
    return opaque ? { _tag: "Opaque", lookaround: true } : { _tag: "Group", alternation }
  }

  /** The character of an escape that stands for one, inside or outside a class; `undefined` otherwise. */
  characterEscape(c: string): number | undefined {
    switch (c) {
      case "t":
        return 0x09
      case "v":
        return 0x0b
      case "f":
        return 0x0c
      case "0":
        if (/[0-9]/.test(this.peek() ?? "")) fail()
        return 0
      case "x": {
        const hex = /^[0-9a-fA-F]{2}/.exec(this.source.slice(this.i))
        if (hex === null) fail()
        this.i += 2
        return parseInt(hex![0], 16)
      }
      case "u": {
        const hex = /^[0-9a-fA-F]{4}/.exec(this.source.slice(this.i))
        if (hex === null) fail()
        this.i += 4
        return parseInt(hex![0], 16)
      }
      case "c": {
        const letter = this.peek()
        if (letter === undefined || !/[A-Za-z]/.test(letter)) fail()
        this.i++
        return letter!.charCodeAt(0) % 32
      }
    }
    if (SYNTAX.has(c) || (c.charCodeAt(0) < 0x80 && /[^\w]/.test(c))) return c.charCodeAt(0)
    return undefined
  }

  escape(): Atom {
    const c = this.source[this.i++]
    if (c === undefined) return fail()
    if (c === "b" || c === "B") return { _tag: "Assert", kind: c }
    const shorthand = SHORTHANDS[c]
    if (shorthand !== undefined) return { _tag: "Set", ranges: shorthand.ranges, negated: shorthand.negated, loose: false }
    if (/[1-9]/.test(c)) {
      // a backreference (or, without that many groups, an octal escape): read past its digits
      while (/[0-9]/.test(this.peek() ?? "")) this.i++
      return { _tag: "Opaque", lookaround: false }
    }
    if (c === "k") {
      const name = /^<([A-Za-z_$][\w$]*)>/.exec(this.source.slice(this.i))
      if (name === null) fail()
      this.i += name![0].length
      return { _tag: "Opaque", lookaround: false }
    }
    const code = this.characterEscape(c)
    return code === undefined ? fail() : this.char(code)
  }

  set(): Atom {
    const negated = this.peek() === "^"
    if (negated) this.i++
    if (this.peek() === "]") fail()
    const ranges: Array<number> = []
    let loose = false
    /** One member: a character, or a shorthand class (`undefined`, already added). */
    const member = (): number | undefined => {
      const c = this.source[this.i++]
      if (c === undefined) return fail()
      if (c !== "\\") {
        const code = c.charCodeAt(0)
        if (isSurrogate(code) || isLineBreak(code)) fail()
        return code
      }
      const e = this.source[this.i++]
      if (e === undefined) return fail()
      const shorthand = SHORTHANDS[e]
      if (shorthand !== undefined) {
        if (shorthand.negated) loose = true
        else ranges.push(...shorthand.ranges)
        return undefined
      }
      if (e === "b") return 0x08
      if (e === "-") return 0x2d
      const code = this.characterEscape(e)
      if (code === undefined || isSurrogate(code) || isLineBreak(code)) fail()
      return code
    }
    while (this.peek() !== "]") {
      if (this.i >= this.source.length) fail()
      const from = member()
      if (this.peek() === "-" && this.peek(1) !== "]" && this.peek(1) !== undefined) {
        this.i++
        const to = member()
        if (from === undefined || to === undefined || from > to) fail()
        ranges.push(from!, to!)
      } else if (from !== undefined) {
        ranges.push(from, from)
      }
    }
    this.i++
    return { _tag: "Set", ranges, negated, loose }
  }
}

/** The pattern parsed, or `undefined` when it holds anything not understood for certain. */
export const parse = (source: string): Alternation | undefined => {
  try {
    const parser = new Parser(source)
    const alternation = parser.alternation()
    return parser.i === source.length ? alternation : undefined
  } catch (error) {
    if (error instanceof Unsupported) return undefined
    throw error
  }
}
