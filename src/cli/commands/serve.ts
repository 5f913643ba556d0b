/**
 * `agent-loop serve`: without `--database-url`, the loop's HTTP API served in-process
 * (`serveApi.ts`); with it, a cluster runner. It runs the sessions the cluster gives it on a loop built
 * from the usual flags and settings (provider, model, tools, hooks, store), and serves them to
 * clients (`agent-loop run --cluster`, or `AgentLoopCluster.layerClient`) until SIGTERM or Ctrl-C.
 *
 * A runner has no terminal to ask approval on: calls that need it are denied unless `--yes` or
 * `--approval approve` says otherwise. The runners of one cluster must share the session store,
 * since a session moves to another runner when its runner stops: so `serve` keeps sessions in the
 * cluster's own database (`--store postgres` on `--database-url`) unless `--store` says otherwise,
 * on the same connection pool as the cluster (`--db-pool-size` connections in all).
 *
 * With `--api-port`, a runner also serves the HTTP API (`serveApi.ts`) for the whole cluster: its
 * loop is the cluster client on this runner's node, so a turn posted to any runner runs on its
 * session's runner, and moves with the session when that runner stops.
 *
 * Its lines are logs: each starts with its ISO time. With `--metrics-port`, the same HTTP server
 * answers `GET /healthz` (200 when healthy, 503 when not) with the runner's health as JSON.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Sharding from "effect/cluster/Sharding"
import * as SqlClient from "effect/sql/SqlClient"
import * as AgentLoopCluster from "../../cluster/AgentLoopCluster.ts"
import * as Health from "../../cluster/health.ts"
import * as Metrics from "../../layers/Metrics.ts"
import * as SessionStoreSql from "../../layers/SessionStoreSql.ts"
import { AgentLoop } from "../../services/AgentLoop.ts"
import { EventBus } from "../../services/EventBus.ts"
import { SessionStore } from "../../services/SessionStore.ts"
import * as Approval from "../permissions/approval.ts"
import type { ProviderKeys } from "../providers/providerKeys.ts"
import * as App from "../runtime/app.ts"
import * as CliLogger from "../runtime/logger.ts"
import * as Telemetry from "../runtime/telemetry.ts"
import type { AgentFlags } from "../settings/flags.ts"
import * as Settings from "../settings/settings.ts"
import { CliFailure, fail } from "../terminal/failure.ts"
import { Screen } from "../terminal/screen.ts"
import * as ClusterOptions from "./clusterOptions.ts"
import * as ServerToken from "./serverToken.ts"

/** The flags of `serve`. */
export type ServeFlags = AgentFlags & {
  readonly host: string
  readonly port: number
  readonly listenHost: Option.Option<string>
  readonly metricsPort: Option.Option<number>
  readonly metricsHost: string
  readonly shardLockRefresh: Option.Option<number>
  readonly shardLockExpiration: Option.Option<number>
  readonly retention: Option.Option<number>
  readonly inspect: Option.Option<number>
  readonly clusterSecret: Option.Option<Redacted.Redacted<string>>
  readonly clusterTlsCa: Option.Option<string>
  readonly clusterTlsCert: Option.Option<string>
  readonly clusterTlsKey: Option.Option<string>
  readonly dbPoolSize: number
  /** The API's token file (`serveApi.ts`). */
  readonly tokenFile: Option.Option<string>
  /** Origins browsers may call the API from. */
  readonly corsOrigin: ReadonlyArray<string>
  /** With `--database-url`: serve the API for the whole cluster on this port too. */
  readonly apiPort: Option.Option<number>
  readonly apiHost: string
}

/** How often a runner's API reads a session's journal for the clients following its events. */
const JOURNAL_POLL = Duration.millis(250)

/** A positive number of seconds, or a failure naming the flag. */
const seconds = (flag: string, value: Option.Option<number>) =>
  Option.isNone(value)
    ? Effect.succeed(undefined)
    : value.value > 0 && Number.isFinite(value.value)
    ? Effect.succeed(Duration.millis(Math.round(value.value * 1000)))
    : fail(`--${flag} must be a positive number of seconds, not ${value.value}`)

