/**
 * What `serve` and `run --cluster` share: the flags that locate a cluster, and its database. The
 * database URL is the cluster's address: runners and clients find each other through it (runner
 * registry, shard locks, persisted requests). Its password is a secret like a provider key.
 *
 * The cluster secret (`AGENT_LOOP_CLUSTER_SECRET` or `--cluster-secret-file`) is read once, taken
 * out of the environment (so no tool or hook the runner starts inherits it), kept `Redacted` and
 * scrubbed like a key. TLS files are read when the flags are parsed.
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Flag from "effect/cli/Flag"
import type * as SqlClient from "effect/sql/SqlClient"
import type { ClusterSecurity } from "../../cluster/auth.ts"
import { connectionFailure, sqlState } from "../../domain/connectionFailure.ts"
import { Secrets } from "../../services/Secrets.ts"
import { passwordOf, URL_VARIABLES, urlFlag } from "../sessions/storeFlags.ts"
import { type CliFailure, fail } from "../terminal/failure.ts"

/** The shortest cluster secret the CLI takes. */
export const MIN_SECRET_LENGTH = 16

/** The environment variable of the cluster secret. */
export const SECRET_VARIABLE = "AGENT_LOOP_CLUSTER_SECRET"

/** The flags of the cluster's secret and of the CA that signs runner certificates: `serve` and `run --cluster`. */
export const securityFlags = {
  clusterSecret: Flag.FileText("cluster-secret-file").pipe(
    Flag.withDescription(
      `A file holding the cluster secret, which runners and clients share: a runner refuses peers and requests that cannot prove it. Env ${SECRET_VARIABLE}; read once, removed from the environment and scrubbed like a key`
    ),
    Flag.map((text) => Redacted.make(text.trim())),
    Flag.withFallbackConfig(Config.Redacted(SECRET_VARIABLE)),
    Flag.optional
  ),
  clusterTlsCa: Flag.FileText("cluster-tls-ca").pipe(
    Flag.optional,
    Flag.withDescription("Connect to runners with TLS, trusting the certificates this PEM file signs (with a runner's own --cluster-tls-cert: the CA of the others')")
  )
}

/** `run --cluster`'s own flags besides `--cluster`. */
export const clientFlags = {
  ...securityFlags,
  clusterWait: Flag.Int("cluster-wait").pipe(
    Flag.withDefault(30),
    Flag.withDescription("With --cluster: how many seconds to wait for a runner to be up before failing")
  )
}

/** The parsed flags of `clientFlags`. */
export interface ClientFlags {
  readonly clusterSecret: Option.Option<Redacted.Redacted<string>>
  readonly clusterTlsCa: Option.Option<string>
  readonly clusterWait: number
}

/**
 * The security of the flags: the secret leaves the environment and becomes a scrubbed secret; TLS
 * is on when a CA, or (on a runner) a certificate and key, is given.
 */
export const security = (flags: {
  readonly clusterSecret: Option.Option<Redacted.Redacted<string>>
  readonly clusterTlsCa: Option.Option<string>
  readonly clusterTlsCert?: Option.Option<string>
  readonly clusterTlsKey?: Option.Option<string>
}) =>
  Effect.gen(function*() {
    delete process.env[SECRET_VARIABLE]
    const secret = Option.getOrUndefined(flags.clusterSecret)
    if (secret !== undefined) {
      // a short secret could be guessed offline from one recorded handshake
      if (Redacted.value(secret).length < MIN_SECRET_LENGTH) {
        return yield* fail(`the cluster secret must be at least ${MIN_SECRET_LENGTH} characters (e.g. openssl rand -base64 32)`)
      }
      ;(yield* Secrets).add([secret])
    }
    const cert = Option.getOrUndefined(flags.clusterTlsCert ?? Option.none())
    const key = Option.getOrUndefined(flags.clusterTlsKey ?? Option.none())
    if ((cert === undefined) !== (key === undefined)) return yield* fail("TLS on the runner port needs both --cluster-tls-cert and --cluster-tls-key")
    const ca = Option.getOrUndefined(flags.clusterTlsCa)
    const tls = cert === undefined && ca === undefined ? undefined : { cert, key, ca }
    return { secret, tls } satisfies ClusterSecurity
  })

/** `--cluster-wait` as a duration. */
export const waitOf = (flags: ClientFlags) => Duration.seconds(flags.clusterWait)

