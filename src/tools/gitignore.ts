/**
 * `.gitignore` files as git reads them, for the walks of `grep` and `glob`: each file's patterns
 * apply below its own directory, a deeper file's over a shallower one's, and within a file the
 * last pattern that matches decides (`!` re-includes). Only the workspace's own `.gitignore` files
 * count: not `.git/info/exclude`, not the user's global excludes, not files above the workspace.
 *
 * Patterns are git's (gitignore(5)): `#` comments, blank lines, trailing spaces dropped unless
 * escaped, `\` escapes, a trailing `/` for directories only, a `/` at the start or in the middle
 * anchoring the pattern to the file's directory (otherwise it matches a name at any depth), `*`,
 * `?` and `[...]` within one name, `**` for any number of directories. Matching goes through
 * `effect/Glob`, whose cost is bounded by the pattern's length times the path's (a repository's
 * `.gitignore` is not trusted to be kind).
 */
import * as Glob from "effect/Glob"

/** One pattern of a `.gitignore` file. */
interface IgnoreRule {
  readonly negate: boolean
  readonly directoryOnly: boolean
  /** Matched against the path relative to the file's directory; otherwise against the name alone. */
  readonly anchored: boolean
  /** How it matches: a plain name or path, `*` then a plain ending, or a glob. */
  readonly test: (text: string) => boolean
}

/** The patterns of one `.gitignore` file, for the directory `base` (relative to the root, `""` for the root). */
export interface IgnoreFile {
  readonly base: string
  readonly rules: ReadonlyArray<IgnoreRule>
}

const WILDCARD = /[*?[\\]/

/** Drops unescaped trailing spaces, as git does. */
const trimTrailingSpaces = (line: string): string => {
  let end = line.length
  while (end > 0 && line[end - 1] === " ") {
    // a space after an odd run of backslashes is escaped
    let slashes = 0
    for (let i = end - 2; i >= 0 && line[i] === "\\"; i--) slashes++
    if (slashes % 2 === 1) break
    end--
  }
  return line.slice(0, end)
}

/** Escapes `{` and `}` outside `[...]`: git has no braces, `effect/Glob` expands them. */
const escapeBraces = (pattern: string): string => {
  let out = ""
  let inClass = false
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    if (c === "\\" && i + 1 < pattern.length) {
      out += c + pattern[++i]
    } else if (inClass) {
      out += c
      if (c === "]") inClass = false
    } else if (c === "[") {
      out += c
      inClass = true
      // a `]` right after `[` or `[!` is a member, not the end
      if (pattern[i + 1] === "!" || pattern[i + 1] === "^") out += pattern[++i]
      if (pattern[i + 1] === "]") out += pattern[++i]
    } else {
      out += c === "{" || c === "}" ? `\\${c}` : c
    }
  }
  return out
}

const compileRule = (line: string): IgnoreRule | undefined => {
  let pattern = trimTrailingSpaces(line.endsWith("\r") ? line.slice(0, -1) : line)
  if (pattern === "" || pattern.startsWith("#")) return undefined
  const negate = pattern.startsWith("!")
  if (negate) pattern = pattern.slice(1)
  const directoryOnly = pattern.endsWith("/") && !pattern.endsWith("\\/")
  if (directoryOnly) pattern = pattern.slice(0, -1)
  if (pattern === "") return undefined
  // `**/name` is `name` at any depth, as a pattern without a slash is
  if (pattern.startsWith("**/") && !pattern.slice(3).includes("/")) pattern = pattern.slice(3)
  const anchored = pattern.includes("/")
  if (pattern.startsWith("/")) pattern = pattern.slice(1)
  if (pattern === "") return undefined
  // `dir/**` is everything inside dir, not dir itself
  if (pattern.endsWith("/**")) pattern = `${pattern}/*`
  if (!WILDCARD.test(pattern)) {
    const literal = pattern
    return { negate, directoryOnly, anchored, test: (text) => text === literal }
  }
  if (!anchored && pattern.startsWith("*") && !WILDCARD.test(pattern.slice(1))) {
    const ending = pattern.slice(1)
    return { negate, directoryOnly, anchored, test: (text) => text.endsWith(ending) }
  }
  const glob = Glob.make(escapeBraces(pattern), { dot: true })
  return { negate, directoryOnly, anchored, test: (text) => Glob.match(glob, text) }
}

/** The rules of the `.gitignore` of the directory `base`, from its text. */
export const parseIgnoreFile = (base: string, text: string): IgnoreFile => {
  const rules: Array<IgnoreRule> = []
  for (const line of text.split("\n")) {
    const rule = compileRule(line)
    if (rule !== undefined) rules.push(rule)
  }
  return { base, rules }
}

/**
 * Whether the entry at `relative` (from the root, `/`-separated) named `name` is ignored by the
 * `.gitignore` files `chain` of its ancestors (root first): the deepest file with a matching
 * pattern decides, by its last matching pattern.
 */
export const isIgnored = (chain: ReadonlyArray<IgnoreFile>, relative: string, name: string, isDirectory: boolean): boolean => {
  for (let f = chain.length - 1; f >= 0; f--) {
    const file = chain[f]!
    const rules = file.rules
    if (rules.length === 0) continue
    let below: string | undefined
    for (let r = rules.length - 1; r >= 0; r--) {
      const rule = rules[r]!
      if (rule.directoryOnly && !isDirectory) continue
      const matched = rule.anchored
        ? rule.test(below ??= file.base === "" ? relative : relative.slice(file.base.length + 1))
        : rule.test(name)
      if (matched) return !rule.negate
    }
  }
  return false
}
