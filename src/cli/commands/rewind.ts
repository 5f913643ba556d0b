/**
 * The chat's `/rewind` (and Esc Esc at an empty prompt): the session's user messages offered in a
 * picker, newest first; the one chosen is where the conversation goes back to, files included.
 *
 * - The files: every turn from the chosen message on is undone, newest first, as `/undo` undoes one
 *   (`FileHistory`): a file changed since is left alone and named.
 * - The conversation: a rewind record (`rewindSession`), so the next turn starts from the messages
 *   before the chosen one while the log keeps the rest as an abandoned branch, nothing deleted.
 *
 * A user message is mapped to its turns by the log: the turn-outcome records after it name them.
 */
import * as Effect from "effect/Effect"
import * as SessionLog from "../../domain/SessionLog.ts"
import * as FileHistoryDir from "../../layers/FileHistoryDir.ts"
import { rewindSession, SessionStore } from "../../services/SessionStore.ts"
import { undoDir } from "../config/dataDir.ts"
import { ownText, typed } from "../output/replay.ts"
import { choose, type KeySource } from "../sessions/sessionPicker.ts"
import * as Format from "../terminal/format.ts"
import { clean } from "../terminal/safeText.ts"
import type { ScreenShape } from "../terminal/screen.ts"
import { describeUndo } from "./undo.ts"

/** How many user messages the picker offers (the most recent). */
export const MAX_CHOICES = 20

/** A user message that can be rewound to: its number among the view's user messages, its text, and where it is in the log. */
export interface RewindChoice {
  readonly toUserMessage: number
  readonly preview: string
  /** The message as typed, without what the chat attached to it. */
  readonly text: string
  readonly logIndex: number
}

/** The view's user messages, newest first; those a turn's hooks added before the typed one are left out (a row's last is the one typed). */
export const choices = (entries: ReadonlyArray<SessionLog.SessionEntry>): ReadonlyArray<RewindChoice> => {
  const view = SessionLog.view(entries)
  const found: Array<RewindChoice> = []
  let users = -1
  view.forEach((message, i) => {
    if (message.role !== "user") return
    users++
    if (view[i + 1]?.role === "user") return
    found.push({
      toUserMessage: users,
      preview: typed(message.content).replace(/\s+/g, " "),
      text: ownText(message.content),
      logIndex: entries.indexOf(message)
    })
  })
  return found.reverse().slice(0, MAX_CHOICES)
}

/** The turns whose outcome records follow the chosen message in the log: the ones rewinding undoes. */
export const turnsFrom = (entries: ReadonlyArray<SessionLog.SessionEntry>, logIndex: number): ReadonlySet<string> =>
  new Set(SessionLog.outcomes(entries.slice(Math.max(0, logIndex))).map((outcome) => outcome.turnId))

/** What rewinding needs. */
export interface RewindContext {
  readonly screen: ScreenShape
  readonly dataDir: string
  readonly workspace: string
  readonly sessionKey: string
  /** The terminal's keys, lent by the line editor; without them `/rewind N` still works. */
  readonly keys: KeySource | undefined
}

/**
 * `/rewind [N]`: rewinds to the N-th newest user message (1 is the last), or to the one picked.
 * Returns the choice rewound to, or `undefined` when nothing was.
 */
export const rewind = (wanted: string, context: RewindContext) =>
  Effect.gen(function*() {
    const { screen } = context
    const store = yield* SessionStore
    const entries = yield* store.log(context.sessionKey)
    const offered = choices(entries)
    if (offered.length === 0) {
      yield* screen.line(screen.err.dim("nothing to rewind: this session has no messages yet"))
      return undefined
    }
    let chosen: RewindChoice | undefined
    if (wanted !== "") {
      chosen = /^\d+$/.test(wanted) ? offered[Number(wanted) - 1] : undefined
      if (chosen === undefined) {
        yield* screen.line(screen.err.dim(`usage: /rewind [N], N from 1 (the last message) to ${offered.length}`))
        return undefined
      }
    } else if (context.keys === undefined) {
      yield* screen.line(screen.err.dim("usage: /rewind N (1 is your last message)"))
      return undefined
    } else {
      const write = (text: string) => process.stderr.write(text)
      write("Rewind to before which message? (the conversation and the files go back to before it)\n")
      const index = yield* choose(offered.map((choice) => Format.truncate(clean(choice.preview), 100)), context.keys, write)
      if (index === undefined) {
        yield* screen.line(screen.err.dim("(nothing rewound)"))
        return undefined
      }
      chosen = offered[index]!
    }
    // the files first: when one was changed since, the conversation still goes back, and the user is told
    const history = yield* FileHistoryDir.make({ directory: undoDir(context.dataDir) })
    const undone = turnsFrom(entries, chosen.logIndex)
    const turns = (yield* Effect.orElseSucceed(history.turns(context.sessionKey), () => [])).filter((turn) => undone.has(turn.turnId))
    let refused = 0
    for (const turn of [...turns].reverse()) {
      const result = yield* Effect.result(history.undo(context.sessionKey, turn.turnId))
      if (result._tag === "Failure") {
        yield* screen.line(screen.err.red(`✗ ${clean(result.failure.message)}`))
        continue
      }
      refused += result.success.refused.length
      for (const line of describeUndo(result.success, context.workspace)) yield* screen.line(screen.err.dim(line))
    }
    yield* rewindSession(context.sessionKey, chosen.toUserMessage)
    const files = turns.length === 0 ? "no files to put back" : `files of ${Format.plural(turns.length, "turn")} put back${refused > 0 ? ` (${refused} left alone)` : ""}`
    yield* screen.line(screen.err.dim(`⏪ rewound to before “${Format.truncate(clean(chosen.preview), 60)}”: ${files}; the rest stays in the log as a branch`))
    return chosen
  })
