/**
 * `write_file`: creates or overwrites a file in the workspace, creating missing parent directories.
 *
 * @example
 * ```ts
 * import { ToolRegistry, writeFile } from "effect-agent-loop"
 * const tools = ToolRegistry.layer([writeFile])
 * ```
 */
import { Effect, FileSystem, Path, Schema } from "effect"
import { ToolError } from "../domain/errors.ts"
import * as Tool from "../domain/Tool.ts"
import { fsToolError, Workspace } from "./workspace.ts"

/** The arguments of `write_file`. */
export const WriteFileParameters = Schema.Struct({
  path: Schema.String.annotate({ description: "File to write, relative to the workspace root" }),
  content: Schema.String.annotate({ description: "The complete new content of the file (UTF-8)" })
})

/** `write_file`: mutating, so the loop serialises it with other mutating calls. */
export const writeFile = Tool.make({
  name: "write_file",
  description: "Writes a UTF-8 text file in the workspace, replacing it entirely if it exists and creating missing " +
    "parent directories. Returns the number of bytes written. To change part of an existing file, prefer edit_file.",
  parameters: WriteFileParameters,
  execute: ({ path: input, content }) =>
    Effect.gen(function*() {
      const workspace = yield* Workspace
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const absolute = yield* workspace.resolve(input)
      if (absolute === workspace.root) {
        return yield* Effect.fail(new ToolError({ message: `"${input}" is the workspace root; give a file path` }))
      }
      const existing = yield* fs.stat(absolute).pipe(Effect.option)
      if (existing._tag === "Some" && existing.value.type === "Directory") {
        return yield* Effect.fail(new ToolError({ message: `"${input}" is a directory; give a file path` }))
      }
      yield* fs.makeDirectory(path.dirname(absolute), { recursive: true }).pipe(
        Effect.mapError((e) => fsToolError(path.dirname(input), e))
      )
      const bytes = new TextEncoder().encode(content)
      yield* fs.writeFile(absolute, bytes).pipe(Effect.mapError((e) => fsToolError(input, e)))
      const verb = existing._tag === "Some" ? "Overwrote" : "Created"
      return `${verb} "${workspace.display(absolute)}": wrote ${bytes.length} bytes`
    })
})
