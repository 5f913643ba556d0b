/**
 * A small, careful reader of `sh` command lines, for permission rules on `exec`: it splits a
 * command into the simple commands it runs (at `&&`, `||`, `;`, `&`, pipes, newlines and
 * parentheses, and inside `$(...)`, backticks and `<(...)`), each as its words with the quotes
 * removed. It is one left-to-right pass over the text (every character is looked at once; nesting
 * is bounded), with no regular expression, so hostile text costs linear time.
 *
 * It reads what matters to decide and nothing more: a construct it does not follow (a here
 * document, arithmetic, an unterminated quote, nesting past the bound) makes the whole command
 * opaque, and an opaque command is never allowed by a rule (it asks).
 */

/** One simple command: its words, quotes removed; a word holding a substitution has `\0` in its place. */
export interface SimpleCommand {
  readonly words: ReadonlyArray<string>
  /** Whether it redirects output to a file (`>`, `>>`, `&>`, not `/dev/null` nor a descriptor). */
  readonly writesFile: boolean
}

/** What a command line runs, or why it cannot be read. */
export type Reading =
  | { readonly _tag: "Commands"; readonly commands: ReadonlyArray<SimpleCommand>; readonly compound: boolean }
  | { readonly _tag: "Opaque"; readonly reason: string }

/** Marks where a substitution's output lands in a word: never typed in a rule, so nothing matches it by accident. */
export const SUBSTITUTION = "\u0000"

/** How deep substitutions may nest before the command is opaque. */
const MAX_DEPTH = 16

class Opaque {
  readonly reason: string
  constructor(reason: string) {
    this.reason = reason
  }
}

const isBlank = (c: string) => c === " " || c === "\t"
/** Characters the reader must look at one by one; any other is part of a word. */
const SPECIAL = new Set([" ", "\t", "\r", "\n", "\\", "'", "\"", "`", "$", "<", ">", "(", ")", ";", "&", "|", "#"])
const isSeparator = (c: string) => c === ";" || c === "&" || c === "|" || c === "\n" || c === "(" || c === ")"

