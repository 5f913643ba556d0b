/**
 * `agent-loop sessions export KEY --html FILE`: a saved session as one self-contained HTML page
 * (`Inspector.exportHtml`): its conversation and turn timelines, known keys scrubbed, every
 * stored text shown as text. `--format md` gives a plain Markdown transcript instead
 * (`exportMarkdown`), to stdout or `--output FILE`. A file is written private (0600): a session can
 * hold anything.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import { exportHtml } from "../../inspector/exportHtml.ts"
import { exportMarkdown } from "../../inspector/exportMarkdown.ts"
import { Secrets } from "../../services/Secrets.ts"
import { readEvents } from "../output/eventsRead.ts"
import { withStore } from "../sessions/listing.ts"
import type * as StoreChoice from "../sessions/storeChoice.ts"
import { fail } from "../terminal/failure.ts"
import { Screen } from "../terminal/screen.ts"

/** What to write, and where. */
export interface ExportTarget {
  readonly format: "html" | "md" | undefined
  /** `--html FILE`: the HTML page to `FILE`. */
  readonly html: string | undefined
  readonly output: string | undefined
  readonly events: ReadonlyArray<string>
}

/** Writes session `key` as HTML to a file, or as Markdown to a file or stdout; a session that does not exist is an error. */
export const exportSession = (key: string, target: ExportTarget, flags: StoreChoice.StoreFlags) =>
  withStore(flags, ({ list, log, where }) =>
    Effect.gen(function*() {
      const format = target.format ?? (target.html !== undefined ? "html" : undefined)
      if (format === undefined) return yield* fail("sessions export needs --html FILE, or --format md (a Markdown transcript to stdout or --output FILE)")
      if (format === "md" && target.html !== undefined) return yield* fail("--html writes HTML: with --format md, use --output FILE")
      const file = target.output ?? target.html
      if (format === "html" && file === undefined) return yield* fail("--format html needs --output FILE (or --html FILE)")
      const entries = yield* log(key)
      if (entries.length === 0) return yield* fail(`no session "${key}" in ${where}`)
      const info = (yield* list).find((s) => s.sessionKey === key)
      const secrets = yield* Secrets
      const updated = info?.updatedAt === undefined ? {} : { updatedAt: info.updatedAt }
      const text = format === "md"
        ? exportMarkdown(key, entries, { scrub: secrets.scrub, ...updated })
        : exportHtml(key, entries, { scrub: secrets.scrub, events: yield* readEvents(target.events), ...updated })
      const screen = yield* Screen
      if (file === undefined) return yield* screen.raw(text)
      const fs = yield* FileSystem.FileSystem
      yield* fs.writeFileString(file, text, { mode: 0o600 }).pipe(Effect.catch((error) => fail(`cannot write ${file}: ${error.message}`)))
      yield* screen.line(`agent-loop: wrote ${file} (${entries.length} entries)`)
    }))
