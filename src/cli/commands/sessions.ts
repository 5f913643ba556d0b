/**
 * `agent-loop sessions list` and `sessions show KEY [--all]`: what is saved in the store of `--store`
 * (`storeChoice.ts`; by default the SQLite database in the data directory). The list's lines are
 * `sessions/listing.ts`'s.
 *
 * Everything printed from a session is stored text (the model's among it), so it goes through
 * `clean` (`safeText.ts`): a session cannot move the cursor, retitle the window or hide lines.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { type Message, textOf } from "../../domain/Message.ts"
import * as SessionLog from "../../domain/SessionLog.ts"
import { dataDir, readLastSession } from "../config/dataDir.ts"
import { listLines, type Scope, withStore } from "../sessions/listing.ts"
import type * as StoreChoice from "../sessions/storeChoice.ts"
import { fail } from "../terminal/failure.ts"
import * as Format from "../terminal/format.ts"
import { clean } from "../terminal/safeText.ts"
import { Screen } from "../terminal/screen.ts"
import type { Style } from "../terminal/style.ts"

/** Lists the saved sessions (see `listLines`) on stdout. */
export const list = (flags: StoreChoice.StoreFlags, scope: Scope) =>
  withStore(flags, ({ list, where }) =>
    Effect.gen(function*() {
      const screen = yield* Screen
      const here = scope._tag === "workspace" ? scope.workspace : nodePath.resolve(".")
      const last = Option.getOrUndefined(yield* readLastSession(dataDir(), here))
      const listing = listLines(yield* list, scope, { last, style: screen.out, where })
      // the list goes to stdout; that there is none is a message
      if (listing._tag === "Empty") return yield* screen.line(listing.message)
      for (const line of listing.lines) yield* screen.text(`${line}\n`)
    }))

const showMessage = (message: Message, style: Style) => {
  switch (message.role) {
    case "system":
      return `${style.bold("system")}: ${style.dim(Format.truncate(clean(textOf(message.content)), 200))}`
    case "user":
      return `${style.bold("user")}: ${clean(textOf(message.content))}`
    case "assistant": {
      const calls = (message.toolCalls ?? []).map((call) => `\n  ${style.dim(`→ ${clean(call.name)} ${Format.args(clean(call.arguments))}`)}`)
      return `${style.bold("assistant")}: ${clean(message.content)}${calls.join("")}`
    }
    case "tool":
      return `${style.bold(`tool ${clean(message.toolName)}`)}${message.isError ? " (error)" : ""}: ${style.dim(Format.truncate(clean(textOf(message.content)), 200))}`
  }
}

/** A compaction record in `--all`: why, how much of the context it left, and the summary. */
const showCompaction = (record: SessionLog.Compaction, kept: number, style: Style) => {
  const line = style.yellow(`── compaction (${record.reason}): ${Format.plural(kept, "message")} left in the context ──`)
  return record.summary === undefined ? line : `${line}\n${style.bold("summary")}: ${clean(record.summary)}`
}

/**
 * Prints a session's context (what the next turn starts from), or with `all` its whole log with
 * compaction, turn-outcome and rewind records marked; a key with nothing saved is reported as no session.
 */
export const show = (key: string, options: { readonly all: boolean }, flags: StoreChoice.StoreFlags) =>
  withStore(flags, ({ log }) => Effect.gen(function*() {
    const screen = yield* Screen
    const entries = yield* log(key)
    if (entries.length === 0) return yield* fail(`no session "${key}" (see: agent-loop sessions list)`)
    if (!options.all) {
      for (const message of SessionLog.view(entries)) yield* screen.text(`${showMessage(message, screen.out)}\n`)
      return
    }
    let folded: Array<Message> = []
    for (const entry of entries) {
      folded = SessionLog.foldEntry(folded, entry)
      const shown = entry.role === "compaction"
        ? showCompaction(entry, SessionLog.repair(folded).length, screen.out)
        : entry.role === "meta"
        ? screen.out.dim(`── started in ${clean(entry.workspace ?? "an unknown workspace")} ──`)
        : entry.role === "outcome"
        ? screen.out.dim(`── turn ${clean(entry.turnId)} ${entry.status}${entry.error === undefined ? "" : `: ${clean(entry.error.message)}`} ──`)
        : entry.role === "rewind"
        ? screen.out.yellow(`── rewound: ${Format.plural(entry.cut, "message")} kept in the context, the rest above is an abandoned branch ──`)
        : showMessage(entry, screen.out)
      yield* screen.text(`${shown}\n`)
    }
  }))
