/**
 * What the CLI says on stderr about the sandbox while turns run: when `exec` failed closed because
 * the sandbox cannot start, the library's one line — which names the fix — is shown whole, once
 * per process, instead of only cut short in the tool's line.
 */
import * as Effect from "effect/Effect"
import type { AgentEvent } from "../../domain/Event.ts"
import { clean } from "../terminal/safeText.ts"
import type { ScreenShape } from "../terminal/screen.ts"

/** How the sandbox's refusal to start begins (`SandboxError` `Unavailable`). */
const CANNOT_START = "The sandbox cannot start: "

/** An event handler that shows the sandbox's refusal to start, once. */
export const handler = (screen: ScreenShape): (event: AgentEvent) => Effect.Effect<void> => {
  let shown = false
  return (event) => {
    if (shown || event._tag !== "ToolExecEnd" || !event.isError) return Effect.void
    const at = event.result.indexOf(CANNOT_START)
    if (at < 0) return Effect.void
    shown = true
    const line = event.result.slice(at).split("\n", 1)[0]!
    return screen.line(`agent-loop: error: ${clean(line)}`)
  }
}
