/**
 * The host's path rules (`Workspace.pathRule`; in the CLI, permission rules such as `Read(.env)`)
 * as the file tools apply them. The approver matched the path the model wrote; what that path
 * reaches may be another file (`notes.txt -> .env`), and a walk (`grep`, `list_dir` of a
 * directory) reaches files nobody named. So the tools match those too:
 *
 * - a path as written that the rules deny is refused (the approver refused it already; this holds
 *   for a host without one);
 * - the path a symbolic link really reaches is refused when the rules deny it or ask about it:
 *   nobody was asked about it, and the model can name it itself to be asked;
 * - a walk passes by what the rules deny, without a word, and what they ask about, counting it,
 *   unless the rule that asks is the one the user already answered for the walk's start.
 */
import * as Effect from "effect/Effect"
import * as nodePath from "node:path"
import { ToolError } from "../domain/errors.ts"
import { addedRootOf, type PathRuleVerdict, type WorkspaceShape } from "./workspace.ts"

/** `absolute` relative to the root for the rules, absolute in an added directory; `undefined` elsewhere. */
const relativeOf = (workspace: WorkspaceShape, absolute: string): string | undefined => {
  const relative = nodePath.relative(workspace.root, absolute)
  if (relative === ".." || relative.startsWith(`..${nodePath.sep}`) || nodePath.isAbsolute(relative)) {
    return addedRootOf(workspace, absolute) === undefined ? undefined : absolute
  }
  return workspace.display(absolute)
}

/** What the rules say of `tool` reaching the workspace path `absolute`. */
export const ruleAt = (workspace: WorkspaceShape, tool: string, absolute: string): PathRuleVerdict | undefined => {
  const relative = workspace.pathRule === undefined ? undefined : relativeOf(workspace, absolute)
  return relative === undefined ? undefined : workspace.pathRule!(tool, relative)
}

/**
 * Fails when the rules deny `tool` on `input` as the model wrote it, or deny or ask about the path
 * it really reaches, `absolute` (from `Workspace.resolve`), when that is another one.
 */
export const guardPathRules = (workspace: WorkspaceShape, tool: string, input: string, absolute: string): Effect.Effect<void, ToolError> =>
  Effect.suspend(() => {
    if (workspace.pathRule === undefined) return Effect.void
    const written = nodePath.resolve(workspace.root, input)
    const asWritten = ruleAt(workspace, tool, written)
    if (asWritten?._tag === "Deny") {
      return Effect.fail(new ToolError({ message: `"${input}" is denied to ${tool} by the permission rule "${asWritten.rule}"` }))
    }
    if (relativeOf(workspace, written) === workspace.display(absolute)) return Effect.void
    const reached = ruleAt(workspace, tool, absolute)
    if (reached === undefined) return Effect.void
    const shown = workspace.display(absolute)
    return Effect.fail(new ToolError({
      message: reached._tag === "Deny"
        ? `"${input}" leads to "${shown}" (by way of a symbolic link), which the permission rule "${reached.rule}" denies to ${tool}`
        : `"${input}" leads to "${shown}" (by way of a symbolic link), which the permission rule "${reached.rule}" asks about; ` +
          `use "${shown}" itself so the user is asked`
    }))
  })

/**
 * For a walk from `start` (the path the approver saw): what the rules say of an entry at
 * `absolute` — `Deny` (pass it by silently), `Ask` (pass it by, counted for a note) — or
 * `undefined` to take it. An ask rule that also covers `start` does not count: the user answered it.
 */
export const walkRule = (workspace: WorkspaceShape, tool: string, start: string) => {
  const atStart = ruleAt(workspace, tool, start)
  return (absolute: string): PathRuleVerdict | undefined => {
    const verdict = ruleAt(workspace, tool, absolute)
    const answered = verdict?._tag === "Ask" && atStart?._tag === "Ask" && atStart.rule === verdict.rule
    return answered ? undefined : verdict
  }
}
