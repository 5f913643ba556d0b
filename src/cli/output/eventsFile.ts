/**
 * Every event as JSON Lines, encoded with the `AgentEvent` Schema, in the order the bus delivered
 * them: to a file (`--events FILE`) or to stdout (`--output-format stream-json`, or `--events`
 * naming stdout itself).
 *
 * A file is truncated and written in order; anything else (a pipe, a terminal, `/dev/stderr`)
 * is appended to, since it cannot be written at positions. A path that is this process's stdout
 * (`-`, `/dev/stdout`, the file stdout is redirected to) goes through the screen instead: a second
 * descriptor on the same file would write over the answer. A failing write is warned about once:
 * a full disk fails every write after it, and one warning per event would bury the answer.
 */
import * as nodeFs from "node:fs"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { AgentEvent } from "../../domain/Event.ts"
import { fail } from "../terminal/failure.ts"
import type { ScreenShape } from "../terminal/screen.ts"
import { eventLine, messageLines } from "./streamJson.ts"

const encodeLine = Schema.encodeEffect(Schema.fromJsonString(AgentEvent))

/** A writer of events. */
export type EventWriter = (event: AgentEvent) => Effect.Effect<void>

/** Whether `path` is this process's stdout: `-`, or the same file (device and inode) as descriptor 1. */
export const isStdout = (path: string): boolean => {
  if (path === "-") return true
  try {
    const target = nodeFs.statSync(path)
    const stdout = nodeFs.fstatSync(1)
    return target.dev === stdout.dev && target.ino === stdout.ino
  } catch {
    return false
  }
}

/**
 * Each event as one line on stdout (with `"type":"event"`, and with `messages` Claude Code's message
 * lines after it: see `streamJson.ts`), through the screen (so it never lands inside a partial text
 * line).
 */
export const toStdout = (screen: ScreenShape, options: { readonly messages?: boolean } = {}): EventWriter => (event) =>
  encodeLine(event).pipe(
    Effect.flatMap((line) => {
      const messages = options.messages === true ? messageLines(event) : []
      const text = messages.length === 0 ? `${eventLine(line)}\n` : [eventLine(line), ...messages.map((m) => JSON.stringify(m))].join("\n") + "\n"
      return screen.raw(text)
    }),
    Effect.orDie
  )

/** Opens `path` (a regular file is truncated) and returns a writer of events; the file closes with the scope. */
export const open = (path: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const info = yield* Effect.option(fs.stat(path))
    const regular = info._tag === "None" || info.value.type === "File"
    // Private when created here: events carry the whole conversation.
    const file = yield* fs.open(path, { flag: regular ? "w" : "a", mode: 0o600 }).pipe(
      Effect.catch((error) => fail(`cannot write events to ${path}: ${error.message}`))
    )
    const encoder = new TextEncoder()
    let warned = false
    const write: EventWriter = (event) =>
      encodeLine(event).pipe(
        Effect.flatMap((line) => file.writeAll(encoder.encode(`${line}\n`))),
        Effect.catch((error) => {
          if (warned) return Effect.void
          warned = true
          return Effect.logWarning(`events file ${path}: ${error.message} (further failures are not reported)`)
        })
      )
    return write
  }) satisfies Effect.Effect<EventWriter, unknown, FileSystem.FileSystem | Scope.Scope>
