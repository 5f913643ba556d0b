/**
 * Tool results scrubbed of known secrets before anything else sees them. A command the user
 * approved can still print a key the CLI read — `cat /proc/$PPID/environ` shows the environment
 * the process started with, whatever `process.env` says now — and the result would go to the
 * model, the events and the session. The hook runs first among `afterTool` handlers, so every
 * other handler (file hooks included) already sees the scrubbed text.
 */
import * as Hook from "../domain/Hook.ts"
import type { SecretsShape } from "../services/Secrets.ts"

/** Runs before every other handler of its points. */
export const SCRUB_PRIORITY = Number.MAX_SAFE_INTEGER

/** The hook that replaces every known secret in a tool result with `<redacted>`. */
export const scrubToolResults = (secrets: SecretsShape): Hook.Hook => {
  const scrub = ({ result }: { readonly result: { readonly content: string } }) => {
    const content = secrets.scrub(result.content)
    return content === result.content ? undefined : Hook.patch({ content })
  }
  return Hook.make({ afterTool: scrub, onToolFailure: scrub })
}
