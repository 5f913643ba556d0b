/**
 * How the installed `agent-loop` command keeps credentials out of reach of the commands it runs.
 *
 * `/proc/PID/environ` shows the environment a process started with, whatever it later removes from
 * `process.env`, to every process of the same user: `exec` could read the provider keys and the
 * database password from `/proc/$PPID/environ` and print them in a form no scrubber knows (base64).
 * Likewise `/proc/PID/cmdline` (what `ps` shows) holds a password given on the command line.
 *
 * So the launcher (`bin/agent-loop.js`) replaces itself (`process.execve`, same process id) with a
 * fresh start of the CLI whose environment lacks every variable that looks like a credential
 * (`tools/secretEnv.ts`) and whose command line has URL passwords masked. The values travel in a
 * handover file: created private (0600 in a 0700 directory, in memory-backed storage where there is
 * some), named by `AGENT_LOOP_HANDOVER`, read and deleted by the new start before any other code
 * runs, and put back into `process.env` and `process.argv`. What the process then holds is its own
 * memory: `/proc` shows only its clean start.
 *
 * Node built-ins and plain data only, so the launcher adds one Node start and nothing else.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { looksSecret } from "../tools/secretEnv.ts"
import * as Quick from "./quick.ts"

/** Names the handover file of a fresh start. */
export const HANDOVER_VARIABLE = "AGENT_LOOP_HANDOVER"

const HANDOVER_FILE = "handover.json"
const HANDOVER_DIR_PREFIX = "agent-loop-"

/** What one start hands the next. */
export interface Handover {
  readonly env: Readonly<Record<string, string>>
  /** The real arguments (after the script), when the command line carried a password. */
  readonly argv?: ReadonlyArray<string>
}

/** A URL's password in an argument (`postgres://user:PASSWORD@host`, also after `--flag=`). */
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^/\s:@]*:)([^/\s@]+)(@)/gi

/** An `http(s)` URL's user part, which is a token there (`https://TOKEN@host`; see `domain/urlCredentials.ts`). */
const URL_TOKEN = /(\bhttps?:\/\/)([^/\s:@]+)((?::[^/\s@]*)?@)/gi

/** `arg` with every URL credential (a password, an `http(s)` URL's user part) replaced by `***`. */
export const maskArgument = (arg: string): string => arg.replace(URL_TOKEN, "$1***$3").replace(URL_PASSWORD, "$1***$3")

/**
 * The flags of `args` whose value is a URL holding a password (`--database-url postgres://u:pw@h`,
 * `--cluster=...`): the launcher masks them, but the process that started this one saw them.
 */
export const passwordFlags = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const found = new Set<string>()
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (!arg.startsWith("--")) continue
    const eq = arg.indexOf("=")
    const [flag, value] = eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, args[i + 1] ?? ""]
    if (maskArgument(value) !== value) found.add(flag)
  }
  return [...found]
}

/** The variables of `env` that look like credentials and must not stay in a process's initial environment. */
export const credentialNames = (env: NodeJS.ProcessEnv): ReadonlyArray<string> =>
  Object.entries(env).flatMap(([name, value]) =>
    name !== HANDOVER_VARIABLE && value !== undefined && value !== "" && looksSecret(name, value) ? [name] : []
  )

/** Private, preferably memory-backed places for the handover file. */
const handoverBases = (env: NodeJS.ProcessEnv): ReadonlyArray<string> =>
  [env["XDG_RUNTIME_DIR"], "/dev/shm", os.tmpdir()].filter((dir): dir is string => dir !== undefined && dir !== "")

