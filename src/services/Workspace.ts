/**
 * `Workspace`: the directory the built-in tools may touch, and the one service that decides whether
 * a path given by the model stays inside it (`WorkspaceLive`). The file tools then open the path
 * `resolve` returned through `confined.ts`, which refuses a link met on the way, so the decision
 * cannot be undone by a directory swapped for a link in between.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { NodeServices } from "@effect/platform-node"
 * import { Workspace, WorkspaceLive } from "effect-agent-loop"
 *
 * const program = Effect.gen(function*() {
 *   const workspace = yield* Workspace
 *   return yield* workspace.resolve("src/index.ts") // fails with a ToolError for "../etc/passwd"
 * }).pipe(Effect.provide(WorkspaceLive.layer("/home/me/project")), Effect.provide(NodeServices.layer))
 * ```
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { ToolError } from "../domain/errors.ts"

/** What a host's rule says of a file tool reaching a path: denied, or to be asked about first; `rule` as written. */
export interface PathRuleVerdict {
  readonly _tag: "Deny" | "Ask"
  readonly rule: string
}

/**
 * A host's rules on paths (the CLI's permission rules, `Read(.env)`): what they say of `tool`
 * reaching `path` (relative to the root, `/`-separated, `.` for the root); `undefined` when
 * nothing stands against it.
 */
export type PathRule = (tool: string, path: string) => PathRuleVerdict | undefined

/** A regular file of the workspace, opened by `WorkspaceFiles.open`. */
export interface WorkspaceFile {
  /** Its size in bytes when it was opened (0 for one not created yet). */
  readonly size: number
  /** Whether it existed when it was opened (`create` opens one that does not, made at the first write). */
  readonly existed: boolean
  /** At most `length` bytes from byte `position`. */
  readonly read: (position: number, length: number) => Effect.Effect<Uint8Array, ToolError>
  /** Replaces its content from byte `from` on with `bytes`; what lies before `from` stays. */
  readonly replaceFrom: (from: number, bytes: Uint8Array) => Effect.Effect<void, ToolError>
}

/** What `WorkspaceFiles.open` is asked: a path the workspace and the rules have let through. */
export interface OpenFileRequest {
  /** The canonical path `Workspace.resolve` returned. */
  readonly absolute: string
  /** The path as the model wrote it, for messages. */
  readonly input: string
  /** The session whose tool call opens it (an editor serves its own sessions' files). */
  readonly sessionKey: string
  /** Open for writing too. */
  readonly write?: boolean
  /** A missing file (and its missing parent directories) may be created: `existed` says which. */
  readonly create?: boolean
}

/**
 * How `read_file`, `write_file` and `edit_file` reach a file's content once the workspace and the
 * rules let its path through: the disk (`tools/files.ts`, refusing links on the way), or an
 * editor's buffers (ACP's `fs/*`). Anything but a regular file is refused.
 */
export interface WorkspaceFiles {
  readonly open: (request: OpenFileRequest) => Effect.Effect<WorkspaceFile, ToolError, Scope.Scope>
}

/** The workspace root and its confinement rule. */
export interface WorkspaceShape {
  /** The canonical (symlink-free) absolute root. */
  readonly root: string
  /**
   * The absolute, canonical path for `input` (relative paths resolve against the root), or a
   * `ToolError` when it escapes the root lexically (`..`), is absolute outside it, or reaches
   * outside through a symbolic link, including one on the parent of a file not yet created.
   */
  readonly resolve: (input: string) => Effect.Effect<string, ToolError>
  /** `absolute` relative to the root, `/`-separated; `.` for the root itself. For tool output. */
  readonly display: (absolute: string) => string
  /**
   * The host's path rules, if any. The approver matched the path the model wrote; the file tools
   * ask these about what it really reaches (the file a symbolic link leads to) and about what a
   * walk meets (`grep` and `list_dir` of a directory), see `tools/pathRules.ts`.
   */
  readonly pathRule?: PathRule | undefined
  /** Where the file tools read and write; the disk when absent. */
  readonly files?: WorkspaceFiles | undefined
  /**
   * Directories added beside the root (Claude Code's `--add-dir`, `additionalDirectories`), each
   * canonical: `resolve` lets paths in them through under the same rules, and `display` shows
   * their paths absolute. None when absent.
   */
  readonly additional?: ReadonlyArray<string> | undefined
}

/** The workspace the built-in tools are confined to; `WorkspaceLive.layer(root)` provides one. */
export class Workspace extends Context.Service<Workspace, WorkspaceShape>()("effect-agent-loop/Workspace") {}

