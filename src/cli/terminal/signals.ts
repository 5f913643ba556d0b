/**
 * How the CLI ends on a signal: within `EXIT_DEADLINE_MS`, whatever is still running. SIGTERM
 * interrupts everything (through `runMain`) and exits 143 (128 + 15, as a shell reports it); a
 * second SIGTERM exits at once. After Ctrl-C has asked `run` to stop, or `chat` to quit, the same
 * deadline applies with 130. Finalizers normally finish well within it (a command `exec` runs, or
 * a hook script, gets SIGKILL half a second after SIGTERM); the deadline only guarantees that nothing — a hook that ignores
 * SIGTERM, a server that never answers — can keep the process alive.
 */
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import { ExitCode } from "./failure.ts"

/** The longest the CLI takes to exit once a signal asked it to. */
export const EXIT_DEADLINE_MS = 1200

let terminated = false
let deadline: number | undefined

/**
 * Exits with `code` in `ms` unless the process has ended by then. The timer is unreferenced: it
 * never keeps the process alive, it only ends one that would not end. The first call wins.
 */
export const exitWithin = (code: number, ms: number = EXIT_DEADLINE_MS): void => {
  if (deadline !== undefined) return
  deadline = code
  setTimeout(() => process.exit(code), ms).unref()
}

/** Takes SIGTERM for the CLI: exit 143 within the deadline (`runMain` interrupts the program), or at once on a second one. */
export const installSigterm = (): void => {
  process.on("SIGTERM", () => {
    if (terminated) process.exit(ExitCode.terminated)
    terminated = true
    exitWithin(ExitCode.terminated)
  })
}

/** `runMain`'s teardown: 143 after SIGTERM, otherwise the default exit codes. */
export const teardown: Runtime.Teardown = (exit, onExit) =>
  terminated && !Exit.isSuccess(exit) ? onExit(ExitCode.terminated) : Runtime.defaultTeardown(exit, onExit)
