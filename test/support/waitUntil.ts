/**
 * Waiting on a condition another process makes true (a file, a row, a pane's text), polled with a
 * deadline: tests wait on what happened, never for a fixed time.
 */

/** Resolves once `condition` holds; rejects at the deadline with `what`. */
export const waitUntil = async (what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
