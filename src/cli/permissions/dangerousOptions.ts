/**
 * What a command does through its options or its code arguments beyond what its name says, for
 * permission rules: `find -delete`, `sed -i`, `awk 'BEGIN { system(…) }'`, `tar -x`, `rsync -e`,
 * `git diff --output=…`, `sh -c '…'`. An allow rule never approves such a command (the user is
 * asked, or the approval mode decides), whatever the rule says; and where the command runs code
 * given in its words, deny rules look at every word (`commandRules.ts`).
 *
 * Each check knows one program's options well enough to find those that write files or run
 * programs; an option it does not know counts as one of those. Programs are known by their name
 * without a directory (`/usr/bin/sed` is `sed`).
 */
import { gitRisk } from "./gitOptions.ts"
import { sedRisk } from "./sedScript.ts"

/** What a command does beyond what its name says. */
export interface Risk {
  /** `writes` files; `runs` programs or code given in its words; `reads` files outside the workspace. */
  readonly kind: "writes" | "runs" | "reads"
  /** What it does, to follow "it": "writes a file (`--output`)". */
  readonly what: string
}

/** Where a command runs: the workspace, and the directory (`undefined` after a `cd` to a place not known). */
export interface Place {
  readonly workspace: string
  readonly cwd: string | undefined
}

type Check = (words: ReadonlyArray<string>, place: Place) => Risk | undefined

/** A program's name without its directory. */
export const programName = (word: string): string => word.slice(word.lastIndexOf("/") + 1)

const runs = (what: string): Risk => ({ kind: "runs", what })
const writes = (what: string): Risk => ({ kind: "writes", what })
const longName = (word: string): string => word.slice(0, word.indexOf("=") < 0 ? word.length : word.indexOf("="))
const isShortGroup = (word: string): boolean => word.length > 1 && word.startsWith("-") && !word.startsWith("--")

/**
 * Whether `word` is the long option `full`, with or without a value: spelled out, or abbreviated
 * as GNU's getopt and git accept (`--out=x` is `--output=x`).
 */
export const isLong = (word: string, full: string): boolean => {
  const name = longName(word)
  return name === full || (name.length > 3 && word.startsWith("--") && full.startsWith(name))
}

/** The first word (after the program) that is one of the `long` options (see `isLong`), or a group of short options holding one of `letters`. */
const findOption = (words: ReadonlyArray<string>, long: ReadonlyArray<string>, letters: string): string | undefined =>
  words.slice(1).find((word) => long.some((full) => isLong(word, full)) || (isShortGroup(word) && [...word.slice(1)].some((l) => letters.includes(l))))

const FIND_RUNS: ReadonlySet<string> = new Set(["-exec", "-execdir", "-ok", "-okdir"])
const FIND_WRITES: ReadonlySet<string> = new Set(["-delete", "-fprint", "-fprint0", "-fprintf", "-fls"])

const find: Check = (words) => {
  for (const word of words.slice(1)) {
    if (FIND_RUNS.has(word)) return runs(`runs a command (\`${word}\`)`)
    if (FIND_WRITES.has(word)) return writes(`writes or deletes files (\`${word}\`)`)
  }
  return undefined
}

/** What an awk program may do: every test is a plain search of its text, so the whole program is looked at. */
const awkProgramRisk = (program: string): Risk | undefined => {
  if (program.includes("system")) return runs("runs commands (`system`)")
  if (program.includes("@")) return runs("loads code (gawk's `@load`, `@include`) or calls functions by name")
  if (program.includes("/inet")) return runs("opens network connections (`/inet`)")
  let pipe = false
  for (let k = 0; k < program.length && !pipe; k++) {
    pipe = program[k] === "|" && program[k - 1] !== "|" && program[k + 1] !== "|"
  }
  if (pipe && (program.includes("getline") || program.includes("print"))) return runs("pipes to or from a command (`|`)")
  const print = program.indexOf("print")
  if (print >= 0 && program.includes(">", print)) return writes("may write a file (`print > FILE`)")
  return undefined
}

const awk: Check = (words) => {
  const programs: Array<string> = []
  let j = 1
  while (j < words.length) {
    const word = words[j]!
    if (word === "--") {
      j++
      break
    }
    if (!word.startsWith("-") || word === "-") break
    const name = longName(word)
    if (word === "-F" || word === "-v" || word === "--field-separator" || word === "--assign") j += 2
    else if (word.startsWith("-F") || word.startsWith("-v") || name === "--field-separator" || name === "--assign") j++
    else if (word === "-e" || word === "--source") {
      programs.push(words[j + 1] ?? "")
      j += 2
    } else if (name === "--source") {
      programs.push(word.slice(word.indexOf("=") + 1))
      j++
    } else if (word.startsWith("-f") || name === "--file") return runs("reads its program from a file (`-f`)")
    else return runs(`has an option that is not known here (\`${name}\`)`)
  }
  if (programs.length === 0) programs.push(words[j] ?? "")
  return awkProgramRisk(programs.join("\n"))
}

