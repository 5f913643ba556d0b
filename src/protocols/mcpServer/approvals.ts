/**
 * Approvals over MCP: a call the loop would ask about is asked of the MCP client by elicitation
 * (`elicitation/create`, a form): a message naming the tool and its arguments in one line, and a
 * form with the decision (`allow_once`, `allow_always` when a rule can be suggested, `deny`) and
 * an optional reason. The answer is read as an answer typed at the CLI's prompt (`y`, `a`,
 * `n REASON`), or a denial with its own reason for the model. Pure: `server.ts` sends and waits.
 */
import type * as McpTypes from "@modelcontextprotocol/sdk/types.js"
import * as Hook from "../../domain/Hook.ts"

/** The decisions the form offers. */
export const ALLOW_ONCE = "allow_once"
export const ALLOW_ALWAYS = "allow_always"
export const DENY = "deny"

/** What the model is told when the client that ran the turn cannot be asked (it did not declare elicitation). */
export const NO_ELICITATION_REASON = "Not approved: this call needs the user's approval, and the MCP client that started this turn cannot be asked " +
  "(it does not support elicitation). agent-loop mcp serve approves such calls only when started with --yes or when a permission rule allows them."

/** What the model is told when the user dismissed the question without answering. */
export const CANCELLED_REASON = "Not approved: the user dismissed the question about this call without answering."

/** What the model is told when the user declined to answer the form. */
export const DECLINED_REASON = "The user denied this call."

/** What the model is told when nobody answered within the approval timeout. */
export const timedOutReason = (seconds: number) =>
  `Not approved: nobody answered the question about this call within ${seconds} s (the approval timeout), so agent-loop denied it.`

/** What the model is told when asking failed (the client went away, or answered with an error). */
export const failedReason = (message: string) => `Not approved: agent-loop could not ask the MCP client about this call (${message}).`

/** The note `run_agent`'s result carries when calls were denied because the client cannot be asked. */
export const unaskedNote = (count: number) =>
  `(agent-loop denied ${count} tool call${count === 1 ? "" : "s"} that needed approval: this MCP client does not support elicitation, ` +
  "so nobody could be asked. Use a client that does, or start agent-loop mcp serve with --yes or allow rules to approve them.)"

/** The longest the call's arguments are shown in the message; the client's user sees it in one line. */
const MAX_ARGUMENTS = 1_000

/** The call in one readable line: its name (an MCP tool's server and name there too) and its arguments as JSON, cut when long. */
export const describeCall = (call: Hook.HookToolCall): string => {
  const name = call.mcp === undefined ? call.name : `${call.name} (${call.mcp.server}'s ${call.mcp.tool})`
  const json = JSON.stringify(call.arguments ?? {}) ?? "{}"
  // JSON has no raw newlines; other control characters would not show either
  const shown = json.replace(/[\u0000-\u001f\u007f-\u009f]/g, " ")
  return `${name} ${shown.length > MAX_ARGUMENTS ? `${shown.slice(0, MAX_ARGUMENTS)}… (${shown.length - MAX_ARGUMENTS} more characters)` : shown}`
}

/** The elicitation about `call`: `allow_always` only when `remember` (a rule can be suggested for it). */
export const question = (call: Hook.HookToolCall, remember: boolean): McpTypes.ElicitRequestFormParams => ({
  mode: "form",
  message: `agent-loop wants to run ${describeCall(call)}`,
  requestedSchema: {
    type: "object",
    properties: {
      decision: {
        type: "string",
        title: "Decision",
        description: remember
          ? "allow_once runs this call; allow_always also allows calls like it while this server runs; deny does not run it"
          : "allow_once runs this call; deny does not run it",
        enum: remember ? [ALLOW_ONCE, ALLOW_ALWAYS, DENY] : [ALLOW_ONCE, DENY]
      },
      reason: { type: "string", title: "Reason", description: "Why not, told to the agent (with deny)" }
    },
    required: ["decision"]
  }
})

/** The answer an elicitation's result gives, as the approval hook reads it. */
export const answerOf = (result: McpTypes.ElicitResult, remember: boolean): string | Hook.Deny => {
  if (result.action === "cancel") return Hook.deny(CANCELLED_REASON)
  if (result.action !== "accept") return Hook.deny(DECLINED_REASON)
  const decision = result.content?.decision
  if (decision === ALLOW_ONCE) return "y"
  if (decision === ALLOW_ALWAYS) return remember ? "a" : "y"
  const reason = result.content?.reason
  return typeof reason === "string" && reason.trim() !== "" ? `n ${reason.trim()}` : "n"
}
