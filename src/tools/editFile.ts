/**
 * `edit_file`: replaces one exact, unique piece of text in a file. Demanding uniqueness makes the
 * model say precisely where the change goes instead of rewriting whole files.
 *
 * The edit works on the file's bytes: only the bytes from the match on are written, and nothing
 * is decoded and encoded again, so a byte-order mark, line endings and every untouched character
 * stay exactly as they were. A file that is not UTF-8 text (NUL bytes, or bytes that are not
 * UTF-8) is refused, since text from the model could not be placed in it faithfully. In a file
 * whose lines all end in CRLF, LF line breaks in `old_text` and `new_text` are taken as CRLF,
 * because `read_file` shows lines without their CR. Editing inside a protected location (hooks,
 * settings, MCP config, git) needs the user's approval.
 *
 * @example
 * ```ts
 * import { makeEditFile, ToolRegistryLive } from "effect-agent-loop"
 * const tools = ToolRegistryLive.layer([makeEditFile({ maxFileBytes: 1024 * 1024 })])
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
import { firstInvalidUtf8, hasNul, usesCrlf } from "./textBytes.ts"
import { DEFAULT_FILE_TOOL_TIMEOUT, rootOf, Workspace } from "./workspace.ts"

/** Limits of `edit_file`. */
export interface EditFileOptions {
  /** Larger files are refused (the whole file is held in memory). Default 10 MiB. */
  readonly maxFileBytes?: number
  /** How long one call may take. Default 30 seconds. */
  readonly timeout?: Duration.Input
  /**
   * More protected locations, relative to the workspace root, besides `PROTECTED_LOCATIONS`: a
   * write there needs approval (`locationsWithin`, `gitHooksDirectory`).
   */
  readonly protect?: ReadonlyArray<string>
}

/** The default size limit of `edit_file`. */
export const DEFAULT_EDIT_MAX_FILE_BYTES = 10 * 1024 * 1024

/** The arguments of `edit_file`. */
export const EditFileParameters = Schema.Struct({
  path: Schema.String.annotate({ description: "File to edit, relative to the workspace root" }),
  old_text: Schema.String.annotate({
    description: "Exact text to replace, including whitespace and indentation; it must occur exactly once in the file"
  }),
  new_text: Schema.String.annotate({ description: "Text to put in its place (may be empty to delete)" })
})

/** Every start offset of `needle` in `haystack`, overlapping ones included. */
const occurrences = (haystack: Buffer, needle: Uint8Array): Array<number> => {
  const found: Array<number> = []
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + 1)) found.push(i)
  return found
}

const encoder = new TextEncoder()
const toCrlf = (text: string) => text.replace(/\r?\n/g, "\r\n")

/** `edit_file` with the given limits: mutating, so the loop serialises it with other mutating calls. */
export const makeEditFile = (options: EditFileOptions = {}) => {
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_EDIT_MAX_FILE_BYTES
  const protect = options.protect ?? []
  return Tool.make({
    name: "edit_file",
    description: "Edits a UTF-8 text file in the workspace by replacing old_text with new_text. old_text must match " +
      "the file exactly (whitespace included, without read_file's line-number prefixes) and occur exactly once; add " +
      "surrounding lines to make it unique. To create a file or replace all of it, use write_file.",
    parameters: EditFileParameters,
    requiresApproval: ({ path }) => isProtectedPath(path, protect),
    timeout: options.timeout ?? DEFAULT_FILE_TOOL_TIMEOUT,
    execute: ({ path: input, old_text, new_text }, context) =>
      Effect.scoped(Effect.gen(function*() {
        const fail = (message: string) => Effect.fail(new ToolError({ message }))
        if (old_text.length === 0) {
          return yield* fail("old_text is empty; give the exact text to replace (use write_file to create a file)")
        }
        if (old_text === new_text) return yield* fail("old_text and new_text are identical; nothing would change")
        const workspace = yield* Workspace
        const absolute = yield* workspace.resolve(input)
        yield* guardProtected(workspace, input, absolute, protect)
        yield* guardPathRules(workspace, "edit_file", input, absolute)
        const file = yield* filesOf(workspace).open({ absolute, input, sessionKey: context.sessionKey, write: true })
        if (file.size > maxFileBytes) {
          return yield* fail(
            `"${input}" is ${file.size} bytes, more than edit_file's limit of ${maxFileBytes} bytes; change it with a ` +
              "command (exec) instead"
          )
        }
        const bytes = Buffer.from(yield* file.read(0, file.size))
        if (hasNul(bytes)) {
          return yield* fail(`"${input}" is a binary file (it contains NUL bytes); edit_file edits text files only`)
        }
        const invalid = firstInvalidUtf8(bytes)
        if (invalid !== -1) {
          return yield* fail(
            `"${input}" is not valid UTF-8 (the first byte that is not is at offset ${invalid}); edit_file edits UTF-8 ` +
              "text only and will not re-encode the file. Convert it with a command (exec, e.g. iconv) if that is wanted"
          )
        }
        // a CRLF file has no bare LF, so an LF in the model's text can only mean a CRLF line break
        const crlf = usesCrlf(bytes)
        const oldBytes = encoder.encode(crlf ? toCrlf(old_text) : old_text)
        const newBytes = encoder.encode(crlf ? toCrlf(new_text) : new_text)
        const found = occurrences(bytes, oldBytes)
        if (found.length === 0) {
          return yield* fail(
            `old_text not found in "${input}"; read the file again and copy the exact text, including whitespace and ` +
              "indentation"
          )
        }
        if (found.length > 1) {
          return yield* fail(`old_text found ${found.length} times in "${input}"; include more context so it matches exactly once`)
        }
        const at = found[0]!
        const rest = Buffer.concat([newBytes, bytes.subarray(at + oldBytes.length)])
        yield* keepForUndo(context, rootOf(workspace, absolute), absolute, input, Option.some(file), Buffer.concat([bytes.subarray(0, at), rest]), bytes)
        yield* file.replaceFrom(at, rest)
        const line = bytes.subarray(0, at).filter((byte) => byte === 0x0a).length + 1
        return `Edited "${workspace.display(absolute)}": replaced 1 occurrence at line ${line}`
      }))
  })
}

/** `edit_file` with default limits. */
export const editFile = makeEditFile()
