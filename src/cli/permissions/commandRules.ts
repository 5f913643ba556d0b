/**
 * What permission rules say of an `exec` command line. The command is read into its simple
 * commands (`shellWords.ts`); then, with deny before ask before allow:
 *
 * - A deny (ask) rule denies (asks about) the whole line when it matches any simple command as
 *   written (reserved words and `VAR=value` in front skipped, a program's directory ignored:
 *   `/usr/bin/touch` is `touch`), as its wrappers run it (`env -i touch`, `timeout 5 touch`,
 *   `git -C x push` is a `git push`), or, after a wrapper, starting at any later word
 *   (`xargs -n1 touch`). Where the reader cannot place the words — an opaque line (a here
 *   document, arithmetic, `case` …), a command whose name is computed or a glob (`$x`, `tou?h`), a
 *   wrapper whose options are not known, code given in the words (`sh -c '…'`, `eval`,
 *   `find -exec`, `git -c`, `awk 'BEGIN { system(…) }'`) — every token of the whole text is a
 *   possible command start (`shellTokens.ts`), and a rule decides when its words before any `*`
 *   could appear there in order, side by side or not (an alias can join them; a glob token could
 *   be any name it matches).
 * - An allow rule approves the line only when the reader is sure of every part and every part is
 *   matched by an allow rule as its wrappers run it (`nice -n 5 npm test` is `npm test`), with no
 *   value computed when it runs (`$x`, `"$_"`, `$(…)`), no glob that could become options
 *   (`rg foo *`), no `VAR=value` in front, no redirection to a file, through no wrapper that runs
 *   it as another user or builds it from input (`sudo`, `xargs`), and with none of the options or
 *   code that write files, run programs or read outside the workspace (`dangerousOptions.ts`).
 *   This holds for every allow rule, `exec` alone included.
 * - Otherwise no rule decides, and the approval mode does: the user is asked, or, under `--yes`,
 *   the command runs (deny rules having been matched against every word it could not place).
 */
import * as nodePath from "node:path"
import { type Place, programName, riskOf } from "./dangerousOptions.ts"
import { withoutGlobals } from "./gitOptions.ts"
import { starMatch } from "./glob.ts"
import type { Rule, Verdict } from "./rules.ts"
import { tokens } from "./shellTokens.ts"
import { RESERVED, read, type SimpleCommand, SUBSTITUTION } from "./shellWords.ts"
import { lookThrough } from "./wrappers.ts"

/** How many wrappers in a row are looked through (`nice nice env …`); past that, the words are not placed. */
const MAX_WRAPPERS = 8

/** The words of text a user wrote (a rule's command), split at blanks. */
export const wordsOf = (text: string): ReadonlyArray<string> => text.split(/[ \t\n]+/).filter((w) => w !== "")

/**
 * Whether an `exec` rule's specifier matches a command's words exactly as allow rules match:
 * `npm test:*` a command whose words start with `npm test`, `git *` a glob over the words joined
 * by spaces, `npm test` that command and no other.
 */
export const commandMatches = (specifier: string | undefined, words: ReadonlyArray<string>): boolean => {
  if (specifier === undefined) return true
  if (specifier.endsWith(":*")) {
    const prefix = wordsOf(specifier.slice(0, -2))
    return prefix.length <= words.length && prefix.every((word, i) => words[i] === word)
  }
  const line = words.join(" ")
  if (specifier.includes("*")) return starMatch(wordsOf(specifier).join(" "), line)
  return line === wordsOf(specifier).join(" ")
}

