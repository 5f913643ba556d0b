/**
 * One word of a shell command as `shellWords.ts` reads it: its text with the quotes removed, and
 * what the shell will still do to it when the command runs — expand a value into it, make other
 * words of a glob, or turn it into an option.
 */

/** Marks where an expansion's value lands in a word: never typed in a rule, so nothing matches it by accident. */
export const SUBSTITUTION = "\u0000"

/** One word as the shell will see it, and what the reader cannot know about it. */
export interface Word {
  /** Quotes and escapes removed; each expansion (`$x`, `${x}`, `$(…)`, backticks) is `SUBSTITUTION`. */
  readonly text: string
  /** It holds an expansion: its value is known only when the command runs. */
  readonly dynamic: boolean
  /** It holds unquoted glob or brace characters (`*`, `?`, `[…]`, `{a,b}`): the shell may make other words of it. */
  readonly pattern: boolean
  /** What it becomes may be an option: it starts with an expansion, or it is a pattern starting with `-` or a glob. */
  readonly leading: boolean
}

const isDigit = (c: string): boolean => c >= "0" && c <= "9"

/** Builds one word, noting what in it the shell expands. */
export class WordBuilder {
  text = ""
  started = false
  quoted = false
  dynamic = false
  private star = false
  /** 0: no `[`; 1: `[` seen; 2: `]` after it. */
  private bracket = 0
  /** 0: no `{`; 1: `{` seen; 2: `,` or `..` after it; 3: `}` after that. */
  private brace = 0
  private first: "expansion" | "star" | "bracket" | "brace" | undefined
  private previous = ""

  private decided = false

  /** Notes what the word's first character is; `empty` content (a `""` in front) decides nothing. */
  private begin(kind: typeof this.first, empty = false): void {
    if (!this.decided && !empty) {
      this.first = kind
      this.decided = true
    }
    this.started = true
  }

  /** Quoted or escaped text: taken as it is. */
  literal(text: string): void {
    this.begin(undefined, text === "")
    this.quoted = true
    this.text += text
    this.previous = ""
  }

  /** An expansion, whose value is known only when it runs. */
  expansion(): void {
    this.begin("expansion")
    this.dynamic = true
    this.text += SUBSTITUTION
    this.previous = ""
  }

  /** A run of unquoted ordinary characters: globs and braces in it are noted. */
  unquoted(run: string): void {
    for (const c of run) {
      if (c === "*" || c === "?") {
        this.begin("star")
        this.star = true
      } else if (c === "[") {
        this.begin("bracket")
        if (this.bracket === 0) this.bracket = 1
      } else if (c === "{") {
        this.begin("brace")
        if (this.brace === 0) this.brace = 1
      } else {
        this.begin(undefined)
        if (c === "]" && this.bracket === 1) this.bracket = 2
        else if (this.brace === 1 && (c === "," || (c === "." && this.previous === "."))) this.brace = 2
        else if (c === "}" && this.brace === 2) this.brace = 3
      }
      this.previous = c
    }
    this.text += run
  }

  get pattern(): boolean {
    return this.star || this.bracket === 2 || this.brace === 3
  }

  /** Whether it is a descriptor number, as in `2>file`. */
  get isDescriptor(): boolean {
    return !this.quoted && !this.dynamic && this.text.length > 0 && [...this.text].every(isDigit)
  }

  word(): Word {
    const pattern = this.pattern
    const leading = this.first === "expansion" ||
      (pattern && (this.first === "star" || this.first === "bracket" || this.first === "brace" || this.text.startsWith("-")))
    return { text: this.text, dynamic: this.dynamic, pattern, leading }
  }
}
