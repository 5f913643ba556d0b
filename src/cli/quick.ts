/**
 * The answers the installed command gives without starting Effect: `--help` / `-h` of any command
 * path, `--version` / `-v`, and the `models` list (`--provider NAME`'s part of it too). They are
 * data, known when the package is built (`helpPages.ts` writes `help.json` beside this file from
 * `effect/cli`'s own pages; the model registry is a table), so printing them needs neither
 * `effect/cli` nor the command tree, whose loading is most of a start-up's time and memory.
 *
 * Only the exact forms are answered here (`agent-loop run --help`, not `agent-loop run --model x
 * --help`); anything else, and every form when `help.json` is missing (the sources, not the built
 * package), goes to the full CLI, which prints the same. Node built-ins and plain data only.
 */
import * as fs from "node:fs"
import type { HelpPages } from "./helpPages.ts"
import { type Listing, listing } from "./providers/modelsTable.ts"

/** Where a quick answer is written. */
export interface QuickStreams {
  readonly stdout: { write: (text: string) => unknown; readonly isTTY?: boolean }
  readonly stderr: { write: (text: string) => unknown }
  readonly env: NodeJS.ProcessEnv
}

/** The help pages built beside this module, or `undefined` when there are none (running the sources). */
export const builtPages = (): HelpPages | undefined => {
  try {
    return JSON.parse(fs.readFileSync(new URL("./help.json", import.meta.url), "utf8")) as HelpPages
  } catch {
    return undefined
  }
}

const set = (value: string | undefined): value is string => value !== undefined && value !== ""

/** Whether `effect/cli` would print its pages in colour here: the rule of its `TerminalCapabilities`. */
export const colors = (streams: QuickStreams): boolean => {
  const { NO_COLOR, FORCE_COLOR, TERM } = streams.env
  if (TERM === "dumb" || set(NO_COLOR)) return false
  if (set(FORCE_COLOR) && FORCE_COLOR !== "0" && FORCE_COLOR.toLowerCase() !== "false") return true
  return streams.stdout.isTTY === true
}

/** `--version | -v` alone. */
const isVersion = (args: ReadonlyArray<string>) => args.length === 1 && (args[0] === "--version" || args[0] === "-v")
/** `[...command path, --help | -h]` (whether the path is one is up to the pages). */
const isHelp = (args: ReadonlyArray<string>) => args.at(-1) === "--help" || args.at(-1) === "-h"

/**
 * The listing `models`, `models --provider NAME` or `models --provider=NAME` asks for; `undefined`
 * for anything else, an unknown provider too (the CLI says what is wrong with it).
 */
const modelsAsked = (args: ReadonlyArray<string>): Listing | undefined => {
  if (args.length === 0) return listing()
  const [flag = "", value] = args
  const provider = args.length === 2 && flag === "--provider"
    ? value
    : args.length === 1 && flag.startsWith("--provider=")
    ? flag.slice("--provider=".length)
    : undefined
  return provider === undefined || provider === "" ? undefined : listing(provider)
}

/**
 * Answers `args` (the command line after the script) when it is one of the quick forms, and says
 * whether it did; otherwise writes nothing and the full CLI runs. `pages` may be given as the
 * function that reads them, called only for a help or version request.
 */
export const answer = (args: ReadonlyArray<string>, pages: HelpPages | undefined | (() => HelpPages | undefined), streams: QuickStreams): boolean => {
  const shown = args[0] === "models" ? modelsAsked(args.slice(1)) : undefined
  if (shown !== undefined) {
    streams.stdout.write(shown.lines.map((line) => `${line}\n`).join(""))
    streams.stderr.write(`${shown.note}\n`)
    return true
  }
  const version = isVersion(args)
  if (!version && !isHelp(args)) return false
  // read only now: a run does not pay for the pages
  const built = typeof pages === "function" ? pages() : pages
  const path = args.slice(0, -1)
  // the pages are keyed by the path joined with spaces: a word that is empty or holds a space names no command
  const named = path.every((word) => word !== "" && !word.includes(" "))
  const page = built === undefined ? undefined : version ? built.versionLine : named ? built.pages[path.join(" ")] : undefined
  if (page === undefined) return false
  streams.stdout.write(`${colors(streams) ? page.color : page.plain}\n`)
  return true
}
