/** `--approval` and the settings' `approval`, in a module of its own so that the flag definitions load no settings code. */
import * as Schema from "effect/Schema"

/** How tool calls that need approval are decided: ask on a terminal, approve all (`--yes`), or deny all. */
export const ApprovalPolicy = Schema.Literals(["ask", "approve", "deny"])
export type ApprovalPolicy = typeof ApprovalPolicy.Type
