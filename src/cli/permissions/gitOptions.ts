/**
 * What a `git` command's options do beyond reading the repository, for allow rules: `git diff`
 * allowed must not write `--output=~/.bashrc`, run `-c core.pager=…`, or read `~/.ssh/id_rsa`
 * with `--no-index`. Options before the subcommand that change which repository, configuration or
 * programs git uses (`-c`, `-C`, `--git-dir`, `--exec-path` …) are refused, as are the subcommands
 * that run programs or change configuration (`config`, `difftool`, `filter-branch`, `bisect` …).
 */
import * as nodePath from "node:path"
import { isLong, type Place, type Risk } from "./dangerousOptions.ts"
import { SUBSTITUTION } from "./shellWords.ts"

/** Options before the subcommand that change nothing git runs or reads. */
const SAFE_GLOBALS: ReadonlySet<string> = new Set([
  "--no-pager", "-P", "--paginate", "-p", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs",
  "--icase-pathspecs", "--no-replace-objects", "--no-lazy-fetch", "--no-advice", "--version", "-v", "--help", "-h"
])

/** Options before the subcommand that take a value (the next word, or attached). */
const GLOBALS_WITH_VALUE: ReadonlySet<string> = new Set([
  "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--exec-path", "--attr-source", "--list-cmds"
])

/** Subcommands that run programs or change what later git commands run. */
const NEVER: ReadonlySet<string> = new Set([
  "config", "difftool", "mergetool", "filter-branch", "filter-repo", "bisect", "submodule", "instaweb", "daemon", "hook", "send-email",
  "credential", "credential-store", "credential-cache", "shell", "upload-pack", "receive-pack", "upload-archive", "http-backend",
  "cvsserver", "remote-ext", "remote-fd", "fsmonitor--daemon", "web--browse", "imap-send", "p4", "svn", "archimport", "cvsimport",
  "quiltimport", "run-command"
])

/** Subcommands whose operands name where they write (`git clone URL DIR`). */
const WRITE_OPERANDS: ReadonlySet<string> = new Set(["clone", "init", "worktree", "bundle"])

/** Harmless long options that are also the start of a risky one's name (`--text`, `--textconv`): not read as abbreviations. */
const EXACT: ReadonlySet<string> = new Set(["--text"])

/** Long options, any subcommand's, and what they do. */
const LONG: Readonly<Record<string, Risk>> = {
  "--output": { kind: "writes", what: "writes a file (`--output`)" },
  "--output-directory": { kind: "writes", what: "writes files (`--output-directory`)" },
  "--unsafe-paths": { kind: "writes", what: "writes outside the repository (`--unsafe-paths`)" },
  "--upload-pack": { kind: "runs", what: "runs a program (`--upload-pack`)" },
  "--receive-pack": { kind: "runs", what: "runs a program (`--receive-pack`)" },
  "--exec": { kind: "runs", what: "runs a program (`--exec`)" },
  "--extcmd": { kind: "runs", what: "runs a program (`--extcmd`)" },
  "--open-files-in-pager": { kind: "runs", what: "runs a program (`--open-files-in-pager`)" },
  "--template": { kind: "runs", what: "installs hooks from a template (`--template`)" },
  "--config": { kind: "runs", what: "sets configuration that may run programs (`--config`)" },
  "--ext-diff": { kind: "runs", what: "runs external diff programs (`--ext-diff`)" },
  "--textconv": { kind: "runs", what: "runs text conversion programs (`--textconv`)" },
  "--no-index": { kind: "reads", what: "compares files anywhere, outside the repository too (`--no-index`)" }
}

/** Short options that run or write for some subcommands only (`git add -u` is harmless, `git fetch -u` is not). */
const SHORT: ReadonlyArray<{ readonly subcommands: ReadonlyArray<string>; readonly letter: string; readonly risk: Risk }> = [
  { subcommands: ["fetch", "pull", "clone", "ls-remote"], letter: "u", risk: { kind: "runs", what: "runs a program (`-u`, `--upload-pack`)" } },
  { subcommands: ["clone"], letter: "c", risk: { kind: "runs", what: "sets configuration that may run programs (`-c`)" } },
  { subcommands: ["rebase"], letter: "x", risk: { kind: "runs", what: "runs a command after each commit (`-x`)" } },
  { subcommands: ["grep"], letter: "O", risk: { kind: "runs", what: "runs a program (`-O`)" } },
  { subcommands: ["format-patch", "archive"], letter: "o", risk: { kind: "writes", what: "writes files (`-o`)" } }
]