/** The runner's timings and retention from the flags; unset ones keep the library's defaults. */
const runnerTimings = (flags: ServeFlags) =>
  Effect.gen(function*() {
    const refresh = yield* seconds("shard-lock-refresh", flags.shardLockRefresh)
    const expiration = yield* seconds("shard-lock-expiration", flags.shardLockExpiration)
    const window = yield* seconds("retention", flags.retention)
    const effectiveRefresh = refresh ?? AgentLoopCluster.shardingDefaults.shardLockRefreshInterval!
    const effectiveExpiration = expiration ?? AgentLoopCluster.shardingDefaults.shardLockExpiration!
    if (Duration.isLessThan(Duration.fromInputUnsafe(effectiveExpiration), Duration.times(Duration.fromInputUnsafe(effectiveRefresh), 3))) {
      return yield* fail("--shard-lock-expiration must be at least three times --shard-lock-refresh: a renewal may take a whole refresh interval")
    }
    // a request is delivered again once its runner's lock expired: its commit record must still be there
    if (Duration.isLessThan(window ?? AgentLoopCluster.DEFAULT_RETENTION_WINDOW, Duration.fromInputUnsafe(effectiveExpiration))) {
      return yield* fail(
        `--retention must be at least --shard-lock-expiration (the retention is ${Duration.toSeconds(window ?? AgentLoopCluster.DEFAULT_RETENTION_WINDOW)} s): a request whose runner stopped is answered from its commit record after the lock expires`
      )
    }
    return {
      sharding: {
        ...(refresh === undefined ? {} : { shardLockRefreshInterval: refresh }),
        ...(expiration === undefined ? {} : { shardLockExpiration: expiration })
      },
      ...(window === undefined ? {} : { retention: { window } })
    }
  })


/** `host:port`, bracketing an IPv6 host. */
const hostPort = (host: string, port: number) => `${host.includes(":") ? `[${host}]` : host}:${port}`

/** Runs a runner until the process is stopped; its log lines carry their time. */
export const serve = (flags: ServeFlags) =>
  Effect.flatMap(Effect.service(Screen), (screen) => Effect.provide(runner(flags), CliLogger.layer(screen, { timestamps: true })))

