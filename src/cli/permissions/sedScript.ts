/**
 * What a `sed` command does beyond printing, for allow rules: `-i` edits files in place, the
 * script's `w` and `W` commands and the `w` flag of `s` write files, `e` and the `e` flag of `s`
 * run commands, and a script read from a file (`-f`) cannot be checked. The script is parsed with
 * GNU sed's grammar (which the other seds' scripts are part of); anything the parser cannot follow
 * counts as running code. One pass over the script, no regular expression.
 */
import type { Risk } from "./dangerousOptions.ts"

const SHORT_FLAGS: ReadonlySet<string> = new Set(["n", "E", "r", "s", "u", "z"])
const LONG_FLAGS: ReadonlySet<string> = new Set([
  "--quiet", "--silent", "--regexp-extended", "--separate", "--unbuffered", "--null-data", "--zero-terminated", "--posix",
  "--debug", "--sandbox", "--follow-symlinks", "--binary", "--help", "--version"
])
/** Commands that take nothing, or a number (`l`, `q`, `Q`). */
const SIMPLE: ReadonlySet<string> = new Set(["=", "d", "D", "g", "G", "h", "H", "n", "N", "p", "P", "x", "z", "F", "l", "q", "Q"])

const WRITES: Risk = { kind: "writes", what: "writes files (`sed -i`, or a `w` command or flag)" }
const RUNS: Risk = { kind: "runs", what: "runs commands (an `e` command or flag of `sed`)" }
const unsure = (why: string): Risk => ({ kind: "runs", what: `has a sed script that cannot be checked here (${why})` })

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "9"

/** The risk of one script (see the module doc). */
export const sedScriptRisk = (script: string): Risk | undefined => {
  let i = 0
  const skipBlanks = (): void => {
    while (script[i] === " " || script[i] === "\t") i++
  }
  const digits = (): void => {
    while (isDigit(script[i])) i++
  }
  const toLineEnd = (): void => {
    while (i < script.length && script[i] !== "\n") i++
  }

  /** A bracket expression from `i` (its `[`); false when the delimiter is in it (seds differ there) or it does not close. */
  const bracket = (delimiter: string): boolean => {
    let j = i + 1
    if (script[j] === "^") j++
    if (script[j] === "]") j++
    while (j < script.length && script[j] !== "]") {
      const c = script[j]!
      if (c === "[" && (script[j + 1] === ":" || script[j + 1] === "." || script[j + 1] === "=")) {
        const close = script.indexOf(`${script[j + 1]}]`, j + 2)
        if (close < 0) return false
        j = close + 2
        continue
      }
      if (c === delimiter || c === "\n") return false
      j++
    }
    if (j >= script.length) return false
    i = j + 1
    return true
  }

  /**
   * A part after its opening `delimiter`, up to and past the closing one: a regular expression
   * (where a bracket expression may hold the delimiter) or a replacement, or `y`'s part (where not).
   */
  const delimited = (delimiter: string, brackets: boolean): boolean => {
    while (i < script.length) {
      const c = script[i]!
      if (c === "\\") i += 2
      else if (c === delimiter) {
        i++
        return true
      } else if (c === "\n") return false
      else if (c === "[" && brackets) {
        if (!bracket(delimiter)) return false
      } else i++
    }
    return false
  }
  const regex = (delimiter: string) => delimited(delimiter, true)
  const part = (delimiter: string) => delimited(delimiter, false)

  /** One address, if there is one; false when it cannot be read. */
  const address = (): boolean => {
    const c = script[i]
    if (isDigit(c)) {
      digits()
      if (script[i] === "~") {
        i++
        digits()
      }
    } else if (c === "$") i++
    else if (c === "/" || c === "\\") {
      const delimiter = c === "/" ? "/" : script[i + 1]
      if (delimiter === undefined || delimiter === "\n" || delimiter === "\\") return false
      i += c === "/" ? 1 : 2
      if (!regex(delimiter)) return false
      while (script[i] === "I" || script[i] === "M") i++
    }
    return true
  }

  /** The `s` command from `i` (its delimiter); the risk of its flags. */
  const substitute = (): Risk | "ok" => {
    const delimiter = script[i]
    if (delimiter === undefined || delimiter === "\n" || delimiter === "\\") return unsure("an `s` without a delimiter")
    i++
    if (!regex(delimiter) || !part(delimiter)) return unsure("an `s` it cannot read")
    while (i < script.length) {
      const flag = script[i]!
      if (flag === "e") return RUNS
      if (flag === "w") return WRITES
      if (!("gpiImM".includes(flag) || isDigit(flag))) break
      i++
    }
    return "ok"
  }

  while (i < script.length) {
    const c = script[i]!
    if (c === " " || c === "\t" || c === "\n" || c === ";" || c === "}") {
      i++
      continue
    }
    if (c === "#") {
      toLineEnd()
      continue
    }
    if (!address()) return unsure("an address")
    skipBlanks()
    if (script[i] === ",") {
      i++
      skipBlanks()
      if (script[i] === "+" || script[i] === "~") {
        i++
        digits()
      } else if (!address()) return unsure("an address")
    }
    skipBlanks()
    while (script[i] === "!") {
      i++
      skipBlanks()
    }
    const command = script[i++]
    if (command === undefined) return unsure("an address without a command")
    if (command === "{") continue
    if (command === "w" || command === "W") return WRITES
    if (command === "e") return RUNS
    if (SIMPLE.has(command)) {
      skipBlanks()
      digits()
    } else if (command === ":" || command === "b" || command === "t" || command === "T" || command === "v") {
      while (i < script.length && script[i] !== "\n" && script[i] !== ";") i++
    } else if (command === "a" || command === "i" || command === "c") {
      // text to the end of the line, and on while a line ends with a backslash
      while (i < script.length && script[i] !== "\n") i += script[i] === "\\" ? 2 : 1
    } else if (command === "r" || command === "R") {
      toLineEnd()
    } else if (command === "s") {
      const risk = substitute()
      if (risk !== "ok") return risk
    } else if (command === "y") {
      const delimiter = script[i]
      if (delimiter === undefined || delimiter === "\n" || delimiter === "\\") return unsure("a `y` without a delimiter")
      i++
      if (!part(delimiter) || !part(delimiter)) return unsure("a `y` it cannot read")
    } else return unsure(`the command \`${command}\``)
    skipBlanks()
    const after = script[i]
    if (!(after === undefined || after === ";" || after === "\n" || after === "}" || after === "#")) return unsure(`\`${after}\` after a command`)
  }
  return undefined
}