/** How `git`'s words divide: the options before the subcommand, and where the subcommand is. */
interface GitWords {
  /** The first option before the subcommand that is not harmless, if any. */
  readonly unsafeGlobal: string | undefined
  /** The index of the subcommand; `undefined` when there is none. */
  readonly subcommand: number | undefined
}

const longName = (word: string): string => word.slice(0, word.indexOf("=") < 0 ? word.length : word.indexOf("="))

const divide = (words: ReadonlyArray<string>): GitWords => {
  let unsafeGlobal: string | undefined
  let j = 1
  while (j < words.length && words[j]!.startsWith("-")) {
    const word = words[j]!
    if (SAFE_GLOBALS.has(word)) j++
    else if (GLOBALS_WITH_VALUE.has(word)) {
      unsafeGlobal ??= word
      j += 2
    } else {
      unsafeGlobal ??= word.startsWith("--") ? longName(word) : word.slice(0, 2)
      j++
    }
  }
  return { unsafeGlobal, subcommand: j < words.length ? j : undefined }
}

/**
 * `git` with the options before its subcommand left out: `git -C x push` is a `git push` to a deny
 * rule, and `git --no-pager diff` a `git diff` to an allow rule (which approves it only when those
 * options are harmless: see `gitRisk`).
 */
export const withoutGlobals = (words: ReadonlyArray<string>): ReadonlyArray<string> => {
  const { subcommand } = divide(words)
  return subcommand === undefined || subcommand === 1 ? words : [words[0]!, ...words.slice(subcommand)]
}

/**
 * Whether `path` may lead outside the workspace: `~`, an expansion, an absolute path elsewhere,
 * `..` past the root, or any relative path where the directory is not known (after `cd "$x"`).
 */
export const mayLeadOutside = (path: string, place: Place): boolean => {
  if (path.includes(SUBSTITUTION) || path.startsWith("~")) return true
  if (place.cwd === undefined && !path.startsWith("/")) return true
  const relative = nodePath.posix.relative(place.workspace, nodePath.posix.resolve(place.cwd ?? place.workspace, path))
  return relative === ".." || relative.startsWith("../") || nodePath.posix.isAbsolute(relative)
}

const shortRisk = (subcommand: string, word: string): Risk | undefined => {
  if (word.startsWith("--") || word.length < 2) return undefined
  return SHORT.find((entry) => entry.subcommands.includes(subcommand) && word.slice(1).includes(entry.letter))?.risk
}

/** What the options of a subcommand's word do (see the module doc). */
const optionRisk = (subcommand: string, word: string, next: string | undefined, place: Place): Risk | undefined => {
  const name = longName(word)
  if (subcommand === "blame" && name === "--contents") {
    const file = word.includes("=") ? word.slice(word.indexOf("=") + 1) : next ?? ""
    return mayLeadOutside(file, place) ? { kind: "reads", what: "reads a file outside the workspace (`--contents`)" } : undefined
  }
  const long = word.startsWith("--") && !EXACT.has(name) ? Object.keys(LONG).find((full) => isLong(word, full)) : undefined
  return (long === undefined ? undefined : LONG[long]) ?? shortRisk(subcommand, word)
}

/**
 * What a `git` command (its words, the program first) does beyond reading the repository, or
 * `undefined`. `place` is where it runs, for `git diff`'s paths: given two paths, one outside the
 * repository, it compares files as `--no-index` does.
 */
export const gitRisk = (words: ReadonlyArray<string>, place: Place): Risk | undefined => {
  const { unsafeGlobal, subcommand } = divide(words)
  if (unsafeGlobal !== undefined) {
    return { kind: "runs", what: `changes which repository, configuration or programs git uses (\`${unsafeGlobal}\`)` }
  }
  if (subcommand === undefined) return undefined
  const name = words[subcommand]!
  if (NEVER.has(name)) return { kind: "runs", what: `\`git ${name}\` runs programs or changes git's configuration` }
  let operands = false
  for (let j = subcommand + 1; j < words.length; j++) {
    const word = words[j]!
    if (!operands && word === "--") operands = true
    else if (!operands && word.startsWith("-")) {
      const risk = optionRisk(name, word, words[j + 1], place)
      if (risk !== undefined) return risk
    } else if (name === "diff" && mayLeadOutside(word, place)) {
      return { kind: "reads", what: `compares a file outside the workspace (\`${word}\`)` }
    } else if (WRITE_OPERANDS.has(name) && mayLeadOutside(word, place)) {
      return { kind: "writes", what: `writes outside the workspace (\`${word}\`)` }
    }
  }
  return undefined
}

