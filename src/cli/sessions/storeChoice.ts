/**
 * Where the CLI keeps sessions (`--store`, for `run`, `chat` and `sessions` alike):
 *
 * - `sqlite` (the default): `sessions.db` in the data directory. Several `agent-loop` processes may
 *   use it at once: each append is a transaction, so they lose nothing and interleave whole turns.
 * - `jsonl`: the `sessions/` directory of JSON Lines files, one per session (the format before).
 * - `postgres`: the database of `--database-url` (or `AGENT_LOOP_DATABASE_URL`). Needs
 *   `@effect/sql-pg`, an optional peer dependency, installed next to the package. `serve` uses it
 *   by default, on the cluster's database, since a cluster's runners must share their sessions.
 *
 * The database URL may hold a password: it is read once, taken out of the environment (so nothing
 * the CLI starts inherits it), kept `Redacted`, and registered with `Secrets` so it is scrubbed from
 * anything that might show it.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as SessionStoreJsonl from "../../layers/SessionStoreJsonl.ts"
import { Secrets } from "../../services/Secrets.ts"
import { sessionsDir } from "../config/dataDir.ts"
import { fail } from "../terminal/failure.ts"
import { passwordOf, type StoreKind, URL_VARIABLE } from "./storeFlags.ts"

export { type StoreKind, storeFlags, storeKinds } from "./storeFlags.ts"

/** The store a command uses. */
export interface StoreChoice {
  readonly kind: StoreKind
  /** With `postgres` only. */
  readonly databaseUrl: Redacted.Redacted<string> | undefined
}

/** The parsed store flags. */
export interface StoreFlags {
  readonly store: Option.Option<StoreKind>
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
}

/** The choice of the flags; `postgres` needs a URL. The URL leaves the environment and becomes a secret. */
export const resolve = (flags: StoreFlags) =>
  Effect.gen(function*() {
    const kind = Option.getOrElse(flags.store, (): StoreKind => "sqlite")
    const url = Option.getOrUndefined(flags.databaseUrl)
    delete process.env[URL_VARIABLE]
    if (url !== undefined) (yield* Secrets).add([url, ...passwordOf(Redacted.value(url))])
    if (kind !== "postgres") return { kind, databaseUrl: undefined } satisfies StoreChoice
    if (url === undefined) return yield* fail(`--store postgres needs --database-url URL (or ${URL_VARIABLE})`)
    return { kind, databaseUrl: url } satisfies StoreChoice
  })

/** The SQLite database file of a data directory. */
export const sqliteFile = (data: string): string => nodePath.join(data, "sessions.db")

/** Where the sessions are, for messages: a path, or the database's host and name (never the password). */
export const location = (choice: StoreChoice, data: string): string => {
  if (choice.kind === "sqlite") return sqliteFile(data)
  if (choice.kind === "jsonl") return sessionsDir(data)
  try {
    const url = new URL(Redacted.value(choice.databaseUrl!))
    return `postgres ${url.host}${url.pathname}`
  } catch {
    return "the postgres database"
  }
}

/** The session store of a choice; opening it fails with one line. The SQL stores' code loads only for them. */
export const layer = (choice: StoreChoice, data: string) =>
  choice.kind === "jsonl"
    ? SessionStoreJsonl.layer(sessionsDir(data))
    : Layer.unwrap(Effect.map(Effect.promise(() => import("./storeSql.ts")), (sql) => sql.layer(choice, data)))