/** `NAME=…` or `NAME+=…` (bash): an assignment in front of a command. */
const isAssignment = (word: string): boolean => {
  const equals = word.indexOf("=")
  const name = word.slice(0, equals > 0 && word[equals - 1] === "+" ? equals - 1 : equals)
  if (equals <= 0 || name === "") return false
  return [...name].every((c, k) => c === "_" || (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (k > 0 && c >= "0" && c <= "9"))
}

// --- deny and ask rules -------------------------------------------------------------------------

/** A rule's command as matched where words are not placed: its words before the first glob word, and that word. */
interface Prefix {
  readonly words: ReadonlyArray<string>
  readonly glob: string | undefined
}

const prefixOf = (specifier: string | undefined): Prefix => {
  if (specifier === undefined) return { words: [], glob: undefined }
  const all = wordsOf(specifier.endsWith(":*") ? specifier.slice(0, -2) : specifier)
  const glob = all.findIndex((word) => word.includes("*") || word.includes("?"))
  return glob < 0 ? { words: all, glob: undefined } : { words: all.slice(0, glob), glob: all[glob] }
}

const hasGlob = (token: string): boolean => token.includes("*") || token.includes("?") || token.includes("[")

/** A token's glob as `starMatch` reads it: a `[…]` class as `?` (any character, more than the class). */
const asStar = (token: string): string => {
  if (!token.includes("[")) return token
  const parts: Array<string> = []
  let from = 0
  for (let open = token.indexOf("["); open >= 0; open = token.indexOf("[", from)) {
    const close = token.indexOf("]", open + 1)
    // no `]` closes this `[`, nor any later one: the rest is literal
    if (close < 0) break
    parts.push(token.slice(from, open), "?")
    from = close + 1
  }
  parts.push(token.slice(from))
  return parts.join("")
}

/** Whether a token could be the rule's `word`: the same, the same program in any directory, or a glob matching it. */
const couldBe = (token: string, word: string, program: boolean): boolean => {
  if (token === word) return true
  const name = program ? programName(token) : token
  const wanted = program ? programName(word) : word
  return name === wanted || (hasGlob(name) && starMatch(asStar(name), wanted))
}

/** Whether a rule could match a command starting at `words[at]` (see `Prefix`). */
const couldMatchAt = (prefix: Prefix, words: ReadonlyArray<string>, at: number): boolean => {
  for (let k = 0; k < prefix.words.length; k++) {
    const token = words[at + k]
    if (token === undefined || !couldBe(token, prefix.words[k]!, k === 0)) return false
  }
  if (prefix.glob === undefined) return true
  const token = words[at + prefix.words.length]
  return token !== undefined && (hasGlob(token) || starMatch(prefix.glob, token))
}

/**
 * Whether a rule could match somewhere in the tokens of text whose words cannot be placed: its
 * words in order, not necessarily side by side, since an alias or a string may put a command
 * together from words anywhere (`git -c alias.p=push p` is a `git push`). The leftmost match of
 * each word in turn finds an order whenever there is one, so this is one pass.
 */
const couldMatchAnywhere = (prefix: Prefix, tokens: ReadonlyArray<string>): boolean => {
  let k = 0
  let at = 0
  for (; at < tokens.length && k < prefix.words.length; at++) {
    if (couldBe(tokens[at]!, prefix.words[k]!, k === 0)) k++
  }
  if (k < prefix.words.length) return false
  if (prefix.glob === undefined) return true
  for (; at < tokens.length; at++) if (hasGlob(tokens[at]!) || starMatch(prefix.glob, tokens[at]!)) return true
  return false
}

/** What deny and ask rules look at in one simple command. */
interface DenyView {
  /** The command as written and as its wrappers run it, matched as allow rules match. */
  readonly exact: ReadonlyArray<ReadonlyArray<string>>
  /** After a wrapper, from this word on, any word may start the command it runs. */
  readonly anyFrom: number | undefined
  /** Its words cannot be placed: every token of the whole text is a possible command. */
  readonly unplaced: boolean
}

const denyView = (part: SimpleCommand, place: Place): DenyView => {
  const { details, words } = part
  const exact: Array<ReadonlyArray<string>> = []
  let anyFrom: number | undefined
  let at = 0
  while (at < words.length && (RESERVED.has(words[at]!) || isAssignment(words[at]!))) at++
  for (let depth = 0; at < words.length; depth++) {
    const first = details[at]!
    if (depth > MAX_WRAPPERS || first.dynamic || first.pattern) return { exact, anyFrom, unplaced: true }
    const name = programName(first.text)
    const command = [name, ...words.slice(at + 1)]
    exact.push(words.slice(at), command)
    if (name === "git") exact.push(withoutGlobals(command))
    const through = lookThrough(words, at, name)
    if (through === undefined) return { exact, anyFrom, unplaced: riskOf(command, place)?.kind === "runs" }
    if (through._tag === "Nothing") return { exact, anyFrom, unplaced: false }
    anyFrom ??= at + 1
    if (through._tag === "Hidden" || details.slice(anyFrom).some((word) => word.dynamic)) return { exact, anyFrom, unplaced: true }
    at = through.start
  }
  return { exact, anyFrom, unplaced: false }
}

const viewMatches = (rule: Rule, prefix: Prefix, view: DenyView, words: ReadonlyArray<string>): boolean => {
  if (view.exact.some((command) => commandMatches(rule.specifier, command))) return true
  if (view.anyFrom === undefined) return false
  for (let at = view.anyFrom; at < words.length; at++) if (couldMatchAt(prefix, words, at)) return true
  return false
}

/** The first deny rule, then ask rule, that matches the line (see the module doc). */
const denyOrAsk = (rules: ReadonlyArray<Rule>, text: string, commands: ReadonlyArray<SimpleCommand> | undefined, place: Place): Verdict | undefined => {
  const views = (commands ?? []).map((part) => ({ part, view: denyView(part, place) }))
  const unplaced = commands === undefined || views.some(({ view }) => view.unplaced)
  const scans = unplaced ? [tokens(text, false), tokens(text, true)] : []
  for (const kind of ["deny", "ask"] as const) {
    for (const rule of rules) {
      if (rule.kind !== kind) continue
      const prefix = prefixOf(rule.specifier)
      const matched = views.some(({ part, view }) => viewMatches(rule, prefix, view, part.words)) ||
        scans.some((scanned) => couldMatchAnywhere(prefix, scanned))
      if (matched) return kind === "deny" ? { _tag: "Deny", rule } : { _tag: "Ask", rule }
    }
  }
  return undefined
}

// --- allow rules --------------------------------------------------------------------------------

/** One simple command as allow rules see it. */
type Approvable =
  /** Nothing to approve (`fi`, `2>&1` alone). */
  | { readonly _tag: "Empty" }
  /** The command as its wrappers run it, for allow rules to match. */
  | { readonly _tag: "Words"; readonly words: ReadonlyArray<string> }
  /** Allow rules never approve it, and why; `words` as best read, to say which rule would have. */
  | { readonly _tag: "Refused"; readonly words: ReadonlyArray<string>; readonly why: string }

const approvable = (part: SimpleCommand, place: Place): Approvable => {
  let at = 0
  while (at < part.words.length && RESERVED.has(part.words[at]!)) at++
  const written = part.words.slice(at)
  const details = part.details.slice(at)
  const refused = (why: string, words: ReadonlyArray<string> = written): Approvable => ({ _tag: "Refused", words, why })
  if (part.writesFile) return refused("it writes to a file")
  if (written.length === 0) return { _tag: "Empty" }
  if (isAssignment(written[0]!)) return refused("it sets variables")
  if (details.some((word) => word.dynamic)) return refused("it holds a value known only when it runs (`$…`, `$(…)`)")
  if (details.some((word) => word.leading)) return refused("a glob at the start of a word may expand to options (write `./*`)")
  let start = 0
  for (let depth = 0; ; depth++) {
    if (details[start]!.pattern) return refused("its command is a glob")
    const name = written[start]!
    const through = depth > MAX_WRAPPERS || name.includes("/") ? undefined : lookThrough(written, start, name)
    if (through === undefined || through._tag === "Nothing") break
    if (through._tag === "Hidden") return refused(through.refused)
    if (through.refused !== undefined) return refused(through.refused, written.slice(through.start))
    start = through.start
  }
  const words = written.slice(start)
  const risk = riskOf(words, place)
  if (risk !== undefined) return refused(`it ${risk.what}`, words)
  return { _tag: "Words", words: words[0] === "git" ? withoutGlobals(words) : words }
}

const CHANGES_DIRECTORY: ReadonlySet<string> = new Set(["cd", "pushd", "popd", "chdir"])

/** The directory after a command: a `cd` to one literal path moves it, any other `cd` makes it unknown. */
const nextPlace = (words: ReadonlyArray<string>, place: Place): Place => {
  if (!CHANGES_DIRECTORY.has(programName(words[0]!))) return place
  const operands = words.slice(1).filter((word) => !word.startsWith("-") || word === "-")
  const target = operands.length === 1 ? operands[0]! : undefined
  const known = place.cwd !== undefined && target !== undefined && target !== "-" && !target.startsWith("~")
  return { ...place, cwd: known ? nodePath.posix.resolve(place.cwd!, target) : undefined }
}

const shown = (words: ReadonlyArray<string>): string => words.join(" ").replaceAll(SUBSTITUTION, "$…")

const allowVerdict = (rules: ReadonlyArray<Rule>, commands: ReadonlyArray<SimpleCommand>, workspace: string): Verdict => {
  const allows = rules.filter((rule) => rule.kind === "allow")
  const allowed: Array<Rule> = []
  let place: Place = { workspace, cwd: workspace }
  for (const part of commands) {
    const here = approvable(part, place)
    if (here._tag === "Empty") continue
    const rule = allows.find((r) => commandMatches(r.specifier, here.words))
    if (here._tag === "Refused") {
      if (rule !== undefined) return { _tag: "None", why: `the rule ${rule.text} does not approve \`${shown(part.words)}\`: ${here.why}` }
      if (allowed.length === 0 && commands.length === 1) return { _tag: "None" }
      return { _tag: "None", why: `no allow rule covers \`${shown(part.words)}\` (${here.why})` }
    }
    if (rule === undefined) {
      if (allowed.length === 0 && commands.length === 1) return { _tag: "None" }
      return { _tag: "None", why: `no allow rule covers \`${shown(part.words)}\`` }
    }
    if (!allowed.includes(rule)) allowed.push(rule)
    place = nextPlace(here.words, place)
  }
  return allowed.length === 0 ? { _tag: "None" } : { _tag: "Allow", rules: allowed }
}

/**
 * What `rules` (the `exec` rules) say of the command line `command` run in `workspace` (see the
 * module doc): deny beats ask beats allow; `None` leaves it to the approval mode, with why no
 * allow rule could approve it when one might have been expected to.
 */
export const evaluateCommand = (rules: ReadonlyArray<Rule>, command: string, workspace: string): Verdict => {
  const reading = read(command)
  const commands = reading._tag === "Commands" ? reading.commands : undefined
  const decided = denyOrAsk(rules, command, commands, { workspace, cwd: workspace })
  if (decided !== undefined) return decided
  if (commands === undefined) {
    return { _tag: "None", why: `the command cannot be read as simple commands (${reading._tag === "Opaque" ? reading.reason : ""})` }
  }
  return allowVerdict(rules, commands, workspace)
}

const SUBCOMMAND = /^[a-z][a-z0-9-]*$/

/**
 * Allow rules that would approve `command` from now on, for the approval prompt: one
 * `exec(PROGRAM SUBCOMMAND:*)` per part not yet allowed, as its wrappers run it. None when no rule
 * could (an unreadable command, a redirection, a computed value, a risky option, `sudo`, `xargs` …).
 */
export const suggestCommand = (rules: ReadonlyArray<Rule>, command: string, workspace: string): ReadonlyArray<string> => {
  const reading = read(command)
  if (reading._tag === "Opaque") return []
  const suggested: Array<string> = []
  let place: Place = { workspace, cwd: workspace }
  for (const part of reading.commands) {
    const here = approvable(part, place)
    if (here._tag === "Empty") continue
    if (here._tag === "Refused") return []
    place = nextPlace(here.words, place)
    if (rules.some((rule) => rule.kind === "allow" && commandMatches(rule.specifier, here.words))) continue
    const [program, sub] = here.words
    if (program === undefined || /[()\s]/.test(program)) return []
    const rule = `exec(${sub !== undefined && SUBCOMMAND.test(sub) ? `${program} ${sub}` : program}:*)`
    if (!suggested.includes(rule)) suggested.push(rule)
  }
  return suggested
}
