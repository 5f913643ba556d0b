/**
 * The store flags (`--store`, `--database-url`, `--database-url-file`), apart from the store
 * layers in `storeChoice.ts`, so that the flag definitions (and `--help`) load no SQL code.
 */
import * as Config from "effect/Config"
import * as Redacted from "effect/Redacted"
import * as Flag from "effect/cli/Flag"

/** The stores the CLI can use. */
export const storeKinds = ["sqlite", "jsonl", "postgres"] as const
export type StoreKind = (typeof storeKinds)[number]

/** The variable the database URL is read from when no flag gives it. */
export const URL_VARIABLE = "AGENT_LOOP_DATABASE_URL"

/** A URL's password, decoded, to scrub on its own too (it may appear without the rest); none when it has none. */
export const passwordOf = (url: string): ReadonlyArray<string> => {
  try {
    const password = decodeURIComponent(new URL(url).password)
    return password === "" ? [] : [password]
  } catch {
    return []
  }
}

/** The variables that may hold a database URL, with its password: secrets from the start, whichever command runs. */
export const URL_VARIABLES = [URL_VARIABLE, "AGENT_LOOP_CLUSTER_URL"] as const

/**
 * `--NAME URL`, or `--NAME-file FILE` holding it, or the variable: for a URL that may hold a
 * password, which other processes can read on a command line.
 */
export const urlFlag = (name: string, description: string, variable: string) =>
  Flag.Redacted(name).pipe(
    Flag.withDescription(description),
    Flag.orElse(() =>
      Flag.FileText(`${name}-file`).pipe(
        Flag.withDescription(`A file holding the URL of --${name} (keeps its password out of the command line)`),
        Flag.map((text) => Redacted.make(text.trim()))
      )
    ),
    Flag.withFallbackConfig(Config.Redacted(variable)),
    Flag.optional
  )

/** The store flags, shared by `run`, `chat` and the `sessions` commands. */
export const storeFlags = {
  store: Flag.Literals("store", storeKinds).pipe(
    Flag.withFallbackConfig(Config.Literals(storeKinds, "AGENT_LOOP_STORE")),
    Flag.optional,
    Flag.withDescription(
      "Where sessions are kept: sqlite (sessions.db in the data directory), jsonl (one file per session in its sessions/ directory), or postgres (--database-url). Env AGENT_LOOP_STORE; default sqlite"
    )
  ),
  databaseUrl: urlFlag(
    "database-url",
    `The Postgres database, postgres://USER:PASSWORD@HOST:PORT/DATABASE: of --store postgres, and for serve the cluster's (where serve keeps sessions unless --store says otherwise). Env ${URL_VARIABLE}; read once, removed from the environment and scrubbed like a key`,
    URL_VARIABLE
  )
}
