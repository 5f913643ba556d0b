/**
 * What the built-in tools share about their workspace: the service (`Workspace`, declared with the
 * other services) and the time limit of a file tool's call.
 */
import * as Duration from "effect/Duration"

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