const TAR_LETTERS_OK = new Set(["t", "v", "z", "j", "J", "Z", "a", "O"])
const TAR_LETTERS_WRITE = new Set(["x", "c", "r", "u", "A"])
const TAR_LONG_OK: ReadonlySet<string> = new Set([
  "--list", "--verbose", "--gzip", "--gunzip", "--ungzip", "--bzip2", "--xz", "--lzma", "--lzip", "--lzop", "--zstd",
  "--auto-compress", "--to-stdout", "--numeric-owner", "--utc", "--full-time", "--wildcards", "--no-wildcards", "--anchored",
  "--no-anchored", "--exclude", "--force-local", "--ignore-case", "--no-ignore-case", "--totals", "--block-number"
])
const TAR_LONG_WRITE: ReadonlySet<string> = new Set(["--extract", "--get", "--create", "--append", "--update", "--catenate", "--concatenate", "--delete"])

/** One long option of `tar`; `--file`'s archive is noted. */
const tarLong = (word: string, archives: Array<string>, valueNext: () => void): Risk | undefined => {
  const name = longName(word)
  if (TAR_LONG_WRITE.has(name)) return writes(`writes files (\`${name}\`)`)
  if (name === "--file") {
    if (word.includes("=")) archives.push(word.slice(word.indexOf("=") + 1))
    else valueNext()
    return undefined
  }
  return TAR_LONG_OK.has(name) ? undefined : runs(`has an option that may write files or run programs (\`${name}\`)`)
}

/**
 * `tar` may only list: every option is one of a short list of harmless ones, and the archive is
 * a local file (`host:file` is reached through a remote shell).
 */
const tar: Check = (words) => {
  const archives: Array<string> = []
  let pending = 0
  /** A group of letters: in the old form (`tar tzf a.tar`) every letter is an option and `f` takes the next word; after `-`, `f` takes the rest. */
  const letters = (group: string, oldForm: boolean): Risk | undefined => {
    for (let k = 0; k < group.length; k++) {
      const letter = group[k]!
      if (TAR_LETTERS_WRITE.has(letter)) return writes(`writes files (\`${letter}\`)`)
      if (letter === "f" && (oldForm || k === group.length - 1)) pending++
      else if (letter === "f") {
        archives.push(group.slice(k + 1))
        return undefined
      } else if (!TAR_LETTERS_OK.has(letter)) return runs(`has an option that may write files or run programs (\`${letter}\`)`)
    }
    return undefined
  }
  for (let j = 1; j < words.length; j++) {
    const word = words[j]!
    let risk: Risk | undefined
    if (pending > 0) {
      archives.push(word)
      pending--
    } else if (word === "--") break
    else if (j === 1 && !word.startsWith("-")) risk = letters(word, true)
    else if (word.startsWith("--")) risk = tarLong(word, archives, () => pending++)
    else if (word.startsWith("-") && word !== "-") risk = letters(word.slice(1), false)
    if (risk !== undefined) return risk
  }
  if (!words.includes("--force-local") && archives.some((archive) => archive.includes(":"))) return runs("reaches an archive on another host through a remote shell")
  return undefined
}

const rsync: Check = (words) => {
  const option = findOption(words, ["--rsh", "--rsync-path"], "e")
  if (option !== undefined) return runs(`runs a program (\`${isShortGroup(option) ? "-e" : longName(option)}\`)`)
  const extra = findOption(words, ["--write-batch", "--only-write-batch", "--log-file"], "")
  return extra === undefined ? undefined : writes(`writes a file (\`${longName(extra)}\`)`)
}

/** How many words are operands (not options nor their values), for programs that write their last operand. */
const operandCount = (words: ReadonlyArray<string>, withValue: ReadonlyArray<string>): number => {
  let count = 0
  for (let j = 1; j < words.length; j++) {
    const word = words[j]!
    if (word === "--") return count + words.length - j - 1
    if (withValue.includes(word)) j++
    else if (!word.startsWith("-") || word === "-") count++
  }
  return count
}

const SHELLS = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "csh", "tcsh"]

/** A shell given code with `-c` (in any group: `-lc`), or a start-up file with `--rcfile`; options end at the first operand (a script). */
const shell: Check = (words) => {
  for (let j = 1; j < words.length; j++) {
    const word = words[j]!
    if (word === "-o" || word === "+o" || word === "-O" || word === "+O") j++
    else if (word === "--" || !(word.startsWith("-") || word.startsWith("+"))) return undefined
    else if (["--rcfile", "--init-file", "--command"].some((full) => isLong(word, full)) || (isShortGroup(word) && word.includes("c"))) {
      return runs(`runs the code it is given (\`${programName(words[0]!)} -c\`)`)
    }
  }
  return undefined
}

/** Shell builtins that run code given as text, or change what later commands run (`export PATH=…`, `alias`, `hash -p`). */
const BUILTINS = [
  "eval", ".", "source", "trap", "alias", "hash", "enable", "fc", "bind", "complete", "compgen", "let", "declare", "typeset",
  "local", "readonly", "export", "unset", "read", "mapfile", "readarray", "shopt"
]

