/**
 * Reads the events files that `--events FILE` wrote (one `AgentEvent` per line, JSON), so that
 * `agent-loop ui` and `sessions export` can show the recorded turns' timelines with their times.
 * A line that is not an event fails with its file and line number: nothing is silently skipped.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Schema from "effect/Schema"
import { AgentEvent } from "../../domain/Event.ts"
import { fail } from "../terminal/failure.ts"

const decodeLine = Schema.decodeUnknownEffect(Schema.fromJsonString(AgentEvent))

/** The events of `paths`, file after file, in the order they were written. */
export const readEvents = (paths: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const events: Array<AgentEvent> = []
    for (const path of paths) {
      const text = yield* fs.readFileString(path).pipe(Effect.catch((error) => fail(`cannot read events file ${path}: ${error.message}`)))
      const lines = text.split("\n")
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i]!.trim()
        if (line === "") continue
        // stream-json output marks its event lines with "type": "event"; the schema ignores the extra key
        if (!line.startsWith("{")) return yield* fail(`${path}:${i + 1}: not an event (expected one JSON object per line)`)
        const event = yield* decodeLine(line).pipe(Effect.catch((error) => fail(`${path}:${i + 1}: not an event: ${error.message.split("\n")[0]}`)))
        events.push(event)
      }
    }
    return events
  })