/** The value of an option that takes one: attached (`-es/a/b/`, `--expression=…`) or the next word. */
const valueOf = (attached: string, next: string | undefined): { readonly value: string; readonly words: 1 | 2 } =>
  attached !== "" ? { value: attached, words: 1 } : { value: next ?? "", words: 2 }

/**
 * What a `sed` command (its words, the program first) does beyond printing, or `undefined`. GNU
 * sed reads options anywhere among the operands, so every word before `--` is looked at.
 */
export const sedRisk = (words: ReadonlyArray<string>): Risk | undefined => {
  const scripts: Array<string> = []
  const operands: Array<string> = []
  let explicit = false
  let j = 1
  while (j < words.length) {
    const word = words[j]!
    if (word === "--") {
      operands.push(...words.slice(j + 1))
      break
    }
    if (!word.startsWith("-") || word === "-") {
      operands.push(word)
      j++
      continue
    }
    if (word.startsWith("--")) {
      const equals = word.indexOf("=")
      const name = equals < 0 ? word : word.slice(0, equals)
      const attached = equals < 0 ? "" : word.slice(equals + 1)
      if (name === "--in-place") return WRITES
      if (name === "--file") return unsure("`--file`: a script in a file")
      if (name === "--expression" || name === "--line-length") {
        const { value, words: taken } = equals < 0 ? valueOf("", words[j + 1]) : { value: attached, words: 1 as const }
        if (name === "--expression") {
          scripts.push(value)
          explicit = true
        }
        j += taken
        continue
      }
      if (!LONG_FLAGS.has(name)) return unsure(`the option \`${name}\``)
      j++
      continue
    }
    let taken: 1 | 2 = 1
    for (let k = 1; k < word.length; k++) {
      const letter = word[k]!
      if (SHORT_FLAGS.has(letter)) continue
      if (letter === "i") return WRITES
      if (letter === "f") return unsure("`-f`: a script in a file")
      if (letter === "e" || letter === "l") {
        const { value, words: used } = valueOf(word.slice(k + 1), words[j + 1])
        if (letter === "e") {
          scripts.push(value)
          explicit = true
        }
        taken = used
        break
      }
      return unsure(`the option \`-${letter}\``)
    }
    j += taken
  }
  if (!explicit && operands.length > 0) scripts.push(operands[0]!)
  // sed joins its `-e` scripts with newlines (a script may end inside a command the next one ends)
  return sedScriptRisk(scripts.join("\n"))
}