/** Interpreters, and their options that give code on the command line: letters (in any group) and long options. */
const INLINE_CODE: ReadonlyArray<readonly [ReadonlyArray<string>, string, ReadonlyArray<string>]> = [
  [["perl"], "eEiMm", []],
  [["ruby"], "ei", []],
  [["php"], "r", []],
  [["lua", "luajit", "Rscript", "osascript"], "e", []],
  [["node", "nodejs", "bun"], "ep", ["--eval", "--print"]]
]

const inlineChecks = (): Record<string, Check> => {
  const checks: Record<string, Check> = {}
  for (const name of SHELLS) checks[name] = shell
  for (const name of BUILTINS) checks[name] = () => runs(`runs shell code or changes how later commands run (\`${name}\`)`)
  for (const [programs, letters, long] of INLINE_CODE) {
    for (const name of programs) {
      checks[name] = (words) => findOption(words, long, letters) === undefined ? undefined : runs(`runs the code it is given on the command line (\`${name}\`)`)
    }
  }
  return checks
}

/** The checks by program name. */
const CHECKS: Readonly<Record<string, Check>> = {
  git: gitRisk,
  find,
  sed: sedRisk,
  gsed: sedRisk,
  awk,
  gawk: awk,
  mawk: awk,
  nawk: awk,
  tar,
  gtar: tar,
  bsdtar: tar,
  rsync,
  printf: (words) => words.includes("-v") ? runs("sets a variable, whose name bash evaluates (`printf -v`)") : undefined,
  test: (words) => words.includes("-v") ? runs("tests a variable, whose name bash evaluates (`-v`)") : undefined,
  wait: (words) => findOption(words, [], "p") === undefined ? undefined : runs("sets a variable, whose name bash evaluates (`wait -p`)"),
  "[": (words) => words.includes("-v") ? runs("tests a variable, whose name bash evaluates (`-v`)") : undefined,
  sort: (words) => {
    const option = findOption(words, ["--output", "--compress-program"], "o")
    return option === undefined ? undefined : isLong(option, "--compress-program") ? runs("runs a program (`--compress-program`)") : writes("writes a file (`-o`)")
  },
  uniq: (words) => operandCount(words, ["-f", "-s", "-w"]) >= 2 ? writes("writes its second operand") : undefined,
  xxd: (words) => operandCount(words, ["-c", "-g", "-l", "-o", "-s", "-n", "-cols", "-groupsize", "-len", "-offset", "-seek", "-name"]) >= 2 ? writes("writes its second operand") : undefined,
  tree: (words) => findOption(words, ["--output"], "o") === undefined ? undefined : writes("writes a file (`-o`)"),
  rg: (words) => findOption(words, ["--pre"], "") === undefined ? undefined : runs("runs a program on every file (`--pre`)"),
  fd: (words) => findOption(words, ["--exec", "--exec-batch"], "xX") === undefined ? undefined : runs("runs a command (`--exec`)"),
  fdfind: (words) => findOption(words, ["--exec", "--exec-batch"], "xX") === undefined ? undefined : runs("runs a command (`--exec`)"),
  man: (words) => findOption(words, ["--pager", "--html", "--browser"], "PH") === undefined ? undefined : runs("runs a program (`--pager`, `--html`)"),
  curl: (words) => {
    const option = findOption(words, ["--output", "--remote-name", "--remote-name-all", "--output-dir", "--dump-header", "--cookie-jar", "--trace", "--trace-ascii", "--libcurl", "--etag-save", "--hsts", "--alt-svc", "--config", "--stderr"], "oODcK")
    return option === undefined ? undefined : writes(`writes a file (\`${isShortGroup(option) ? option.slice(0, 2) : longName(option)}\`)`)
  },
  wget: (words) => {
    const toStdout = words.some((word, j) => word === "-O-" || word === "-qO-" || word === "--output-document=-" || (word === "-O" && words[j + 1] === "-"))
    const other = findOption(words, ["--output-file", "--append-output", "--execute", "--directory-prefix", "--recursive", "--mirror", "--page-requisites", "--save-cookies", "--warc-file"], "oaePrmpx")
    return toStdout && other === undefined ? undefined : writes("saves what it downloads (without `-O -`)")
  },
  ...inlineChecks()
}

/** Whether `name` is a Python interpreter (`python`, `python3`, `python3.12`). */
const isPython = (name: string): boolean => name.startsWith("python")

/**
 * What the command `words` (the program first, as the shell runs it after any wrapper) does
 * beyond what its name says, or `undefined` (see the module doc).
 */
export const riskOf = (words: ReadonlyArray<string>, place: Place): Risk | undefined => {
  const program = words[0]
  if (program === undefined) return undefined
  const name = programName(program)
  if (isPython(name)) return findOption(words, [], "c") === undefined ? undefined : runs("runs the code it is given on the command line (`-c`)")
  return Object.hasOwn(CHECKS, name) ? CHECKS[name]!(words, place) : undefined
}
