/**
 * `agent-loop serve`: a cluster runner. It runs the sessions the cluster gives it on a loop built
 * from the usual flags and settings (provider, model, tools, hooks, store), and serves them to
 * clients (`agent-loop run --cluster`, or `AgentLoopCluster.layerClient`) until SIGTERM or Ctrl-C.
 *
 * A runner has no terminal to ask approval on: calls that need it are denied unless `--yes` or
 * `--approval approve` says otherwise. The runners of one cluster must share the session store,
 * since a session moves to another runner when its runner stops: so `serve` keeps sessions in the
 * cluster's own database (`--store postgres` on `--database-url`) unless `--store` says otherwise.
 */
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import * as AgentLoopCluster from "../cluster/AgentLoopCluster.ts"
import * as Metrics from "../layers/Metrics.ts"
import { AgentLoop } from "../services/AgentLoop.ts"
import * as App from "./app.ts"
import * as ClusterOptions from "./clusterOptions.ts"
import { fail } from "./failure.ts"
import type { AgentFlags } from "./flags.ts"
import type { ProviderKeys } from "./providerKeys.ts"
import { Screen } from "./screen.ts"
import * as Telemetry from "./telemetry.ts"
import { registerApproval } from "./session.ts"
import * as Settings from "./settings.ts"

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
}

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
    return {
      sharding: {
        ...(refresh === undefined ? {} : { shardLockRefreshInterval: refresh }),
        ...(expiration === undefined ? {} : { shardLockExpiration: expiration })
      },
      ...(window === undefined ? {} : { retention: { window } })
    }
  })

/** Runs a runner until the process is stopped. */
export const serve = (flags: ServeFlags) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    if (Option.isNone(flags.databaseUrl)) {
      return yield* fail("serve needs the cluster's database: --database-url URL (or AGENT_LOOP_DATABASE_URL)")
    }
    const settings = yield* Settings.resolve({ ...flags, store: Option.orElse(flags.store, () => Option.some("postgres" as const)) })
    const url = yield* ClusterOptions.parse(Redacted.value(flags.databaseUrl.value))
    const timings = yield* runnerTimings(flags)
    yield* Settings.announce(settings)
    return yield* Effect.scoped(Effect.gen(function*() {
      const local = yield* Layer.build(App.layer(settings, { metrics: Telemetry.exporting || Option.isSome(flags.metricsPort) }))
      const loop = Context.get(local, AgentLoop)
      // the approval policy is in place before the runner takes any session (the loop scrubs tool results itself)
      yield* registerApproval(settings, screen, undefined).pipe(Effect.provideService(AgentLoop, loop))
      if (Option.isSome(flags.metricsPort)) {
        const endpoint = yield* Layer.build(
          Metrics.layerPrometheus({ port: flags.metricsPort.value, host: flags.metricsHost }).pipe(
            Layer.provide(Layer.succeedContext(local))
          )
        ).pipe(Effect.catchTag("MetricsEndpointError", (error) => fail(error.message)))
        const { host, port } = Context.get(endpoint, Metrics.Endpoint)
        yield* screen.line(`agent-loop: metrics at http://${host.includes(":") ? `[${host}]` : host}:${port}/metrics`)
      }
      if (Option.isSome(flags.inspect)) {
        // the cluster view reads the cluster's tables over a connection of its own
        const db = yield* Layer.build(ClusterOptions.database(url))
        const [inspect, view] = yield* Effect.promise(() => Promise.all([import("./inspect.ts"), import("../inspector/clusterView.ts")]))
        yield* inspect.inspectBeside(flags.inspect, Effect.provideContext(view.clusterView, db)).pipe(Effect.provide(Layer.succeedContext(local)))
      }
      const listenHost = Option.getOrUndefined(flags.listenHost)
      yield* Layer.build(
        AgentLoopCluster.layerRunner({ host: flags.host, port: flags.port, ...(listenHost === undefined ? {} : { listenHost }), ...timings }).pipe(
          Layer.provide(Layer.succeedContext(local)),
          Layer.provide(ClusterOptions.database(url))
        )
      )
      yield* screen.line(
        `agent-loop: runner ${flags.host}:${flags.port} serving sessions (model ${settings.model}) for the cluster at ${ClusterOptions.describe(url)}`
      )
      return yield* Effect.never
    }))
  }) satisfies Effect.Effect<void, unknown, Screen | App.Platform | ProviderKeys>
