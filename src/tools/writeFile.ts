/**
 * `write_file`: creates or overwrites a file in the workspace, creating missing parent directories.
 *
 * It writes UTF-8 text, so it will not replace a binary file (one with NUL bytes in its first
 * 8 KiB): that would destroy data the model cannot have read. Replacing text in another encoding
 * is allowed (it is how a file is converted to UTF-8), and the result says that it happened.
 * Writing into a protected location (hooks, settings, MCP config, git) needs the user's approval.
 *
 * @example
 * ```ts
 * import { writeFile, ToolRegistryLive } from "effect-agent-loop"
 * const tools = ToolRegistryLive.layer([writeFile])
 * ```
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ToolError } from "../domain/errors.ts"
import * as Tool from "../domain/Tool.ts"
import { filesOf } from "./files.ts"
import { keepForUndo } from "./history.ts"
import { guardPathRules } from "./pathRules.ts"
import { guardProtected, isProtectedPath } from "./protected.ts"
import { firstInvalidUtf8, hasNul, SNIFF_BYTES } from "./textBytes.ts"
import { DEFAULT_FILE_TOOL_TIMEOUT, rootOf, Workspace } from "./workspace.ts"

/** Limits of `write_file`. */
export interface WriteFileOptions {
  /** How long one call may take. Default 30 seconds. */
  readonly timeout?: Duration.Input
  /**
   * More protected locations, relative to the workspace root, besides `PROTECTED_LOCATIONS`: a
   * write there needs approval (`locationsWithin`, `gitHooksDirectory`).
   */
  readonly protect?: ReadonlyArray<string>
}

/** The arguments of `write_file`. */
export const WriteFileParameters = Schema.Struct({
  path: Schema.String.annotate({ description: "File to write, relative to the workspace root" }),
  content: Schema.String.annotate({ description: "The complete new content of the file (UTF-8)" })
})

/** `write_file` with the given limits: mutating, so the loop serialises it with other mutating calls. */
export const makeWriteFile = (options: WriteFileOptions = {}) => {
  const protect = options.protect ?? []
  return Tool.make({
    name: "write_file",
    description: "Writes a UTF-8 text file in the workspace, replacing it entirely if it exists and creating missing " +
      "parent directories. Returns the number of bytes written. To change part of an existing file, prefer edit_file. " +
      "It will not replace a binary file.",
    parameters: WriteFileParameters,
    requiresApproval: ({ path }) => isProtectedPath(path, protect),
    timeout: options.timeout ?? DEFAULT_FILE_TOOL_TIMEOUT,
    execute: ({ path: input, content }, context) =>
      Effect.scoped(Effect.gen(function*() {
        const workspace = yield* Workspace
        const absolute = yield* workspace.resolve(input)
        if (absolute === workspace.root) {
          return yield* Effect.fail(new ToolError({ message: `"${input}" is the workspace root; give a file path` }))
        }
        yield* guardProtected(workspace, input, absolute, protect)
        yield* guardPathRules(workspace, "write_file", input, absolute)
        const file = yield* filesOf(workspace).open({ absolute, input, sessionKey: context.sessionKey, write: true, create: true })
        const bytes = new TextEncoder().encode(content)
        // a new file is recorded before it is created, so a history that fails leaves nothing behind
        if (!file.existed) yield* keepForUndo(context, rootOf(workspace, absolute), absolute, input, Option.none(), bytes)
        const head = yield* file.read(0, SNIFF_BYTES)
        if (hasNul(head)) {
          return yield* Effect.fail(
            new ToolError({
              message: `"${input}" is a binary file (it contains NUL bytes); write_file will not replace it. If it ` +
                "really should go, remove it first (that needs the user's approval)"
            })
          )
        }
        const wasNotUtf8 = firstInvalidUtf8(head, file.size > head.length) !== -1
        if (file.existed) yield* keepForUndo(context, rootOf(workspace, absolute), absolute, input, Option.some(file), bytes)
        yield* file.replaceFrom(0, bytes)
        const verb = file.existed ? "Overwrote" : "Created"
        const note = wasNotUtf8 ? " (the previous content was not valid UTF-8; the file is UTF-8 now)" : ""
        return `${verb} "${workspace.display(absolute)}": wrote ${bytes.length} bytes${note}`
      }))
  })
}

/** `write_file` with default limits. */
export const writeFile = makeWriteFile()
