/**
 * Drives a program on a real pseudo-terminal through tmux, on a private tmux server (own socket),
 * so keystrokes such as Ctrl-C reach it exactly as a user's would. Output is read by polling the
 * pane against a condition with a bounded deadline.
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { tempDir } from "./cliProcess.ts"
import { DEADLINE_MS } from "./waitUntil.ts"

/** Whether tmux can be run here. */
export const hasTmux = spawnSync("tmux", ["-V"]).status === 0

/** A program running in a tmux pane. */
export interface Pane {
  /** Types `text` literally, then Enter. */
  readonly line: (text: string) => void
  /** Sends tmux key names, e.g. `C-c`. */
  readonly keys: (...keys: ReadonlyArray<string>) => void
  /** Everything the pane shows, history included. */
  readonly capture: () => string
  /** Resolves with the capture once it matches; rejects at the deadline with what was shown. */
  readonly waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<string>
  /** Resolves with the exit status once the program has ended; rejects if a signal killed it. */
  readonly exitStatus: (timeoutMs?: number) => Promise<number>
  /**
   * When (epoch milliseconds, this machine's clock) the pane's wrapper saw each SIGINT the terminal
   * sent its foreground group (the program got the same signal at the same moment), and when it saw
   * the program exit: a bound from a key press to the exit is measured between these, from the
   * signal's delivery, not from when the test asked tmux to press the key.
   */
  readonly signalTimes: () => { readonly interrupts: ReadonlyArray<number>; readonly exitedAt: number | undefined }
  /** The pid of the program (the child of the pane's exit-recording wrapper). */
  readonly pid: () => number
  /** The pane's title, which programs set with OSC 0/2 escape sequences. */
  readonly title: () => string
  /** Everything the pane shows, with its colours and attributes as escape sequences. */
  readonly captureStyled: () => string
  /** Whether the program rang the terminal's bell (tmux's window bell flag). */
  readonly rang: () => boolean
  readonly kill: () => void
}

const POLL_MS = 25

/**
 * Runs `argv` and writes its exit status to a file. tmux does not always record a dead pane's
 * status, so the pane runs this instead of `argv` itself; it ignores SIGINT (the terminal sends
 * Ctrl-C to the whole foreground group, so `argv` gets it too) and only waits. It notes, in a
 * second file, when each SIGINT reached it and when `argv` exited. The status file appears whole
 * (renamed into place): one read while it was being written was taken for an exit status of 0.
 */
const RECORD_EXIT = `
const { spawn } = require("node:child_process")
const { appendFileSync, renameSync, writeFileSync } = require("node:fs")
const [file, command, ...args] = process.argv.slice(1)
process.on("SIGINT", () => appendFileSync(file + ".times", "interrupt " + Date.now() + "\\n"))
spawn(command, args, { stdio: "inherit" }).on("exit", (code, signal) => {
  appendFileSync(file + ".times", "exit " + Date.now() + "\\n")
  // written whole, then renamed into place: a reader never sees the file empty (read as exit 0)
  writeFileSync(file + ".tmp", code === null ? "signal " + signal : String(code))
  renameSync(file + ".tmp", file)
})
`

/** Starts `argv` (run directly, no shell) in a new pane (160x50 unless `size` says) with `env`; the pane stays after it exits. */
export const startPane = (
  argv: ReadonlyArray<string>,
  env: Record<string, string>,
  cwd: string,
  size: { readonly columns: number; readonly rows: number } = { columns: 160, rows: 50 }
): Pane => {
  const dir = tempDir("agent-loop-tmux-")
  const socket = path.join(dir, "tmux.sock")
  const statusFile = path.join(dir, "exit-status")
  const tmux = (...args: ReadonlyArray<string>) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8", env, cwd })
  tmux(
    "-f",
    "/dev/null",
    "new-session",
    "-d",
    "-s",
    "cli",
    "-x",
    String(size.columns),
    "-y",
    String(size.rows),
    "-c",
    cwd,
    process.execPath,
    "-e",
    RECORD_EXIT,
    statusFile,
    ...argv,
    ";",
    "set-option",
    "-g",
    "remain-on-exit",
    "on"
  )
  const capture = () => tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "cli")
  const poll = <A>(check: () => A | undefined, describe: string, timeoutMs: number) =>
    new Promise<A>((resolve, reject) => {
      const deadline = Date.now() + timeoutMs
      const tick = () => {
        let value: A | undefined
        try {
          value = check()
        } catch (error) {
          return reject(error)
        }
        if (value !== undefined) return resolve(value)
        if (Date.now() > deadline) return reject(new Error(`${describe} within ${timeoutMs} ms; the pane shows:\n${capture()}`))
        setTimeout(tick, POLL_MS)
      }
      tick()
    })
  return {
    line: (text) => {
      tmux("send-keys", "-t", "cli", "-l", text)
      tmux("send-keys", "-t", "cli", "Enter")
    },
    keys: (...keys) => {
      tmux("send-keys", "-t", "cli", ...keys)
    },
    capture,
    waitFor: (pattern, timeoutMs = DEADLINE_MS) =>
      poll(() => {
        const shown = capture()
        return pattern.test(shown) ? shown : undefined
      }, `never showed ${pattern}`, timeoutMs),
    exitStatus: (timeoutMs = DEADLINE_MS) =>
      poll(() => {
        if (!fs.existsSync(statusFile)) return undefined
        const status = fs.readFileSync(statusFile, "utf8")
        if (status.startsWith("signal")) throw new Error(`the program was killed: ${status}`)
        if (!/^\d+$/.test(status)) throw new Error(`the exit status file holds ${JSON.stringify(status)}`)
        return Number(status)
      }, "the program did not exit", timeoutMs),
    signalTimes: () => {
      const lines = fs.existsSync(`${statusFile}.times`) ? fs.readFileSync(`${statusFile}.times`, "utf8").split("\n") : []
      const times = (kind: string) => lines.filter((line) => line.startsWith(`${kind} `)).map((line) => Number(line.slice(kind.length + 1)))
      return { interrupts: times("interrupt"), exitedAt: times("exit")[0] }
    },
    pid: () => {
      const wrapper = tmux("list-panes", "-t", "cli", "-F", "#{pane_pid}").trim()
      const children = fs.readFileSync(`/proc/${wrapper}/task/${wrapper}/children`, "utf8").trim().split(/\s+/)
      return Number(children[0])
    },
    title: () => tmux("display-message", "-p", "-t", "cli", "#{pane_title}").trim(),
    captureStyled: () => tmux("capture-pane", "-p", "-e", "-J", "-S", "-", "-t", "cli"),
    rang: () => tmux("display-message", "-p", "-t", "cli", "#{window_bell_flag}").trim() === "1",
    kill: () => {
      spawnSync("tmux", ["-S", socket, "kill-server"])
    }
  }
}
