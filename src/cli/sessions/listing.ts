/**
 * The saved sessions as the commands show them: the store of `--store` opened for a command
 * (`withStore`), and a session list's lines, newest first (`sessions list`, the picker of a bare
 * `--resume`, `chat`'s `/sessions`).
 *
 * Everything shown of a session is stored text (the model's among it), so it goes through `clean`
 * (`safeText.ts`): a session cannot move the cursor, retitle the window or hide lines.
 */
import * as Effect from "effect/Effect"
import type * as SessionLog from "../../domain/SessionLog.ts"
import { type SessionInfo, SessionStore } from "../../services/SessionStore.ts"
import { dataDir } from "../config/dataDir.ts"
import { type CliFailure, fail } from "../terminal/failure.ts"
import * as Format from "../terminal/format.ts"
import { clean } from "../terminal/safeText.ts"
import type { Style } from "../terminal/style.ts"
import * as StoreChoice from "./storeChoice.ts"

/** Runs `f` on the store of the flags, its failures as one-line `CliFailure`s. */
export const withStore = <A, E, R>(
  flags: StoreChoice.StoreFlags,
  f: (store: {
    readonly where: string
    readonly list: Effect.Effect<ReadonlyArray<SessionInfo>, CliFailure>
    readonly log: (key: string) => Effect.Effect<ReadonlyArray<SessionLog.SessionEntry>, CliFailure>
    readonly append: (key: string, entries: ReadonlyArray<SessionLog.SessionEntry>) => Effect.Effect<void, CliFailure>
  }) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const data = dataDir()
    const choice = yield* StoreChoice.resolve(flags)
    const storeError = (error: { readonly message: string }) => fail(error.message)
    return yield* Effect.scoped(Effect.gen(function*() {
      const store = yield* SessionStore
      return yield* f({
        where: StoreChoice.location(choice, data),
        list: Effect.catch(store.list, storeError),
        log: (key) => Effect.catch(store.log(key), storeError),
        append: (key, entries) => Effect.catch(store.append(key, entries), storeError)
      })
    }).pipe(Effect.provide(StoreChoice.layer(choice, data))))
  })

const pad = (n: number) => String(n).padStart(2, "0")

/** Local `YYYY-MM-DD HH:MM`. */
export const timestamp = (ms: number): string => {
  const d = new Date(ms)
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`
}

/** Newest first; sessions without a time (unreadable ones) last, by key. */
export const byRecency = (a: SessionInfo, b: SessionInfo) =>
  (b.updatedAt ?? -Infinity) - (a.updatedAt ?? -Infinity) || (a.sessionKey < b.sessionKey ? -1 : a.sessionKey > b.sessionKey ? 1 : 0)

const describe = (info: SessionInfo, style: Style, showWorkspace: boolean): string => {
  if (info.problem !== undefined) return `${style.red("unreadable")}: ${clean(info.problem)}`
  const where = showWorkspace ? [style.dim(info.workspace === undefined ? "-" : Format.truncate(clean(info.workspace), 40))] : []
  const when = info.updatedAt === undefined ? [] : [style.dim(timestamp(info.updatedAt))]
  const count = [style.dim(Format.plural(info.messages ?? 0, "message"))]
  const preview = info.preview === undefined ? [] : [Format.truncate(clean(info.preview), 80)]
  return [...where, ...when, ...count, ...preview].join("  ")
}

/** Which sessions `list` shows: those of one workspace (an absolute path), or all of them. */
export type Scope = { readonly _tag: "workspace"; readonly workspace: string } | { readonly _tag: "all" }

/** A session list: its lines, or the message that there is none. */
export type Listing = { readonly _tag: "Empty"; readonly message: string } | { readonly _tag: "Lines"; readonly lines: ReadonlyArray<string> }

/**
 * The lines of a session list, last used first: when, how many messages, the first question. By
 * default those of one workspace; `all` lists every one with its workspace column (`-` for
 * sessions saved before workspaces were recorded). The one `--continue` resumes in the workspace
 * (`last`) is marked `*`; one that cannot be read is listed with why (under every scope: its
 * workspace cannot be known). `where` names the store in the line said when there is none.
 */
export const listLines = (
  stored: ReadonlyArray<SessionInfo>,
  scope: Scope,
  options: { readonly last: string | undefined; readonly style: Style; readonly where?: string | undefined }
): Listing => {
  const within = options.where === undefined ? "" : ` in ${clean(options.where)}`
  if (stored.length === 0) return { _tag: "Empty", message: `no sessions yet${within}` }
  const infos = stored.filter((info) => scope._tag === "all" || info.problem !== undefined || info.workspace === scope.workspace)
  if (infos.length === 0 && scope._tag === "workspace") {
    return { _tag: "Empty", message: `no sessions of ${clean(scope.workspace)}${within} (--all lists every workspace's)` }
  }
  return {
    _tag: "Lines",
    lines: [...infos].sort(byRecency).map((info) =>
      `${info.sessionKey === options.last ? "*" : " "} ${clean(info.sessionKey)}  ${describe(info, options.style, scope._tag === "all")}`
    )
  }
}