/** Reads `text` (see the module doc). */
export const read = (text: string): Reading => {
  const commands: Array<SimpleCommand> = []
  let separators = 0
  let i = 0

  /**
   * Reads commands until `end` (`)` or a backtick) at this depth, or the end of the text at depth 0.
   * Returns when the closing character has been consumed.
   */
  const commandsUntil = (end: ")" | "`" | undefined, depth: number): void => {
    if (depth > MAX_DEPTH) throw new Opaque("substitutions nest too deep")
    let words: Array<string> = []
    let word = ""
    let inWord = false
    let writesFile = false
    /** The next word is a redirection's target: checked, not kept. */
    let target: "out" | "in" | undefined
    let parens = 0

    const endWord = () => {
      if (!inWord) return
      if (target === "out") {
        if (word !== "/dev/null") writesFile = true
      } else if (target === undefined) words.push(word)
      target = undefined
      word = ""
      inWord = false
    }
    const endCommand = () => {
      endWord()
      if (target !== undefined) throw new Opaque("a redirection without a target")
      if (words.length > 0) commands.push({ words, writesFile })
      words = []
      writesFile = false
    }
    const substitution = (close: ")" | "`") => {
      separators++
      commandsUntil(close, depth + 1)
      word += SUBSTITUTION
      inWord = true
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
      if (c === "\\") {
        const next = text[i + 1]
        if (next === undefined) throw new Opaque("a trailing backslash")
        i += 2
        if (next === "\n") continue
        word += next
        inWord = true
        continue
      }
      if (c === "'") {
        const close = text.indexOf("'", i + 1)
        if (close < 0) throw new Opaque("an unterminated quote")
        word += text.slice(i + 1, close)
        inWord = true
        i = close + 1
        continue
      }
      if (c === "\"") {
        i++
        inWord = true
        while (true) {
          const d = text[i]
          if (d === undefined) throw new Opaque("an unterminated quote")
          if (d === "\"") {
            i++
            break
          }
          if (d === "\\") {
            const next = text[i + 1]
            if (next === undefined) throw new Opaque("an unterminated quote")
            if (next === "$" || next === "`" || next === "\"" || next === "\\") word += next
            else if (next !== "\n") word += d + next
            i += 2
            continue
          }
          if (d === "`") {
            i++
            substitution("`")
            continue
          }
          if (d === "$" && text[i + 1] === "(") {
            if (text[i + 2] === "(") throw new Opaque("arithmetic expansion")
            i += 2
            substitution(")")
            continue
          }
          if (d === "$" && text[i + 1] === "{") {
            i = parameter(i)
            word += SUBSTITUTION
            continue
          }
          word += d
          i++
        }
        continue
      }
      if (c === "`") {
        i++
        substitution("`")
        continue
      }
      if (c === "$" && text[i + 1] === "(") {
        if (text[i + 2] === "(") throw new Opaque("arithmetic expansion")
        i += 2
        substitution(")")
        continue
      }
      if (c === "$" && text[i + 1] === "{") {
        i = parameter(i)
        word += SUBSTITUTION
        inWord = true
        continue
      }
      if ((c === "<" || c === ">") && text[i + 1] === "(") {
        i += 2
        substitution(")")
        continue
      }
      if (c === "#" && !inWord) {
        while (i < text.length && text[i] !== "\n") i++
        continue
      }
      if (c === ">" || c === "<" || (c === "&" && text[i + 1] === ">")) {
        // a descriptor number right before it (`2>`) belongs to the redirection, not to the words
        if (inWord && /^[0-9]+$/.test(word)) {
          word = ""
          inWord = false
        }
        endWord()
        i = redirection(i, (kind) => {
          target = kind === "file-out" ? "out" : kind === "file-in" ? "in" : undefined
        })
        continue
      }
      if (isSeparator(c)) {
        if (c === "(") parens++
        else if (c === ")") parens = Math.max(0, parens - 1)
        separators++
        endCommand()
        i++
        continue
      }
      if (isBlank(c) || c === "\r") {
        endWord()
        i++
        continue
      }
      // a run of ordinary characters is taken at once
      let j = i + 1
      while (j < text.length && !SPECIAL.has(text[j]!)) j++
      word += text.slice(i, j)
      inWord = true
      i = j
    }
    if (end !== undefined) throw new Opaque(end === "`" ? "an unterminated backtick" : "an unterminated $(")
    endCommand()
  }

  /** Skips `${...}` from `at` (its `$`); one with a substitution inside is opaque. Returns the index after it. */
  const parameter = (at: number): number => {
    for (let j = at + 2; j < text.length; j++) {
      const d = text[j]!
      if (d === "}") return j + 1
      if (d === "`" || d === "(" || d === "{" || d === "\\" || d === "'" || d === "\"") throw new Opaque("a complex ${...} expansion")
    }
    throw new Opaque("an unterminated ${")
  }

  /**
   * Reads a redirection operator at `at` and says what it does: to a descriptor (`>&2`, `2>&1`),
   * to or from a file (its target is the next word), or a here document (opaque).
   */
  const redirection = (at: number, kind: (k: "fd" | "file-out" | "file-in" | "out") => void): number => {
    let j = at
    if (text[j] === "&") j++ // &> and &>>
    const op = text[j]!
    j++
    if (op === "<" && text[j] === "<") throw new Opaque("a here document")
    if (op === ">" && (text[j] === ">" || text[j] === "|")) j++
    if (op === "<" && text[j] === ">") j++ // <> opens the file for writing too
    if (text[j] === "&") {
      // to a descriptor: digits or `-`
      j++
      while (j < text.length && ((text[j]! >= "0" && text[j]! <= "9") || text[j] === "-")) j++
      kind("fd")
      return j
    }
    kind(op === ">" || text[j - 1] === ">" ? "file-out" : "file-in")
    while (j < text.length && isBlank(text[j]!)) j++
    return j
  }

  try {
    commandsUntil(undefined, 0)
  } catch (error) {
    if (error instanceof Opaque) return { _tag: "Opaque", reason: error.reason }
    throw error
  }
  return { _tag: "Commands", commands, compound: commands.length > 1 || separators > 0 }
}
