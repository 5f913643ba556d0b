/**
 * `agent-loop sessions import DIR`: copies the JSON Lines sessions in DIR (the `sessions/`
 * directory of a data directory from before the SQLite default, or any `SessionStoreJsonl`
 * directory) into the store of `--store`, and says what it did with each.
 *
 * Idempotent: a session the store already holds as in DIR is left alone; one the store holds the
 * beginning of (it was imported, then continued in the JSON Lines files) gets the rest appended;
 * one the store holds differently is skipped, never overwritten. Each session is one `append`, so
 * an import stopped half-way leaves whole sessions, and running it again finishes it. Sessions
 * are imported oldest first, so `sessions list` keeps their order. DIR is only read.
 */
import { isDeepStrictEqual } from "node:util"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as SessionLog from "../../domain/SessionLog.ts"
import * as SessionStoreJsonl from "../../layers/SessionStoreJsonl.ts"
import { withStore } from "../sessions/listing.ts"
import type { StoreFlags } from "../sessions/storeChoice.ts"
import { fail } from "../terminal/failure.ts"
import * as Format from "../terminal/format.ts"
import { clean } from "../terminal/safeText.ts"
import { Screen } from "../terminal/screen.ts"

type Outcome = "imported" | "extended" | "present" | "skipped"

/** Imports every session of `dir`; fails (exit 1) when one could not be imported. */
export const importSessions = (dir: string, flags: StoreFlags) =>
  withStore(flags, (target) =>
    Effect.gen(function*() {
      const screen = yield* Screen
      const fs = yield* FileSystem.FileSystem
      const isDirectory = yield* fs.stat(dir).pipe(Effect.map((info) => info.type === "Directory"), Effect.orElseSucceed(() => false))
      if (!isDirectory) return yield* fail(`no directory ${dir} to import sessions from`)
      const source = yield* SessionStoreJsonl.make(dir, { cachedSessions: 0 })
      const infos = yield* source.list.pipe(Effect.catch((error) => fail(error.message)))
      const counts: Record<Outcome, number> = { imported: 0, extended: 0, present: 0, skipped: 0 }
      const say = (outcome: Outcome, key: string, detail: string) =>
        Effect.andThen(Effect.sync(() => counts[outcome]++), screen.text(`${outcome === "present" ? "already imported" : outcome} ${clean(key)}${detail}\n`))

      const oldestFirst = [...infos].sort((a, b) => (a.updatedAt ?? 0) - (b.updatedAt ?? 0))
      for (const info of oldestFirst) {
        const key = info.sessionKey
        if (info.problem !== undefined) {
          yield* say("skipped", key, `: ${clean(info.problem)}`)
          continue
        }
        const read = yield* Effect.result(source.log(key))
        if (read._tag === "Failure") {
          yield* say("skipped", key, `: ${clean(read.failure.message)}`)
          continue
        }
        const entries = read.success
        const existing = yield* target.log(key)
        if (!isDeepStrictEqual(existing, entries.slice(0, existing.length))) {
          yield* say("skipped", key, ": the store holds a different session under this key")
          continue
        }
        if (existing.length === entries.length) {
          yield* say("present", key, "")
          continue
        }
        const rest = entries.slice(existing.length)
        yield* target.append(key, rest)
        const messages = SessionLog.describe(rest).messages
        yield* say(existing.length === 0 ? "imported" : "extended", key, `: ${Format.plural(messages, existing.length === 0 ? "message" : "new message")}`)
      }
      const total = `${counts.imported} imported, ${counts.extended} extended, ${counts.present} already there, ${counts.skipped} skipped`
      yield* screen.line(`sessions from ${clean(dir)} into ${clean(target.where)}: ${total}`)
      if (counts.skipped > 0) return yield* fail(`${Format.plural(counts.skipped, "session")} could not be imported`)
    }))
