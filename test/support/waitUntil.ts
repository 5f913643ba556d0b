/**
 * Waiting on a condition another process makes true (a file, a row, a pane's text), polled with a
 * deadline: tests wait on what happened, never for a fixed time.
 */

/**
 * The default deadline of every wait on another process (here, `spawnCli`'s `waitFor`, the
 * scripted servers' `received`, a tmux pane's `waitFor` and `exitStatus`). Generous: on a machine
 * loaded to several times its cores a CLI takes seconds to start and answer, not the tenths of a
 * second it takes on an idle one (measured: 10 s deadlines missed at about 8 times the cores). A
 * passing test never waits for it; only a failing one does, so a long deadline costs nothing.
 */
export const DEADLINE_MS = 60_000

/** Resolves once `condition` holds; rejects at the deadline with `what`. */
export const waitUntil = async (what: string, condition: () => boolean | Promise<boolean>, timeoutMs = DEADLINE_MS): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
