/**
 * Keeping a file's previous content for undo, when a `FileHistory` is in the tools' context
 * (`services/FileHistory.ts`); without one this does nothing.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { ToolError } from "../domain/errors.ts"
import type { ToolContext } from "../domain/Tool.ts"
import { type FileBefore, FileHistory } from "../services/FileHistory.ts"
import type { WorkspaceFile } from "./workspace.ts"

/**
 * Records, before the tool writes, what `file` holds now (`None`: the file does not exist yet;
 * `known`: its whole content, already read) and the bytes it will hold. A history that cannot
 * keep it fails the call, so that nothing changes that could not be undone.
 */
export const keepForUndo = (
  context: ToolContext,
  root: string,
  absolute: string,
  input: string,
  file: Option.Option<WorkspaceFile>,
  after: Uint8Array,
  known?: Uint8Array
): Effect.Effect<void, ToolError> =>
  Effect.gen(function*() {
    const history = yield* Effect.serviceOption(FileHistory)
    if (Option.isNone(history)) return
    const { maxFileBytes } = history.value
    let before: FileBefore
    if (Option.isNone(file)) before = { _tag: "Absent" }
    else if (file.value.size > maxFileBytes) before = { _tag: "TooLarge", size: file.value.size }
    else before = { _tag: "Bytes", bytes: known ?? (yield* file.value.read(0, file.value.size)) }
    yield* history.value.record({ sessionKey: context.sessionKey, turnId: context.turnId, root, path: absolute, before, after }).pipe(
      Effect.mapError((error) => new ToolError({ message: `"${input}" was not changed: its content could not be kept for undo (${error.message})` }))
    )
  })
