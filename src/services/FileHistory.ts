/**
 * `FileHistory`: an optional service that keeps what `write_file` and `edit_file` are about to
 * replace, per turn, so that a turn's file changes can be undone.
 *
 * The tools look for it with `Effect.serviceOption`: without it they change files as before, and
 * they never depend on where or how the history is kept. `FileHistoryDir.layer` keeps it in a
 * directory (the CLI's data directory) within a per-session byte budget.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { NodeServices } from "@effect/platform-node"
 * import { builtinTools, FileHistory, FileHistoryDir, ToolRegistryLive, WorkspaceLive } from "effect-agent-loop"
 *
 * const history = FileHistoryDir.layer({ directory: "/var/lib/my-agent/undo" })
 * const tools = ToolRegistryLive.layer(builtinTools()).pipe(
 *   Layer.provide([WorkspaceLive.layer(process.cwd()), history]),
 *   Layer.provide(NodeServices.layer)
 * )
 * // later: put back what the last turn of session "s1" changed
 * const undo = Effect.flatMap(FileHistory, (files) => files.undo("s1"))
 * ```
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** What a file held before a tool changed it. */
export type FileBefore =
  | { readonly _tag: "Absent" }
  | { readonly _tag: "Bytes"; readonly bytes: Uint8Array }
  /** Larger than the history may keep (`maxFileBytes`): the turn can no longer be undone. */
  | { readonly _tag: "TooLarge"; readonly size: number }

/** A change a tool is about to make. */
export interface FileChange {
  readonly sessionKey: string
  readonly turnId: string
  /** The canonical workspace root the path lies in. */
  readonly root: string
  /** The canonical absolute path of the file, inside `root`. */
  readonly path: string
  readonly before: FileBefore
  /** The bytes the file will hold afterwards: undo checks the file still holds them. */
  readonly after: Uint8Array
}

/** A file undo left alone, and why (it changed since, or it is no longer a regular file). */
export interface UndoRefused {
  readonly path: string
  readonly reason: string
}

/** What an undo did. */
export interface UndoResult {
  readonly turnId: string
  /** Files put back as they were before the turn (created ones removed). */
  readonly restored: ReadonlyArray<string>
  /** Files left as they are. */
  readonly refused: ReadonlyArray<UndoRefused>
}

/** A turn whose changes can be undone. */
export interface TurnFileChanges {
  readonly turnId: string
  /** When its first change was kept (epoch milliseconds). */
  readonly startedAt: number
  /** Absolute paths of the files it changed. */
  readonly files: ReadonlyArray<string>
}

/** There is nothing to undo: no turn kept, that turn unknown, or its changes could not all be kept. */
export class NothingToUndo extends Schema.TaggedError<NothingToUndo>()("NothingToUndo", {
  message: Schema.String
}) {}

/** The history could not be read or written. */
export class FileHistoryError extends Schema.TaggedError<FileHistoryError>()("FileHistoryError", {
  message: Schema.String
}) {}

/** The file history. */
export interface FileHistoryShape {
  /** The largest previous content kept; a larger file is recorded as `TooLarge`. */
  readonly maxFileBytes: number
  /** Keeps `change.before` before the tool writes. A failure fails the tool call, which then changes nothing. */
  readonly record: (change: FileChange) => Effect.Effect<void, FileHistoryError>
  /** The session's turns that can be undone, oldest first. */
  readonly turns: (sessionKey: string) => Effect.Effect<ReadonlyArray<TurnFileChanges>, FileHistoryError>
  /**
   * Restores the files the turn (the session's last one with changes, when `turnId` is absent)
   * changed, except those changed since; the turn is then forgotten.
   */
  readonly undo: (sessionKey: string, turnId?: string) => Effect.Effect<UndoResult, NothingToUndo | FileHistoryError>
}

/** The file history `write_file` and `edit_file` record into when it is in their context. */
export class FileHistory extends Context.Service<FileHistory, FileHistoryShape>()("effect-agent-loop/FileHistory") {}
