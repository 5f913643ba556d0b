/** `--approval` and the settings' `approval`, in a module of its own so that the flag definitions load no settings code. */
import * as Schema from "effect/Schema"

/** How tool calls that need approval are decided: ask on a terminal, approve all (`--yes`), or deny all. */
export const ApprovalPolicy = Schema.Literals(["ask", "approve", "deny"])
export type ApprovalPolicy = typeof ApprovalPolicy.Type

/**
 * Claude Code's permission modes (`permissions.defaultMode`, `--permission-mode`): `default` and
 * `acceptEdits` ask as `approval: ask` does (edits inside the workspace never ask here), `plan`
 * too once its plan is accepted (turns plan first: `TurnOptions.planMode`), `bypassPermissions` approves as `--yes` (with a warning), and
 * `dontAsk` denies as `approval: deny`.
 */
export const PERMISSION_MODES = ["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"] as const
/** One of `PERMISSION_MODES`. */
export type PermissionMode = (typeof PERMISSION_MODES)[number]