/** An optional number of seconds (checked by `serve`: positive and finite). */
const secondsFlag = (name: string, description: string) =>
  Flag.Finite(name).pipe(Flag.optional, Flag.withMetavar("SECONDS"), Flag.withDescription(description))

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
  shardLockRefresh: secondsFlag(
    "shard-lock-refresh",
    "How often the runner renews its shard locks, and how long a renewal may take before it gives its shards up (default 5)"
  ),
  shardLockExpiration: secondsFlag(
    "shard-lock-expiration",
    "How long a frozen runner keeps its shards before others take them (default 20; at least 3 x --shard-lock-refresh)"
  ),
  retention: secondsFlag("retention", "How long answered requests, their replies, claims and commit records are kept before they are deleted (the session logs never are; default 600)"),
  ...securityFlags,
  clusterTlsCert: Flag.FileText("cluster-tls-cert").pipe(
    Flag.optional,
    Flag.withDescription("Listen with TLS on the runner port: the PEM certificate chain (with --cluster-tls-key)")
  ),
  clusterTlsKey: Flag.FileText("cluster-tls-key").pipe(
    Flag.optional,
    Flag.withDescription("The PEM private key of --cluster-tls-cert")
  ),
  dbPoolSize: Flag.Int("db-pool-size").pipe(
    Flag.withDefault(10),
    Flag.withDescription("The most connections the runner opens to its database (one pool for the cluster and the sessions when they share it)")
  )
}

/** The variable `run --cluster`'s URL is read from when no flag gives it. */
export const CLUSTER_URL_VARIABLE = URL_VARIABLES[1]

/**
 * `run --cluster URL`, or `--cluster-file FILE`, or the variable: the URL may hold the database's
 * password, which other processes could read on a command line.
 */
export const clusterFlag = urlFlag(
  "cluster",
  `Send the turn to the agent-loop cluster whose database is URL (postgres://...; see agent-loop serve) instead of running it here. Env ${CLUSTER_URL_VARIABLE}; read once, removed from the environment and scrubbed like a key`,
  CLUSTER_URL_VARIABLE
)

/** A database URL without its password, to show. */
export const describe = (url: URL): string => {
  const shown = new URL(url.href)
  if (shown.password !== "") shown.password = "***"
  return shown.href
}

/**
 * Checks the cluster's URL and registers it, and its password on its own, as secrets; the
 * variable it may have come from leaves the environment.
 */
export const parse = (given: Redacted.Redacted<string>) =>
  Effect.gen(function*() {
    delete process.env[CLUSTER_URL_VARIABLE]
    const text = Redacted.value(given)
    const url = URL.canParse(text) ? new URL(text) : undefined
    if (url === undefined || (url.protocol !== "postgres:" && url.protocol !== "postgresql:")) {
      return yield* fail(`the cluster's database must be a postgres:// URL, not "${text.replace(/:[^:@/]*@/, ":***@")}"`)
    }
    const password = passwordOf(text)
    if (password.length > 0) (yield* Secrets).add([given, ...password])
    return url
  })

/** How many connections a process opens to the cluster's database, and under which name (`application_name`). */
export interface PoolOptions {
  /** The pool's size: a runner's default is 10 (one of them held for its shard locks); a client's, 1. */
  readonly maxConnections: number
  /** Shown in `pg_stat_activity`, so an operator can tell runners from clients. */
  readonly applicationName: string
}

/**
 * The cluster's database as the `SqlClient` of Effect Cluster's storage (and, on a runner, of its
 * sessions). `@effect/sql-pg` is an optional peer dependency, loaded only here, so the rest of the
 * CLI runs without it.
 */
export const database = (url: URL, pool: PoolOptions): Layer.Layer<SqlClient.SqlClient, CliFailure> =>
  Layer.unwrap(
    Effect.tryPromise(() => Promise.all([import("@effect/sql-pg/PgClient"), import("effect/sql/SqlClient")])).pipe(
      Effect.matchEffect({
        onFailure: () => fail("a cluster needs the package @effect/sql-pg (npm install @effect/sql-pg)"),
        onSuccess: ([PgClient, SqlClientModule]) =>
          // The pool connects lazily, deep inside the cluster's storage, where a refused connection
          // is a defect: one query first turns it into a failure that says why.
          Effect.succeed(Layer.effect(
            SqlClientModule.SqlClient,
            Effect.flatMap(SqlClientModule.SqlClient, (sql) =>
              sql`SELECT 1`.pipe(Effect.catchTag("SqlError", (error) => unreachable(url, error)), Effect.as(sql)))
          ).pipe(Layer.provideMerge(
            PgClient.layer({ url: Redacted.make(url.href), maxConnections: pool.maxConnections, applicationName: pool.applicationName }).pipe(Layer.orDie)
          )))
      })
    )
  )

/**
 * The cluster's database could not be used: it refused the credentials (SQLSTATE class 28, e.g.
 * `28P01`, a wrong password), or it could not be reached (the cause beneath the driver's "Failed to
 * connect"). The URL is shown with its password masked.
 */
const unreachable = (url: URL, error: { readonly message: string }) => {
  const state = sqlState(error)
  if (state !== undefined && state.startsWith("28")) {
    const why = state === "28P01" ? "password authentication failed" : "the server refused the user"
    return fail(`the cluster's database ${describe(url)} refused the connection: authentication failed (${why}, SQLSTATE ${state}): check the user and password of the URL`)
  }
  const failure = connectionFailure(error, url.port === "" ? `${url.protocol}//${url.hostname}:5432` : url.href)
  return fail(`the cluster's database ${describe(url)} cannot be reached: ${failure?.text ?? error.message}`)
}
