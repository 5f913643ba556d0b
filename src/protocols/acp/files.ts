/**
 * The file tools' `WorkspaceFiles` through an ACP client (`fs/read_text_file`,
 * `fs/write_text_file`): for a session of a client that offers them, `read_file`, `write_file` and
 * `edit_file` read the editor's buffers (unsaved changes included) and their edits land there. The
 * tools have checked the path first (the workspace, the protected locations, the permission rules),
 * as for the disk; the editor is only asked for the content.
 *
 * Reads go through the editor when it offers `readTextFile`; writes when it offers both (an edit
 * changes what was read). Other sessions, and a client that offers neither, use the disk.
 */
import * as Effect from "effect/Effect"
import { ToolError } from "../../domain/errors.ts"
import type { OpenFileRequest, WorkspaceFile, WorkspaceFiles } from "../../services/Workspace.ts"

/** What a client offers one of its sessions: reading a text file, and writing one when it can. */
export interface EditorFs {
  readonly read: (path: string, signal: AbortSignal) => Promise<string>
  readonly write: ((path: string, content: string) => Promise<void>) | undefined
}

/** The client's file access for a session key, `undefined` when it is not a session of a client offering it. */
export type Reach = (sessionKey: string) => EditorFs | undefined

/** Files through the editor: `files` goes into the workspace's layer, `attach` is called by the connection once it knows its client. */
export interface Bridge {
  readonly files: (disk: WorkspaceFiles) => WorkspaceFiles
  readonly attach: (reach: Reach) => void
}

const messageOf = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** A file held as the editor's text: read from it, each write sending the whole new text. */
const held = (editor: EditorFs, request: OpenFileRequest, text: string | undefined): WorkspaceFile => {
  const bytes = encoder.encode(text ?? "")
  return {
    size: bytes.length,
    existed: text !== undefined,
    read: (position, length) => Effect.succeed(bytes.subarray(Math.min(position, bytes.length), Math.min(position + length, bytes.length))),
    replaceFrom: (from, replacement) => {
      const content = decoder.decode(Buffer.concat([bytes.subarray(0, from), replacement]))
      return Effect.tryPromise({
        try: () => editor.write!(request.absolute, content),
        catch: (error) => new ToolError({ message: `The editor did not write "${request.input}": ${messageOf(error)}` })
      }).pipe(Effect.uninterruptible)
    }
  }
}

/** A bridge with no client yet: every file on the disk until `attach`. */
export const bridge = (): Bridge => {
  let reach: Reach = () => undefined
  const files = (disk: WorkspaceFiles): WorkspaceFiles => ({
    open: (request) => {
      const editor = reach(request.sessionKey)
      const writing = request.write === true || request.create === true
      if (editor === undefined || (writing && editor.write === undefined)) return disk.open(request)
      return Effect.tryPromise({ try: (signal) => editor.read(request.absolute, signal), catch: messageOf }).pipe(
        Effect.map((text) => held(editor, request, text)),
        // the editor cannot read it: the disk says why (missing, a directory, …), or that a new file may be made
        Effect.catch((said) =>
          Effect.flatMap(disk.open(writing ? request : { ...request, write: false }), (local) =>
            request.create === true && !local.existed
              ? Effect.succeed(held(editor, request, undefined))
              : Effect.fail(new ToolError({ message: `The editor could not read "${request.input}": ${said}` })))
        )
      )
    }
  })
  return { files, attach: (next) => void (reach = next) }
}
