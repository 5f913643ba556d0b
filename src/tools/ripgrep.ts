/**
 * ripgrep (`rg`), when it is installed, as the fast way for `grep` to learn which files hold a
 * match: given a list of files (the walk's, `walk.ts`, so ripgrep's own idea of what to skip never
 * matters) and a pattern (`grepPattern.ts`), it names those with a matching line. Nothing it
 * prints reaches the model: grep reads and matches those files itself.
 *
 * It is run without a shell, without its config file (`--no-config`: `RIPGREP_CONFIG_PATH` cannot
 * change an answer), with an empty environment, its own default regex engine, every file searched
 * as raw bytes (`--text`, `--encoding none`: no binary guess, no transcoding), no ignore files,
 * and no messages about unreadable files. Its output is a list of names no longer than the list it
 * was given. It is killed when the search no longer needs it.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { isWithin } from "../domain/paths.ts"

/** ripgrep refused to run the search (a pattern it cannot compile, a version that lacks a flag): grep searches without it. */
export class RipgrepUnusable extends Error {}

/** The oldest ripgrep with every flag used here (`--engine`). */
const MIN_MAJOR = 12

const versions = new Map<string, Promise<boolean>>()
let onPath: { readonly path: string | undefined; readonly found: string | undefined } | undefined

/** Whether `path` is ripgrep, new enough: asked once per path. */
const isRipgrep = (path: string): Promise<boolean> => {
  const known = versions.get(path)
  if (known !== undefined) return known
  const answer = new Promise<boolean>((resolve) => {
    let out = ""
    const child = spawn(path, ["--version"], { env: {}, stdio: ["ignore", "pipe", "ignore"] })
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => {
      if (out.length < 4096) out += chunk
    })
    child.on("error", () => resolve(false))
    child.on("close", (code) => {
      const version = /^ripgrep (\d+)\./.exec(out)
      resolve(code === 0 && version !== null && Number(version[1]) >= MIN_MAJOR)
    })
  })
  versions.set(path, answer)
  return answer
}

/** The first executable `rg` in the absolute directories of `PATH`; looked up once per value of `PATH`. */
const rgOnPath = (): string | undefined => {
  const path = process.env["PATH"]
  if (onPath !== undefined && onPath.path === path) return onPath.found
  let found: string | undefined
  for (const directory of (path ?? "").split(nodePath.delimiter)) {
    if (!nodePath.isAbsolute(directory)) continue
    const candidate = nodePath.join(directory, "rg")
    try {
      fs.accessSync(candidate, fs.constants.X_OK)
      if (!fs.statSync(candidate).isFile()) continue
      found = candidate
      break
    } catch {
      // not here
    }
  }
  onPath = { path, found }
  return found
}

/**
 * The ripgrep to run for a search in `root`: `option` when it is a path, none when it is `false`,
 * else the one on `PATH`. Never one inside the workspace (a repository could ship its own `rg`),
 * and only a ripgrep new enough.
 */
export const findRipgrep = async (option: string | false | undefined, root: string): Promise<string | undefined> => {
  if (option === false) return undefined
  const path = option ?? rgOnPath()
  if (path === undefined) return undefined
  let real: string
  try {
    real = fs.realpathSync(path)
  } catch {
    return undefined
  }
  if (isWithin(root, real)) return undefined
  return (await isRipgrep(path)) ? path : undefined
}

/** A ripgrep run over some files. */
export interface RipgrepRun {
  /** The files of the list that hold a match, as given. */
  readonly matching: Promise<ReadonlySet<string>>
  /** Stops it (killed), if still running. */
  readonly kill: () => void
}

/** How much of ripgrep's stderr is kept, to say why it failed. */
const MAX_STDERR = 4096

/**
 * Runs ripgrep in `cwd` over `files` (paths relative to `cwd`) for `pattern`, naming those with a
 * matching line; files over `maxFileBytes` are not searched.
 */
export const ripgrepMatching = (rg: string, cwd: string, pattern: string, maxFileBytes: number, files: ReadonlyArray<string>): RipgrepRun => {
  let child: ChildProcess | undefined
  const matching = new Promise<ReadonlySet<string>>((resolve, reject) => {
    const args = [
      "--no-config",
      "--files-with-matches",
      "--null",
      "--text",
      "--encoding=none",
      "--no-ignore",
      "--no-messages",
      "--engine=default",
      `--max-filesize=${maxFileBytes}`,
      `--regexp=${pattern}`,
      "--",
      ...files
    ]
    const proc = spawn(rg, args, { cwd, env: {}, stdio: ["ignore", "pipe", "pipe"] })
    child = proc
    const out: Array<Buffer> = []
    let err = ""
    proc.stdout!.on("data", (chunk: Buffer) => out.push(chunk))
    proc.stderr!.setEncoding("utf8")
    proc.stderr!.on("data", (chunk: string) => {
      if (err.length < MAX_STDERR) err += chunk
    })
    proc.on("error", (error) => reject(new RipgrepUnusable(error.message)))
    proc.on("close", (code, signal) => {
      child = undefined
      // 0: matches, 1: none, 2: some error; with --no-messages only a refusal of the whole search prints
      if (code === 0 || code === 1 || (code === 2 && err.trim() === "")) {
        const names = Buffer.concat(out).toString("utf8").split("\0")
        names.pop()
        resolve(new Set(names))
      } else {
        reject(new RipgrepUnusable(signal !== null ? `ripgrep was stopped by ${signal}` : err.trim().slice(0, 500)))
      }
    })
  })
  return {
    matching,
    kill: () => {
      child?.kill("SIGKILL")
    }
  }
}
