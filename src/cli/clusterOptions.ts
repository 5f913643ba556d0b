/**
 * What `serve` and `run --cluster` share: the flags that locate a cluster, and its database. The
 * database URL is the cluster's address: runners and clients find each other through it (runner
 * registry, shard locks, persisted requests). Its password is a secret like a provider key.
 */
import { Effect, Layer, Redacted } from "effect"
import { Flag } from "effect/cli"
import type { SqlClient } from "effect/sql"
import { connectionFailure } from "../layers/connectionFailure.ts"
import { Secrets } from "../services/Secrets.ts"
import { type CliFailure, fail } from "./failure.ts"

/**
 * `serve`'s own flags. The cluster's database is the agent flags' `--database-url` (env
 * `AGENT_LOOP_DATABASE_URL`), which is also where `serve` keeps sessions by default.
 */
export const serveFlags = {
  host: Flag.String("host").pipe(
    Flag.withDefault("localhost"),
    Flag.withDescription("The host name or address other runners and clients reach this runner at")
  ),
  port: Flag.Int("port").pipe(Flag.withDefault(34431), Flag.withDescription("The runner's TCP port")),
  listenHost: Flag.String("listen-host").pipe(
    Flag.optional,
    Flag.withDescription("The address to listen on when it differs from --host (e.g. 0.0.0.0 in a container)")
  ),
  metricsPort: Flag.Int("metrics-port").pipe(
    Flag.optional,
    Flag.withDescription("Serve the loop's metrics for Prometheus at http://127.0.0.1:PORT/metrics (see --metrics-host)")
  ),
  metricsHost: Flag.String("metrics-host").pipe(
    Flag.withDefault("127.0.0.1"),
    Flag.withDescription("The address the --metrics-port endpoint listens on")
  ),
  shardLockRefresh: Flag.Finite("shard-lock-refresh").pipe(
    Flag.optional,
    Flag.withMetavar("SECONDS"),
    Flag.withDescription("How often the runner renews its shard locks, and how long a renewal may take before it gives its shards up (default 5)")
  ),
  shardLockExpiration: Flag.Finite("shard-lock-expiration").pipe(
    Flag.optional,
    Flag.withMetavar("SECONDS"),
    Flag.withDescription("How long a frozen runner keeps its shards before others take them (default 20; at least 3 x --shard-lock-refresh)")
  ),
  retention: Flag.Finite("retention").pipe(
    Flag.optional,
    Flag.withMetavar("SECONDS"),
    Flag.withDescription("How long answered requests, their replies and claims are kept before they are deleted (default 600)")
  )
}

/** `run --cluster URL`. */
export const clusterFlag = Flag.String("cluster").pipe(
  Flag.optional,
  Flag.withDescription(
    "Send the turn to the agent-loop cluster whose database is URL (postgres://...; see agent-loop serve) instead of running it here"
  )
)

/** A database URL without its password, to show. */
export const describe = (url: URL): string => {
  const shown = new URL(url.href)
  if (shown.password !== "") shown.password = "***"
  return shown.href
}

/** Checks the URL and registers its password as a secret. */
export const parse = (text: string) =>
  Effect.gen(function*() {
    const url = URL.canParse(text) ? new URL(text) : undefined
    if (url === undefined || (url.protocol !== "postgres:" && url.protocol !== "postgresql:")) {
      return yield* fail(`the cluster's database must be a postgres:// URL, not "${text.replace(/:[^:@/]*@/, ":***@")}"`)
    }
    if (url.password !== "") (yield* Secrets).add([decodeURIComponent(url.password)])
    return url
  })

/**
 * The cluster's database as the `SqlClient` of Effect Cluster's storage. `@effect/sql-pg` is an
 * optional peer dependency, loaded only here, so the rest of the CLI runs without it.
 */
export const database = (url: URL): Layer.Layer<SqlClient.SqlClient, CliFailure> =>
  Layer.unwrap(
    Effect.tryPromise(() => Promise.all([import("@effect/sql-pg/PgClient"), import("effect/sql")])).pipe(
      Effect.matchEffect({
        onFailure: () => fail("a cluster needs the package @effect/sql-pg (npm install @effect/sql-pg)"),
        onSuccess: ([PgClient, Sql]) =>
          // The pool connects lazily, deep inside the cluster's storage, where a refused connection
          // is a defect: one query first turns it into a failure that says why.
          Effect.succeed(Layer.effect(
            Sql.SqlClient.SqlClient,
            Effect.flatMap(Sql.SqlClient.SqlClient, (sql) =>
              sql`SELECT 1`.pipe(Effect.catchTag("SqlError", (error) => unreachable(url, error)), Effect.as(sql)))
          ).pipe(Layer.provideMerge(PgClient.layer({ url: Redacted.make(url.href) }).pipe(Layer.orDie))))
      })
    )
  )

/** The cluster's database could not be reached: the cause beneath the driver's "Failed to connect". */
const unreachable = (url: URL, error: { readonly message: string }) => {
  const failure = connectionFailure(error, url.port === "" ? `${url.protocol}//${url.hostname}:5432` : url.href)
  return fail(`the cluster's database ${describe(url)} cannot be reached: ${failure?.text ?? error.message}`)
}
