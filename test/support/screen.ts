/**
 * The CLI's screen writing into strings instead of the process's streams, for tests of what the
 * user is shown without starting a process.
 */
import * as Screen from "../../src/cli/terminal/screen.ts"

/** How the recorded terminal looks to the screen. */
export interface RecordingOptions {
  /** stdout and stderr are terminals (a live screen: spinner, status line); default not. */
  readonly isTTY?: boolean
  /** stdin is a terminal (the user can be asked); default yes. */
  readonly stdinIsTTY?: boolean
  readonly env?: NodeJS.ProcessEnv
}

/** A screen whose stdout and stderr are kept in `out`. */
export const recordingScreen = (options: RecordingOptions = {}) => {
  const out = { stdout: "", stderr: "" }
  const tty = options.isTTY === undefined ? {} : { isTTY: options.isTTY }
  const screen = Screen.make({
    stdout: { write: (text: string) => (out.stdout += text), ...tty },
    stderr: { write: (text: string) => (out.stderr += text), ...tty },
    stdinIsTTY: options.stdinIsTTY ?? true,
    env: options.env ?? {}
  })
  return { out, screen }
}
