/**
 * Where the file tools read and write (`WorkspaceFiles`): the disk, by default, opened through
 * `confined.ts` so that what is opened is what the workspace checked. A host swaps it in the
 * `Workspace` it provides (an editor's buffers over ACP); the tools do the same either way.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as nodePath from "node:path"
import { ToolError } from "../domain/errors.ts"
import { kindIn, notRegular, type OpenFile, openDirectory, openFile, readAt, replaceFrom } from "./confined.ts"
import { rootOf, type WorkspaceFile, type WorkspaceFiles, type WorkspaceShape } from "./workspace.ts"

const opened = (file: OpenFile, input: string): WorkspaceFile => ({
  size: file.size,
  existed: true,
  read: (position, length) => readAt(file, input, position, length),
  replaceFrom: (from, bytes) => replaceFrom(file, input, from, bytes)
})

/**
 * The files on disk under `root` (and the `additional` directories added beside it): each
 * component opened without following a link, from the root that holds the path.
 */
export const localFiles = (workspaceRoot: string, additional: ReadonlyArray<string> = []): WorkspaceFiles => ({
  open: ({ absolute, create, input, write }) =>
    Effect.gen(function*() {
      const root = rootOf({ root: workspaceRoot, additional }, absolute)
      if (absolute === root) return yield* Effect.fail(notRegular(input, "directory"))
      const directory = yield* openDirectory(root, nodePath.dirname(absolute), input, { create: create ?? false })
      const name = nodePath.basename(absolute)
      if (create === true) {
        const kind = yield* kindIn(directory, name, input)
        if (Option.isSome(kind) && kind.value === "directory") {
          return yield* Effect.fail(new ToolError({ message: `"${input}" is a directory; give a file path` }))
        }
        // made at the first write, so that a write refused before it (undo history) leaves nothing behind
        if (Option.isNone(kind)) {
          return {
            size: 0,
            existed: false,
            read: () => Effect.succeed(new Uint8Array(0)),
            replaceFrom: (from, bytes) =>
              Effect.scoped(Effect.flatMap(
                openFile(directory, name, input, { write: true, create: true }),
                (file) => replaceFrom(file, input, from, bytes)
              ))
          } satisfies WorkspaceFile
        }
      }
      return opened(yield* openFile(directory, name, input, { write: write === true || create === true }), input)
    })
})

/** The files of `workspace`: its own (`WorkspaceShape.files`), else the disk under its root. */
export const filesOf = (workspace: WorkspaceShape): WorkspaceFiles => workspace.files ?? localFiles(workspace.root, workspace.additional)

const CHUNK_BYTES = 64 * 1024

/** The bytes of `file` from the start, in chunks. */
export const chunksOf = (file: WorkspaceFile): Stream.Stream<Uint8Array, ToolError> =>
  Stream.paginate(0, (position) =>
    Effect.map(file.read(position, CHUNK_BYTES), (chunk) =>
      [chunk.length === 0 ? [] : [chunk], chunk.length < CHUNK_BYTES ? Option.none() : Option.some(position + chunk.length)] as const
    ))
