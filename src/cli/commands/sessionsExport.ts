/**
 * `agent-loop sessions export KEY --html FILE`: a saved session as one self-contained HTML page
 * (`Inspector.exportHtml`): its conversation and turn timelines, known keys scrubbed, every
 * stored text shown as text. The file is written private (0600): a session can hold anything.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import { exportHtml } from "../../inspector/exportHtml.ts"
import { Secrets } from "../../services/Secrets.ts"
import { readEvents } from "../output/eventsRead.ts"
import { withStore } from "../sessions/listing.ts"
import type * as StoreChoice from "../sessions/storeChoice.ts"
import { fail } from "../terminal/failure.ts"
import { Screen } from "../terminal/screen.ts"

/** Writes session `key` to `file` as HTML; a session that does not exist is an error. */
export const exportSession = (key: string, file: string, eventFiles: ReadonlyArray<string>, flags: StoreChoice.StoreFlags) =>
  withStore(flags, ({ list, log, where }) =>
    Effect.gen(function*() {
      const entries = yield* log(key)
      if (entries.length === 0) return yield* fail(`no session "${key}" in ${where}`)
      const events = yield* readEvents(eventFiles)
      const info = (yield* list).find((s) => s.sessionKey === key)
      const secrets = yield* Secrets
      const html = exportHtml(key, entries, {
        scrub: secrets.scrub,
        events,
        ...(info?.updatedAt === undefined ? {} : { updatedAt: info.updatedAt })
      })
      const fs = yield* FileSystem.FileSystem
      yield* fs.writeFileString(file, html, { mode: 0o600 }).pipe(Effect.catch((error) => fail(`cannot write ${file}: ${error.message}`)))
      yield* (yield* Screen).line(`agent-loop: wrote ${file} (${entries.length} entries)`)
    }))
