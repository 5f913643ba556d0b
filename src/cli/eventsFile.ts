/**
 * `--events FILE`: every event, encoded with the `AgentEvent` Schema, one JSON object per line,
 * in the order the bus delivered them. A failing write is warned about once: a full disk fails
 * every write after it, and one warning per event would bury the answer.
 */
import { Effect, FileSystem, Schema, type Scope } from "effect"
import { AgentEvent } from "../domain/Event.ts"
import { fail } from "./failure.ts"

const encodeLine = Schema.encodeEffect(Schema.fromJsonString(AgentEvent))

/** Opens (truncates) `path` and returns a writer of events; the file closes with the scope. */
export const open = (path: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const file = yield* fs.open(path, { flag: "w" }).pipe(Effect.catch((error) => fail(`cannot write events to ${path}: ${error.message}`)))
    const encoder = new TextEncoder()
    let warned = false
    return (event: AgentEvent): Effect.Effect<void> =>
      encodeLine(event).pipe(
        Effect.flatMap((line) => file.writeAll(encoder.encode(`${line}\n`))),
        Effect.catch((error) => {
          if (warned) return Effect.void
          warned = true
          return Effect.logWarning(`events file ${path}: ${error.message} (further failures are not reported)`)
        })
      )
  }) satisfies Effect.Effect<unknown, unknown, FileSystem.FileSystem | Scope.Scope>
