/**
 * Approval of tool calls that require it (`exec`), by policy: `approve` (`--yes`) approves all,
 * `deny` denies all, `ask` asks y/N on a terminal and denies without one; a denial without asking
 * says why on stderr. The loop denies on its own when nobody answers within `approvalTimeout`.
 */
import { Effect } from "effect"
import * as Hook from "../domain/Hook.ts"
import * as Format from "./format.ts"
import type { ScreenShape } from "./screen.ts"
import type { ApprovalPolicy } from "./settingsFile.ts"

/** What the model is told when there was nobody to ask. */
export const NO_TERMINAL_REASON = "Not approved: this call needs the user's approval, and agent-loop has no terminal to ask " +
  "(it was not started with --yes)."

/** What the model is told when the user said no. */
export const DENIED_REASON = "The user denied this call."

/** What the model is told when the policy denies every call that needs approval. */
export const POLICY_DENIED_REASON = "Not approved: agent-loop is set to deny every call that needs approval (approval: deny)."

/** How approval is decided. */
export interface ApprovalOptions {
  readonly policy: ApprovalPolicy
  readonly screen: ScreenShape
  /**
   * Reads the answer; `undefined` when input has ended. Absent when there is no terminal to ask on:
   * the commands pass it only when stdin is a terminal, so this is the one place that decides.
   */
  readonly ask: Effect.Effect<string | undefined> | undefined
}

const isYes = (answer: string | undefined) => answer !== undefined && /^\s*y(es)?\s*$/i.test(answer)

/** The CLI's approval hook. */
export const approvalHook = (options: ApprovalOptions): Hook.Hook =>
  Hook.make({
    approveTool: ({ call }) => {
      if (options.policy === "approve") return Hook.approve
      const { screen } = options
      const what = `${Format.truncate(call.name, 80)} ${Format.truncate(JSON.stringify(call.arguments ?? {}), 120)}`
      if (options.policy === "deny") {
        return Effect.as(screen.line(`agent-loop: denied ${what}: approval is set to deny`), Hook.deny(POLICY_DENIED_REASON))
      }
      const ask = options.ask
      if (ask === undefined) {
        return Effect.as(
          screen.line(`agent-loop: denied ${what}: it needs approval and there is no terminal to ask (pass --yes to approve)`),
          Hook.deny(NO_TERMINAL_REASON)
        )
      }
      return Effect.gen(function*() {
        yield* screen.prompt(`${screen.err.yellow("?")} allow ${screen.err.bold(what)}? [y/N] `)
        const answer = yield* ask
        if (isYes(answer)) return Hook.approve
        yield* screen.line(screen.err.dim(`(denied ${Format.truncate(call.name, 80)})`))
        return Hook.deny(DENIED_REASON)
      }).pipe(Effect.onInterrupt(() => screen.line(screen.err.dim(`(no answer: ${Format.truncate(call.name, 80)} denied)`))))
    }
  })
