/**
 * `agent-loop undo [--turn ID] [--session KEY] [--list]`: puts back the files the last turn of a
 * session (or the named turn) changed with `write_file` and `edit_file`, from the history kept in
 * the data directory's `undo/` (`FileHistoryDir`). A file changed since is left alone and named,
 * and the command then exits 1. `undoLast` is the step a chat's `/undo` can call.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as FileHistoryDir from "../../layers/FileHistoryDir.ts"
import type { UndoResult } from "../../services/FileHistory.ts"
import { dataDir, readLastSession, undoDir } from "../config/dataDir.ts"
import { fail } from "../terminal/failure.ts"
import { clean } from "../terminal/safeText.ts"
import { Screen } from "../terminal/screen.ts"

/** Lines describing an undo's outcome, paths shown relative to `workspace` when inside it. */
export const describeUndo = (result: UndoResult, workspace: string = process.cwd()): ReadonlyArray<string> => {
  const show = (path: string) => {
    const relative = nodePath.relative(workspace, path)
    return clean(relative === "" || relative.startsWith("..") || nodePath.isAbsolute(relative) ? path : relative)
  }
  return [
    ...result.restored.map((path) => `restored ${show(path)}`),
    ...result.refused.map(({ path, reason }) => `not restored ${show(path)}: ${reason}`)
  ]
}

/**
 * Undoes the last turn (or `turnId`) of `sessionKey` and prints what happened; fails (exit 1)
 * when there is nothing to undo or a file was left alone.
 */
export const undoLast = (data: string, sessionKey: string, turnId?: string) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const history = yield* FileHistoryDir.make({ directory: undoDir(data) })
    const result = yield* history.undo(sessionKey, turnId).pipe(Effect.catch((error) => fail(error.message)))
    for (const line of describeUndo(result)) yield* screen.line(line)
    if (result.refused.length > 0) {
      return yield* fail(
        `${result.refused.length} of ${result.refused.length + result.restored.length} files changed since turn ${result.turnId} ` +
          "and were left alone; fix them and run undo again (the turn is kept)"
      )
    }
    yield* screen.line(`undid turn ${result.turnId}`)
    return result
  })

/** Lists the turns of `sessionKey` that can be undone, newest first. */
const list = (data: string, sessionKey: string) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const history = yield* FileHistoryDir.make({ directory: undoDir(data) })
    const turns = yield* history.turns(sessionKey).pipe(Effect.catch((error) => fail(error.message)))
    if (turns.length === 0) return yield* screen.line(`session ${clean(sessionKey)} has no file changes to undo`)
    for (const turn of [...turns].reverse()) {
      yield* screen.line(`${clean(turn.turnId)}  ${new Date(turn.startedAt).toISOString()}  ${turn.files.map((f) => clean(f)).join(", ")}`)
    }
  })

/** The `undo` command. */
export const undo = (flags: { readonly session: Option.Option<string>; readonly turn: Option.Option<string>; readonly list: boolean }) =>
  Effect.gen(function*() {
    const data = dataDir()
    const key = Option.isSome(flags.session) ? flags.session.value : Option.getOrUndefined(yield* readLastSession(data, nodePath.resolve(".")))
    if (key === undefined) return yield* fail("no session to undo in yet: name one with --session KEY")
    if (flags.list) return yield* list(data, key)
    yield* undoLast(data, key, Option.getOrUndefined(flags.turn))
  })
