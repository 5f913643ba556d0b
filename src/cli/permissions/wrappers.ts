/**
 * Commands that run another command given in their words (`env`, `nice`, `timeout`, `sudo`,
 * `xargs` …). Permission rules look through them: `env -i touch x` is a `touch` to a deny rule,
 * and `timeout 60 npm test` is the `npm test` an allow rule names. Some are never looked through
 * by allow rules (`sudo` runs the command as another user, `xargs` builds commands from its
 * input), and a wrapper whose options the table does not know hides the command it runs.
 */

/** How one wrapper's words are read. */
interface WrapperSpec {
  /** Options without a value; single letters may be grouped (`-iv`). */
  readonly flags?: ReadonlyArray<string>
  /** Options with a value: the next word, or attached (`-n5`, `--signal=KILL`). */
  readonly withValue?: ReadonlyArray<string>
  /** Options whose value may only be attached (`-i{}`, `--default-signal=INT`), or absent. */
  readonly optionalValue?: ReadonlyArray<string>
  /** Words between the options and the command: `timeout`'s duration, `chrt`'s priority. */
  readonly operands?: number
  /** `-10` is an option (`nice`'s old form). */
  readonly numeric?: boolean
  /** `NAME=value` words before the command set its variables (`env`, `sudo`). */
  readonly assignments?: boolean
  /** Options after which it runs no command (`command -v`). */
  readonly noCommand?: ReadonlyArray<string>
  /** Options whose value is the command, as a string (`env -S`, `flock -c`): not followed. */
  readonly commandInValue?: ReadonlyArray<string>
  /** Options that keep allow rules from approving the command, and why (`time -o FILE` writes it). */
  readonly refuse?: Readonly<Record<string, string>>
  /** Why allow rules never approve a command through this wrapper; absent: they may. */
  readonly notThrough?: string
}

