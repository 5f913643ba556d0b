/**
 * A small, careful reader of `sh` command lines, for permission rules on `exec`: it splits a
 * command into the simple commands it runs (at `&&`, `||`, `;`, `&`, pipes, newlines and
 * parentheses, and inside `$(...)` and backticks), each as its words with the quotes removed. It
 * is one left-to-right pass over the text (every character is looked at once; nesting is
 * bounded), so hostile text costs linear time.
 *
 * It splits words as dash and bash both do: only space and tab separate words and a newline ends
 * a command; `\r`, `\v`, `\f` and non-ASCII spaces are characters of a word, and `#` starts a
 * comment only at the start of a word (a NUL, which `sh -c` cannot be given, makes it opaque). The
 * words are `Word`s (`shellWord.ts`). It reads what matters to decide and nothing more: a
 * construct it does not model (a here document, arithmetic, `case`, `for`, a function, process
 * substitution, `$'…'`, an unterminated quote, nesting past the bound) makes the whole command
 * opaque. An opaque command is never allowed by a rule, and deny rules look at every word of it
 * (see `commandRules.ts`).
 */
import { type Word, WordBuilder } from "./shellWord.ts"

export { SUBSTITUTION, type Word } from "./shellWord.ts"

/** One simple command. */
export interface SimpleCommand {
  /** The words' texts (see `Word.text`). */
  readonly words: ReadonlyArray<string>
  readonly details: ReadonlyArray<Word>
  /** Whether it redirects output to a file (`>`, `>>`, `>|`, `<>`, `&>`, `>&FILE`), other than `/dev/null`. */
  readonly writesFile: boolean
}

/** What a command line runs, or why it cannot be read. */
export type Reading =
  | { readonly _tag: "Commands"; readonly commands: ReadonlyArray<SimpleCommand>; readonly compound: boolean }
  | { readonly _tag: "Opaque"; readonly reason: string }

/** How deep substitutions may nest before the command is opaque. */
const MAX_DEPTH = 16

/** Words that run nothing themselves at the start of a command (`if`, `then`, `{`, `!` …): the command is what follows. */
export const RESERVED: ReadonlySet<string> = new Set(["{", "}", "!", "if", "then", "elif", "else", "fi", "do", "done", "while", "until"])

/** Reserved words of constructs the reader does not model: a command starting with one is opaque. */
const UNMODELED: ReadonlySet<string> = new Set(["case", "esac", "for", "select", "in", "function", "[[", "]]", "(("])

class Opaque {
  readonly reason: string
  constructor(reason: string) {
    this.reason = reason
  }
}

const isBlank = (c: string | undefined): boolean => c === " " || c === "\t"
const isDigit = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "9"
const isNameStart = (c: string | undefined): boolean => c !== undefined && (c === "_" || (c >= "a" && c <= "z") || (c >= "A" && c <= "Z"))
const isNameChar = (c: string | undefined): boolean => isNameStart(c) || isDigit(c)
/** Characters the reader must look at one by one; any other is part of a word. */
const SPECIAL = new Set([" ", "\t", "\n", "\\", "'", "\"", "`", "$", "<", ">", "(", ")", ";", "&", "|", "#", "\u0000"])
/** Where a word ends, for a redirection's `&N`. */
const ENDS_WORD = new Set([" ", "\t", "\n", ";", "&", "|", "<", ">", "(", ")"])