/** Writes the handover into a fresh private directory; its path, or `undefined` when no place takes it. */
export const writeHandover = (handover: Handover, env: NodeJS.ProcessEnv = process.env): string | undefined => {
  for (const base of handoverBases(env)) {
    let dir: string | undefined
    try {
      dir = fs.mkdtempSync(nodePath.join(base, HANDOVER_DIR_PREFIX))
      const file = nodePath.join(dir, HANDOVER_FILE)
      fs.writeFileSync(file, JSON.stringify(handover), { mode: 0o600, flag: "wx" })
      return file
    } catch {
      if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  return undefined
}

/** Deletes a handover file and its directory. */
export const removeHandover = (file: string): void => {
  fs.rmSync(file, { force: true })
  try {
    fs.rmdirSync(nodePath.dirname(file))
  } catch {
    // not ours to clean, or already gone
  }
}

/**
 * Reads and deletes the handover a previous start wrote. Only a file that is one: named as the
 * launcher names them, a regular file (not a link) of this user that no one else may read.
 */
export const readHandover = (file: string): Handover => {
  if (nodePath.basename(file) !== HANDOVER_FILE || !nodePath.basename(nodePath.dirname(file)).startsWith(HANDOVER_DIR_PREFIX)) {
    throw new Error(`${HANDOVER_VARIABLE} does not name a handover file: ${file}`)
  }
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
  try {
    const stat = fs.fstatSync(fd)
    if (!stat.isFile() || (process.getuid !== undefined && stat.uid !== process.getuid()) || (stat.mode & 0o077) !== 0) {
      throw new Error(`${HANDOVER_VARIABLE} names a file that is not a private handover: ${file}`)
    }
    const parsed = JSON.parse(fs.readFileSync(fd, "utf8")) as Handover
    removeHandover(file)
    const env: Record<string, string> = {}
    for (const [name, value] of Object.entries(parsed.env ?? {})) if (typeof value === "string") env[name] = value
    const argv = Array.isArray(parsed.argv) && parsed.argv.every((a) => typeof a === "string") ? parsed.argv : undefined
    return argv === undefined ? { env } : { env, argv }
  } finally {
    fs.closeSync(fd)
  }
}

/** Answers the forms `quick.ts` knows (help, version, the model list) without loading the CLI. */
const answeredQuickly = (args: ReadonlyArray<string>): boolean => {
  // a reader that stops early (`agent-loop models | head -1`): end quietly with 141, as the CLI does
  const closedPipe = (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error
    process.exit(141)
  }
  process.stdout.on("error", closedPipe)
  const answered = Quick.answer(args, Quick.builtPages, { stdout: process.stdout, stderr: process.stderr, env: process.env })
  if (!answered) process.stdout.off("error", closedPipe)
  return answered
}

/**
 * The launcher: answers help, version and the model list at once (`quick.ts`); otherwise takes over a handover when this is the fresh start, else starts afresh when the
 * environment or the command line holds something to hide (and the platform can), then runs
 * `main`. `script` is the launcher's own file, to start again.
 */
export const launch = async (main: string, script: string): Promise<void> => {
  const env = process.env
  if (env[HANDOVER_VARIABLE] === undefined && answeredQuickly(process.argv.slice(2))) return
  const given = env[HANDOVER_VARIABLE]
  if (given !== undefined) {
    delete env[HANDOVER_VARIABLE]
    const handover = readHandover(given)
    // Into this process's own copy of the environment: its initial environment never held them.
    Object.assign(env, handover.env)
    if (handover.argv !== undefined) process.argv.splice(2, process.argv.length - 2, ...handover.argv)
  } else if (typeof process.execve === "function") {
    const names = credentialNames(env)
    const args = process.argv.slice(2)
    const masked = args.map(maskArgument)
    const argvHidden = masked.some((arg, i) => arg !== args[i])
    if (names.length > 0 || argvHidden) {
      const file = writeHandover({ env: Object.fromEntries(names.map((name) => [name, env[name]!])), ...(argvHidden ? { argv: args } : {}) }, env)
      if (file !== undefined) {
        const clean: Record<string, string> = {}
        for (const [name, value] of Object.entries(env)) if (value !== undefined && !names.includes(name)) clean[name] = value
        clean[HANDOVER_VARIABLE] = file
        try {
          process.execve(process.execPath, [process.execPath, ...process.execArgv, script, ...masked], clean)
        } catch {
          // Could not start afresh: run here, as before (the scrubber still covers the values it knows).
          removeHandover(file)
        }
      }
    }
  }
  await import(main)
}