const SUDO_VALUES = ["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "--user", "--group", "--chdir", "--host", "--prompt", "--role", "--type", "--command-timeout", "--other-user", "--close-from"]

const WRAPPERS: Readonly<Record<string, WrapperSpec>> = {
  builtin: {},
  command: { flags: ["-p"], noCommand: ["-v", "-V"] },
  exec: { flags: ["-c", "-l"], withValue: ["-a"] },
  nohup: {},
  nice: { withValue: ["-n", "--adjustment"], numeric: true },
  timeout: { flags: ["--preserve-status", "--foreground", "-v", "--verbose"], withValue: ["-s", "--signal", "-k", "--kill-after"], operands: 1 },
  stdbuf: { withValue: ["-i", "-o", "-e", "--input", "--output", "--error"] },
  time: {
    flags: ["-p", "-a", "--append", "-v", "--verbose", "-q", "--quiet", "--portability"],
    withValue: ["-o", "--output", "-f", "--format"],
    refuse: { "-o": "`time -o` writes a file", "--output": "`time --output` writes a file" }
  },
  env: {
    flags: ["-", "-i", "-0", "-v", "--ignore-environment", "--null", "--debug", "--list-signal-handling"],
    withValue: ["-u", "--unset", "-C", "--chdir"],
    optionalValue: ["--block-signal", "--default-signal", "--ignore-signal"],
    assignments: true,
    commandInValue: ["-S", "--split-string"],
    refuse: { "-C": "`env -C` runs it in another directory", "--chdir": "`env --chdir` runs it in another directory" }
  },
  ionice: { flags: ["-t", "--ignore"], withValue: ["-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"] },
  setsid: { flags: ["-c", "--ctty", "-f", "--fork", "-w", "--wait"] },
  chrt: {
    flags: ["-a", "-b", "-d", "-f", "-i", "-o", "-r", "-R", "-v", "-m", "-p", "--all-tasks", "--batch", "--deadline", "--fifo", "--idle", "--other", "--rr", "--reset-on-fork", "--verbose", "--max", "--pid"],
    withValue: ["-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"],
    operands: 1
  },
  taskset: { flags: ["-a", "-c", "-p", "--all-tasks", "--cpu-list", "--pid"], operands: 1 },
  sudo: {
    flags: ["-A", "-b", "-E", "-H", "-k", "-K", "-n", "-P", "-S", "-B", "--askpass", "--background", "--set-home", "--reset-timestamp", "--remove-timestamp", "--non-interactive", "--preserve-groups", "--stdin", "--bell"],
    withValue: SUDO_VALUES,
    optionalValue: ["--preserve-env"],
    assignments: true,
    // with a shell (`-s`, `-i`), the words are one line of shell code
    commandInValue: ["-s", "-i", "--shell", "--login"],
    notThrough: "`sudo` runs it as another user"
  },
  doas: { flags: ["-n", "-s", "-L"], withValue: ["-u", "-C", "-a"], notThrough: "`doas` runs it as another user" },
  xargs: {
    flags: ["-0", "-r", "-t", "-p", "-x", "-o", "--null", "--no-run-if-empty", "--verbose", "--interactive", "--exit", "--open-tty"],
    withValue: ["-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"],
    optionalValue: ["-i", "-e", "-l"],
    notThrough: "`xargs` runs the commands it builds from its input"
  },
  coproc: { notThrough: "`coproc` runs it in the background" },
  chroot: { flags: ["--skip-chdir"], withValue: ["--userspec", "--groups"], operands: 1, notThrough: "`chroot` runs it under another root" },
  flock: {
    flags: ["-s", "-x", "-e", "-u", "-n", "-o", "-F", "--shared", "--exclusive", "--unlock", "--nonblock", "--close", "--no-fork", "--verbose"],
    withValue: ["-w", "--timeout", "-E", "--conflict-exit-code"],
    commandInValue: ["-c", "--command"],
    operands: 1,
    notThrough: "`flock` runs it holding a lock"
  },
  watch: {
    flags: ["-b", "-c", "-d", "-e", "-g", "-p", "-t", "-x", "-w", "--beep", "--color", "--no-color", "--differences", "--errexit", "--chgexit", "--exec", "--precise", "--no-title", "--no-wrap"],
    withValue: ["-n", "--interval", "-q", "--equexit"],
    notThrough: "`watch` runs it again and again, through `sh -c`"
  },
  busybox: { notThrough: "`busybox` runs one of its own programs" }
}

/** Programs that run a command given in their words, with options this table does not follow: deny rules look at every word after them. */
const OTHER_WRAPPERS: ReadonlySet<string> = new Set([
  "su", "runuser", "pkexec", "sg", "ssh", "script", "parallel", "sem", "tmux", "screen", "strace", "ltrace", "valgrind", "gdb",
  "perf", "unshare", "nsenter", "firejail", "bwrap", "proot", "fakeroot", "catchsegv", "unbuffer", "xvfb-run",
  "dbus-run-session", "systemd-run", "caffeinate", "rlwrap", "torsocks", "proxychains", "proxychains4", "ifne", "chronic"
])

/** Whether `name` (a program's name, without its directory) runs a command given in its words. */
export const isWrapper = (name: string): boolean => Object.hasOwn(WRAPPERS, name) || OTHER_WRAPPERS.has(name)

/** What a wrapper at some word runs. */
export type LookThrough =
  /** The command starting at `start`; `refused`: why an allow rule may not approve it through the wrapper. */
  | { readonly _tag: "Command"; readonly start: number; readonly refused: string | undefined }
  /** A command its words do not show (an option the table does not know, a command in a string). */
  | { readonly _tag: "Hidden"; readonly refused: string }
  /** No command (`command -v x`, `timeout 5`). */
  | { readonly _tag: "Nothing" }

const isAssignment = (word: string): boolean => {
  const equals = word.indexOf("=")
  if (equals <= 0) return false
  for (let k = 0; k < equals; k++) {
    const c = word[k]!
    const name = c === "_" || (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (k > 0 && c >= "0" && c <= "9")
    if (!name) return false
  }
  return true
}

const isNumericOption = (word: string): boolean => word.length > 1 && [...word.slice(1)].every((c) => c >= "0" && c <= "9")

/** How many words option `word` takes (1 or 2), or `undefined` when the table does not know it. */
const optionLength = (spec: WrapperSpec, word: string): 1 | 2 | undefined => {
  const flags = spec.flags ?? []
  const withValue = spec.withValue ?? []
  const optional = spec.optionalValue ?? []
  if (flags.includes(word) || optional.includes(word)) return 1
  if (withValue.includes(word)) return 2
  if (word.startsWith("--")) {
    const name = word.slice(0, word.indexOf("=") < 0 ? word.length : word.indexOf("="))
    return name !== word && (withValue.includes(name) || optional.includes(name)) ? 1 : undefined
  }
  const short = word.slice(0, 2)
  if (withValue.includes(short) || optional.includes(short)) return 1
  if (spec.numeric === true && isNumericOption(word)) return 1
  // a group of flags, `-iv`
  return [...word.slice(1)].every((letter) => flags.includes(`-${letter}`)) ? 1 : undefined
}

/** The name an option is refused or special under: `--output=x` is `--output`, `-ofile` is `-o`. */
const optionName = (word: string): string =>
  word.startsWith("--") ? word.slice(0, word.indexOf("=") < 0 ? word.length : word.indexOf("=")) : word.slice(0, 2)

/**
 * What the wrapper `name` at `words[at]` runs: where the command starts after its options (and
 * `--`, and the operands and `NAME=value` words before the command), and whether allow rules may
 * look through it. `undefined` when `name` is no wrapper.
 */
export const lookThrough = (words: ReadonlyArray<string>, at: number, name: string): LookThrough | undefined => {
  if (OTHER_WRAPPERS.has(name)) return { _tag: "Hidden", refused: `\`${name}\` runs another command` }
  if (!Object.hasOwn(WRAPPERS, name)) return undefined
  const spec = WRAPPERS[name]!
  let refused = spec.notThrough
  const hidden = (why: string): LookThrough => ({ _tag: "Hidden", refused: refused ?? why })
  let j = at + 1
  let options = true
  while (j < words.length) {
    const word = words[j]!
    if (spec.assignments === true && isAssignment(word)) {
      refused ??= `it sets variables for the command (\`${word.slice(0, word.indexOf("="))}=\`)`
      j++
      continue
    }
    if (!options || !word.startsWith("-") || (word === "-" && !(spec.flags ?? []).includes("-"))) break
    if (word === "--") {
      options = false
      j++
      continue
    }
    if ((spec.noCommand ?? []).includes(word)) return { _tag: "Nothing" }
    if ((spec.commandInValue ?? []).includes(optionName(word))) return hidden(`\`${name} ${optionName(word)}\` runs a command given as a string`)
    const length = optionLength(spec, word)
    if (length === undefined) return hidden(`an option of \`${name}\` that is not known here (\`${word}\`)`)
    refused ??= spec.refuse?.[optionName(word)]
    j += length
  }
  const start = j + (spec.operands ?? 0)
  return start < words.length ? { _tag: "Command", start, refused } : { _tag: "Nothing" }
}