/** Reads `text` (see the module doc). */
export const read = (text: string): Reading => {
  const commands: Array<SimpleCommand> = []
  let separators = 0
  let i = 0

  /**
   * Reads commands until `end` (`)` or a backtick) at this depth, or the end of the text at depth
   * 0; returns once the closing character is consumed. `inQuotes`: a backtick inside `"…"`.
   */
  const commandsUntil = (end: ")" | "`" | undefined, depth: number, inQuotes: boolean): void => {
    if (depth > MAX_DEPTH) throw new Opaque("substitutions nest too deep")
    let words: Array<Word> = []
    let builder = new WordBuilder()
    let writesFile = false
    let redirected = false
    /** The next word is a redirection's target: checked, not kept. */
    let target: "out" | "in" | undefined
    let parens = 0

    const endWord = (): void => {
      if (!builder.started) return
      const word = builder.word()
      if (target === "out") {
        if (word.text !== "/dev/null" || word.pattern) writesFile = true
      } else if (target === undefined) words.push(word)
      target = undefined
      builder = new WordBuilder()
    }
    const endCommand = (): void => {
      endWord()
      if (target !== undefined) throw new Opaque("a redirection without a target")
      const first = words.find((word) => !RESERVED.has(word.text))
      if (first !== undefined && UNMODELED.has(first.text)) throw new Opaque(`\`${first.text}\``)
      if (words.length > 0 || redirected) {
        commands.push({ words: words.map((word) => word.text), details: words, writesFile })
      }
      words = []
      writesFile = false
      redirected = false
    }
    const substitution = (close: ")" | "`", quoted: boolean): void => {
      separators++
      commandsUntil(close, depth + 1, quoted)
      builder.expansion()
    }

    /** `$` at `i`: an expansion, or a plain `$`. */
    const dollar = (quoted: boolean): void => {
      const next = text[i + 1]
      if (next === "(") {
        if (text[i + 2] === "(") throw new Opaque("arithmetic expansion")
        i += 2
        substitution(")", quoted)
      } else if (next === "{") {
        i = parameter(i)
        builder.expansion()
      } else if (next === "[") {
        throw new Opaque("arithmetic expansion")
      } else if (!quoted && (next === "'" || next === "\"")) {
        throw new Opaque(`\`$${next}…${next}\` quoting, which dash and bash read differently`)
      } else if (isNameStart(next)) {
        i += 2
        while (isNameChar(text[i])) i++
        builder.expansion()
      } else if (isDigit(next) || (next !== undefined && "@*#?-$!".includes(next))) {
        i += 2
        builder.expansion()
      } else {
        i++
        builder.literal("$")
      }
    }

    /** `"…"` from `i` (its opening quote). */
    const doubleQuoted = (): void => {
      i++
      builder.literal("")
      while (true) {
        const d = text[i]
        if (d === undefined) throw new Opaque("an unterminated quote")
        if (d === "\"") {
          i++
          return
        }
        if (d === "\\") {
          const next = text[i + 1]
          if (next === undefined) throw new Opaque("an unterminated quote")
          if (end === "`") throw new Opaque("a backslash inside backquotes")
          if (next === "$" || next === "`" || next === "\"" || next === "\\") builder.literal(next)
          else if (next !== "\n") builder.literal(d + next)
          i += 2
        } else if (d === "`") {
          i++
          substitution("`", true)
        } else if (d === "$") {
          dollar(true)
        } else if (d === "\u0000") {
          throw new Opaque("a NUL character")
        } else {
          builder.literal(d)
          i++
        }
      }
    }

    while (i < text.length) {
      const c = text[i]!
      if (end === "`" && c === "`") {
        i++
        endCommand()
        return
      }
      if (end === ")" && c === ")" && parens === 0) {
        i++
        endCommand()
        return
      }
      if (c === "\u0000") throw new Opaque("a NUL character")
      if (c === "\\") {
        const next = text[i + 1]
        if (next === undefined) throw new Opaque("a trailing backslash")
        // inside backquotes a backslash quotes once more when the inner command is read: not modelled
        if (end === "`" && (next === "`" || next === "$" || next === "\\" || next === "\"")) throw new Opaque("a backslash inside backquotes")
        i += 2
        if (next !== "\n") builder.literal(next)
        continue
      }
      if (c === "'") {
        const close = text.indexOf("'", i + 1)
        if (close < 0) throw new Opaque("an unterminated quote")
        builder.literal(text.slice(i + 1, close))
        i = close + 1
        continue
      }
      if (c === "\"") {
        if (inQuotes && end === "`") throw new Opaque("quotes inside backquotes inside quotes")
        doubleQuoted()
        continue
      }
      if (c === "`") {
        i++
        substitution("`", false)
        continue
      }
      if (c === "$") {
        dollar(false)
        continue
      }
      if ((c === "<" || c === ">") && text[i + 1] === "(") throw new Opaque("process substitution")
      if (c === "#" && !builder.started) {
        while (i < text.length && text[i] !== "\n") i++
        continue
      }
      if (c === ">" || c === "<" || (c === "&" && text[i + 1] === ">")) {
        // a descriptor number right before it (`2>`) belongs to the redirection, not to the words
        if (builder.isDescriptor) builder = new WordBuilder()
        endWord()
        if (target !== undefined) throw new Opaque("a redirection without a target")
        redirected = true
        const redirect = redirection(i)
        i = redirect.next
        target = redirect.kind === "file-out" ? "out" : redirect.kind === "file-in" ? "in" : undefined
        continue
      }
      if (c === "(") {
        // `(` starts a subshell only where a command starts (after reserved words: `if (…)`, `! (…)`)
        if (builder.started || words.some((word) => !RESERVED.has(word.text))) throw new Opaque("a function definition or a `(` inside a command")
        if (text[i + 1] === "(") throw new Opaque("arithmetic")
        parens++
        separators++
        endCommand()
        i++
        continue
      }
      if (c === ")") {
        if (parens === 0) throw new Opaque("an unbalanced `)`")
        parens--
        separators++
        endCommand()
        i++
        continue
      }
      if (c === ";" || c === "&" || c === "|" || c === "\n") {
        if (c === ";" && text[i + 1] === ";") throw new Opaque("`;;`")
        separators++
        endCommand()
        i++
        continue
      }
      if (isBlank(c)) {
        endWord()
        i++
        continue
      }
      // a run of ordinary characters is taken at once
      let j = i + 1
      while (j < text.length && !SPECIAL.has(text[j]!)) j++
      builder.unquoted(text.slice(i, j))
      i = j
    }
    if (end !== undefined) throw new Opaque(end === "`" ? "an unterminated backtick" : "an unterminated $(")
    if (parens > 0) throw new Opaque("an unterminated `(`")
    endCommand()
  }

  /** Skips `${...}` from `at` (its `$`); one with a substitution or quotes inside is opaque. Returns the index after it. */
  const parameter = (at: number): number => {
    for (let j = at + 2; j < text.length; j++) {
      const d = text[j]!
      if (d === "}") return j + 1
      if (d === "`" || d === "(" || d === "{" || d === "\\" || d === "'" || d === "\"" || d === "$" || d === "[") {
        throw new Opaque("a complex ${...} expansion")
      }
    }
    throw new Opaque("an unterminated ${")
  }

  /**
   * Reads a redirection operator at `at`: to a descriptor (`>&2`, `2>&1`, `>&-`), to or from a
   * file (its target is the next word; `>&FILE` and `&>FILE` write stdout and stderr there), or a
   * here document (opaque).
   */
  const redirection = (at: number): { readonly next: number; readonly kind: "fd" | "file-out" | "file-in" } => {
    let j = at
    const both = text[j] === "&"
    if (both) j++ // &> and &>>
    const op = text[j]!
    j++
    if (op === "<" && text[j] === "<") throw new Opaque("a here document")
    let writes = op === ">"
    if (op === ">" && (text[j] === ">" || text[j] === "|")) j++
    else if (op === "<" && text[j] === ">") {
      j++
      writes = true
    }
    if (!both && text[j] === "&") {
      j++
      let k = j
      while (isBlank(text[k])) k++
      let d = k
      while (isDigit(text[d])) d++
      if (d === k && text[d] === "-") d++
      // `>&2`, `>&-`: a descriptor; anything else (`>&out.txt`) is a file
      if (d > k && (d >= text.length || ENDS_WORD.has(text[d]!))) return { next: d, kind: "fd" }
    }
    while (isBlank(text[j])) j++
    return { next: j, kind: writes ? "file-out" : "file-in" }
  }

  try {
    commandsUntil(undefined, 0, false)
  } catch (error) {
    if (error instanceof Opaque) return { _tag: "Opaque", reason: error.reason }
    throw error
  }
  return { _tag: "Commands", commands, compound: commands.length > 1 || separators > 0 }
}
