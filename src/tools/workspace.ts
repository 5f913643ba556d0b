/**
 * What the built-in tools share about their workspace: the service (`Workspace`, declared with the
 * other services), the time limit of a file tool's call, and the directories added beside the root
 * (`rootOf`, `scopeOf`).
 */
import * as Duration from "effect/Duration"
import * as nodePath from "node:path"
import type { WorkspaceShape } from "../services/Workspace.ts"
import { isWithin } from "../domain/paths.ts"

export {
  type OpenFileRequest,
  type PathRule,
  type PathRuleVerdict,
  Workspace,
  type WorkspaceFile,
  type WorkspaceFiles,
  type WorkspaceShape
} from "../services/Workspace.ts"

/**
 * How long one call of a file tool may take before the loop gives up on it with an error result.
 * Nothing a file tool does should come near it; it bounds what cannot be foreseen (a stalled
 * network file system, a pathological pattern given a long deadline).
 */
export const DEFAULT_FILE_TOOL_TIMEOUT = Duration.seconds(30)

/** The added directory holding `absolute` (a path `resolve` returned) when it is not under the root. */
export const addedRootOf = (workspace: Pick<WorkspaceShape, "root" | "additional">, absolute: string): string | undefined =>
  isWithin(workspace.root, absolute) ? undefined : workspace.additional?.find((root) => isWithin(root, absolute))

/** The root `absolute` is opened from: the workspace's, or the added directory holding it. */
export const rootOf = (workspace: Pick<WorkspaceShape, "root" | "additional">, absolute: string): string =>
  addedRootOf(workspace, absolute) ?? workspace.root

/**
 * The workspace a walk from `absolute` runs in: the workspace itself, or, for a path in an added
 * directory, one rooted there, whose relative paths the caller shows after `prefix` (the directory,
 * absolute) and whose path rules are asked about absolute paths, as the workspace's are.
 */
export const scopeOf = (workspace: WorkspaceShape, absolute: string): { readonly workspace: WorkspaceShape; readonly prefix: string | undefined } => {
  const root = addedRootOf(workspace, absolute)
  if (root === undefined) return { workspace, prefix: undefined }
  const rule = workspace.pathRule
  return {
    prefix: root,
    workspace: {
      ...workspace,
      root,
      additional: [],
      display: (path) => {
        const rel = nodePath.relative(root, path)
        return rel === "" ? "." : rel.split(nodePath.sep).join("/")
      },
      pathRule: rule === undefined ? undefined : (tool, path) => rule(tool, path === "." ? root : nodePath.join(root, path))
    }
  }
}

/** A path relative to a walk's root (`scopeOf`) as the model is shown it. */
export const shownIn = (prefix: string | undefined, relative: string): string =>
  prefix === undefined ? relative : relative === "." || relative === "" ? prefix : `${prefix}/${relative}`
