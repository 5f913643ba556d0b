/**
 * Command lines typed as for Claude Code, read as the loop's: `agent-loop -p PROMPT` (print mode,
 * with no command named) is `agent-loop run PROMPT`, `-r KEY` / `--resume KEY` resume KEY (the
 * parser takes an optional value only as `--resume=KEY`), and the list flags that take several words
 * (`--allowedTools "Bash(git log:*)" "Read"`) take them into one value, as the flag parser takes
 * one word per flag. Plain data in, plain data out: it runs before the parser.
 */

/** The flags whose value may be several words, each a tool or a rule. */
const LIST_FLAGS = new Set(["--allowedTools", "--allowed-tools", "--disallowedTools", "--disallowed-tools"])

/** A word that is a tool or a rule (`Read`, `Bash(git log:*)`, `mcp__github__search`, `exec`), not a prompt. */
const isRuleWord = (word: string): boolean =>
  /^(?:[A-Z][A-Za-z]*|mcp__[\w-]+|[a-z]+_[a-z_]+|exec|grep|glob)(?:\(.*\))?$/s.test(word)

/** The commands a first word may name; anything else after `-p` is the prompt. */
const isFlag = (word: string): boolean => word.startsWith("-") && word !== "-"

/**
 * `args` (after the script) as the loop's parser reads them: `-p`/`--print` before any command
 * names `run`; a list flag's following rule words join its value with commas.
 */
export const rewrite = (args: ReadonlyArray<string>, commands: ReadonlyArray<string>): ReadonlyArray<string> => {
  const out: Array<string> = []
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!
    if (word === "--") {
      out.push(...args.slice(i))
      break
    }
    // `--resume KEY` as Claude Code reads it (its value is optional, so the parser takes only `--resume=KEY`)
    if ((word === "-r" || word === "--resume") && i + 1 < args.length && !args[i + 1]!.startsWith("-")) {
      out.push(`--resume=${args[++i]!}`)
      continue
    }
    if (LIST_FLAGS.has(word) && i + 1 < args.length) {
      const values = [args[++i]!]
      while (i + 1 < args.length && isRuleWord(args[i + 1]!)) values.push(args[++i]!)
      out.push(word, values.join(","))
      continue
    }
    out.push(word)
  }
  // what follows `--` is operands, never flags
  const end = out.indexOf("--")
  const flagged = end === -1 ? out : out.slice(0, end)
  const first = flagged.find((word) => !isFlag(word))
  const print = flagged.includes("-p") || flagged.includes("--print")
  return print && (first === undefined || !commands.includes(first)) ? ["run", ...out] : out
}
