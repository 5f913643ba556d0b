/**
 * `edit_file`: replaces one exact, unique piece of text in a file. Demanding uniqueness makes the
 * model say precisely where the change goes instead of rewriting whole files.
 *
 * @example
 * ```ts
 * import { ToolRegistry, editFile } from "effect-agent-loop"
 * const tools = ToolRegistry.layer([editFile])
 * ```
 */
import { Effect, FileSystem, Schema } from "effect"
import { ToolError } from "../domain/errors.ts"
import * as Tool from "../domain/Tool.ts"
import { fsToolError, Workspace } from "./workspace.ts"

/** The arguments of `edit_file`. */
export const EditFileParameters = Schema.Struct({
  path: Schema.String.annotate({ description: "File to edit, relative to the workspace root" }),
  old_text: Schema.String.annotate({
    description: "Exact text to replace, including whitespace and indentation; it must occur exactly once in the file"
  }),
  new_text: Schema.String.annotate({ description: "Text to put in its place (may be empty to delete)" })
})

/** Every start index of `needle` in `haystack`, overlapping ones included. */
const occurrences = (haystack: string, needle: string): Array<number> => {
  const found: Array<number> = []
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + 1)) found.push(i)
  return found
}

/** `edit_file`: mutating, so the loop serialises it with other mutating calls. */
export const editFile = Tool.make({
  name: "edit_file",
  description: "Edits a text file in the workspace by replacing old_text with new_text. old_text must match the " +
    "file exactly (whitespace included, without read_file's line-number prefixes) and occur exactly once; add " +
    "surrounding lines to make it unique. To create a file or replace all of it, use write_file.",
  parameters: EditFileParameters,
  execute: ({ path: input, old_text, new_text }) =>
    Effect.gen(function*() {
      if (old_text.length === 0) {
        return yield* Effect.fail(
          new ToolError({ message: "old_text is empty; give the exact text to replace (use write_file to create a file)" })
        )
      }
      if (old_text === new_text) {
        return yield* Effect.fail(new ToolError({ message: "old_text and new_text are identical; nothing would change" }))
      }
      const workspace = yield* Workspace
      const fs = yield* FileSystem.FileSystem
      const absolute = yield* workspace.resolve(input)
      const content = yield* fs.readFileString(absolute).pipe(Effect.mapError((e) => fsToolError(input, e)))
      const found = occurrences(content, old_text)
      if (found.length === 0) {
        return yield* Effect.fail(
          new ToolError({
            message: `old_text not found in "${input}"; read the file again and copy the exact text, including ` +
              "whitespace and indentation"
          })
        )
      }
      if (found.length > 1) {
        return yield* Effect.fail(
          new ToolError({
            message: `old_text found ${found.length} times in "${input}"; include more context so it matches exactly once`
          })
        )
      }
      const at = found[0]!
      const updated = content.slice(0, at) + new_text + content.slice(at + old_text.length)
      yield* fs.writeFileString(absolute, updated).pipe(Effect.mapError((e) => fsToolError(input, e)))
      const line = content.slice(0, at).split("\n").length
      return `Edited "${workspace.display(absolute)}": replaced 1 occurrence at line ${line}`
    })
})