const runner = (flags: ServeFlags) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    /** A line of the runner's log: its time, then the text. */
    const say = (text: string) => Effect.flatMap(Clock.currentTimeMillis, (now) => screen.line(`${new Date(now).toISOString()} ${text}`))
    const databaseUrl = Option.getOrUndefined(flags.databaseUrl)
    if (databaseUrl === undefined) {
      const api = yield* Effect.promise(() => import("./serveApi.ts"))
      return yield* api.serveApi(flags)
    }
    if (flags.dbPoolSize < 2) return yield* fail("--db-pool-size must be at least 2: the runner holds one connection for its shard locks")
    const security = yield* ClusterOptions.security(flags)
    const settings = yield* Settings.resolve({ ...flags, store: Option.orElse(flags.store, () => Option.some("postgres" as const)) })
    const url = yield* ClusterOptions.parse(databaseUrl)
    const timings = yield* runnerTimings(flags)
    // the API's token is resolved (and a bad one refused) before the runner joins
    const apiToken = Option.isSome(flags.apiPort) ? yield* ServerToken.resolve({ tokenFile: flags.tokenFile, dataDir: settings.dataDir }) : undefined
    yield* Settings.announce(settings)
    return yield* Effect.scoped(Effect.gen(function*() {
      const database = yield* Layer.build(ClusterOptions.database(url, { maxConnections: flags.dbPoolSize, applicationName: "agent-loop serve" }))
      // sessions in the cluster's database share its pool rather than open a second one
      const shared = settings.persist && settings.store.kind === "postgres" && settings.store.databaseUrl !== undefined &&
        Redacted.value(settings.store.databaseUrl) === Redacted.value(databaseUrl)
      const store = Layer.effect(
        SessionStore,
        SessionStoreSql.make().pipe(
          Effect.mapError((error) => new CliFailure({ message: `cannot open the session store (${ClusterOptions.describe(url)}): ${error.message}`, code: 1 }))
        )
      ).pipe(Layer.provide(Layer.succeedContext(database)))
      const metrics = Telemetry.exporting || Option.isSome(flags.metricsPort)
      const local = yield* Layer.build(App.layer(settings, shared ? { metrics, store } : { metrics }))
      const loop = Context.get(local, AgentLoop)
      // the approval policy is in place before the runner takes any session (the loop scrubs tool results itself)
      yield* Approval.register(settings, screen, undefined).pipe(Effect.provideService(AgentLoop, loop))
      if (Option.isSome(flags.inspect)) {
        // the cluster view reads the cluster's tables on the runner's pool
        const [inspect, view] = yield* Effect.promise(() => Promise.all([import("./inspect.ts"), import("../../inspector/clusterView.ts")]))
        yield* inspect.inspectBeside(flags.inspect, Effect.provideContext(view.clusterView, database)).pipe(Effect.provide(Layer.succeedContext(local)))
      }
      const listenHost = Option.getOrUndefined(flags.listenHost)
      const runner = yield* Layer.build(
        AgentLoopCluster.layerRunner({ host: flags.host, port: flags.port, security, ...(listenHost === undefined ? {} : { listenHost }), ...timings }).pipe(
          Layer.provide(Layer.succeedContext(local)),
          Layer.provide(Layer.succeedContext(database))
        )
      )
      const address = hostPort(flags.host, flags.port)
      if (Option.isSome(flags.metricsPort)) {
        const healthz = Health.report(address).pipe(
          Effect.provideService(Sharding.Sharding, Context.get(runner, Sharding.Sharding)),
          Effect.provideService(SqlClient.SqlClient, Context.get(database, SqlClient.SqlClient)),
          Effect.provideService(AgentLoop, loop),
          Effect.map((health) => ({ status: health.healthy ? 200 : 503, body: health }))
        )
        const endpoint = yield* Layer.build(
          Metrics.layerPrometheus({ port: flags.metricsPort.value, host: flags.metricsHost, routes: { "/healthz": healthz } }).pipe(
            Layer.provide(Layer.succeedContext(local))
          )
        ).pipe(Effect.catchTag("MetricsEndpointError", (error) => fail(error.message)))
        const { host, port } = Context.get(endpoint, Metrics.Endpoint)
        yield* say(`agent-loop: metrics at http://${hostPort(host, port)}/metrics, health at http://${hostPort(host, port)}/healthz`)
      }
      if (Option.isSome(flags.apiPort)) {
        // the API for the whole cluster: its turns and controls go to each session's runner (this one or another)
        const api = yield* Effect.promise(() => import("./serveApi.ts"))
        const client = yield* Layer.build(AgentLoopCluster.layerClientWith().pipe(
          Layer.provide(Layer.succeedContext(runner)),
          Layer.provide(Layer.succeedContext(database))
        ))
        const context = local.pipe(Context.add(AgentLoop, Context.get(client, AgentLoop)), Context.add(EventBus, Context.get(client, EventBus)))
        yield* api.mount(context, {
          token: apiToken!,
          corsOrigins: flags.corsOrigin,
          host: flags.apiHost,
          port: flags.apiPort.value,
          model: settings.model,
          what: "the cluster's sessions"
        }, {
          // approvals are decided where each turn runs, by the runners' policy; a session's events
          // are read from the journal its runner writes, so any runner serves any session's stream
          approvals: false,
          pollJournal: JOURNAL_POLL
        })
      }
      yield* say(
        `agent-loop: runner ${address} serving sessions (model ${settings.model}) for the cluster at ${ClusterOptions.describe(url)}` +
          `${security.secret === undefined ? "" : ", peers authenticated"}${security.tls?.cert === undefined ? "" : ", TLS"}`
      )
      return yield* Effect.never
    }))
  }) satisfies Effect.Effect<
    void,
    unknown,
    Screen | App.Platform | ProviderKeys
  >
