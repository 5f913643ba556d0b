/**
 * Effect Cluster on Node: runners talk over TCP sockets (as `NodeClusterSocket`), and the cluster's
 * runner registry, shard locks and persisted messages live in SQL (`SqlRunnerStorage`,
 * `SqlMessageStorage`) on the `SqlClient` the application provides (Postgres in the CLI).
 *
 * The sharding configuration is built here rather than read from the environment, so that no
 * stray `HOST` or `PORT` variable changes where a runner listens.
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import { Duration, Effect, Layer, Option } from "effect"
import {
  RunnerAddress,
  RunnerHealth,
  Runners,
  ShardingConfig,
  SocketRunner,
  SqlMessageStorage,
  SqlRunnerStorage
} from "effect/cluster"
import type { MessageStorage, Sharding } from "effect/cluster"
import { RpcClient, RpcSerialization } from "effect/rpc"
import { Socket, type SocketServer } from "effect/socket"
import type { SqlClient } from "effect/sql"

/** Cluster timings and sizes: `ShardingConfig` fields; every process of one cluster must agree on `shardsPerGroup`. */
export type ShardingOptions = Partial<ShardingConfig.ShardingConfig["Service"]>

/**
 * Defaults for a cluster of chat sessions: a stopped runner is noticed within about five seconds
 * (health checks) and its sessions move on; a frozen runner's shard locks expire after twenty
 * seconds; a lock renewal may take up to five seconds (a loaded machine or database) before the
 * runner gives its shards up (its turns go on, fenced: `fence.ts`); a runner that vanished without a trace is dropped
 * once its heartbeat is ten seconds old; requests a runner has not been told about are found in
 * storage within a second. Effect's own defaults (a minute, 35 s, 10 s) suit long jobs. When a
 * session moves because a runner joined, a turn running on the old runner gets a minute to end
 * there (Effect's default is 15 s, shorter than many model turns); one still running then is cut
 * short and ends `aborted`.
 */
export const shardingDefaults: ShardingOptions = {
  runnerHealthCheckInterval: Duration.seconds(5),
  shardLockRefreshInterval: Duration.seconds(5),
  shardLockExpiration: Duration.seconds(20),
  refreshAssignmentsInterval: Duration.seconds(2),
  entityMessagePollInterval: Duration.seconds(1),
  entityTerminationTimeout: Duration.minutes(1)
}

/** Where a runner is reached and listens. */
export interface RunnerOptions {
  /** The host other processes reach this runner at. */
  readonly host: string
  /** The TCP port of the runner. */
  readonly port: number
  /** The address to listen on when it differs from `host` (e.g. `0.0.0.0` in a container). */
  readonly listenHost?: string
  readonly sharding?: ShardingOptions
}

const serialization = RpcSerialization.layerSchemaBinary()

/*
 * The sockets are those of `NodeClusterSocket`, with Nagle's algorithm off: a turn is a handful of
 * small messages each way, and holding each back until the previous one is acknowledged (40 ms
 * delayed acknowledgements) made a turn cost a quarter of a second of waiting.
 */

/** Connections to runners (same timeouts as `NodeClusterSocket.layerClientProtocol`). */
const clientProtocol = Layer.effect(Runners.RpcClientProtocol)(Effect.gen(function*() {
  const rpcSerialization = yield* RpcSerialization.RpcSerialization
  return {
    codecFor: rpcSerialization.codecFor,
    make: Effect.fnUntraced(function*(address: RunnerAddress.RunnerAddress) {
      const socket = yield* NodeSocket.makeNet({ openTimeout: 1000, timeout: 5500, host: address.host, port: address.port, noDelay: true })
      return yield* RpcClient.makeProtocolSocket().pipe(
        Effect.provideService(Socket.Socket, socket),
        Effect.provideService(RpcSerialization.RpcSerialization, rpcSerialization)
      )
    }, Effect.orDie)
  }
}))

/** The runner's server, on `runnerListenAddress`, else `runnerAddress`. */
const socketServer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* ShardingConfig.ShardingConfig
  const address = Option.getOrThrow(Option.orElse(config.runnerListenAddress, () => config.runnerAddress))
  return NodeSocketServer.layer({ host: address.host, port: address.port, noDelay: true })
}))

/** Message and runner storage on the application's `SqlClient` (tables `cluster_*`, created on first use). */
const storage = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  layer.pipe(
    Layer.provideMerge(SqlMessageStorage.layer.pipe(Layer.provide(NodeCrypto.layerDigest))),
    Layer.provide(Layer.orDie(SqlRunnerStorage.layer))
  )

/** A runner: it takes a share of the shards and runs the entities registered on it. */
export const layerRunner = (
  options: RunnerOptions
): Layer.Layer<Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage, SocketServer.SocketServerError, SqlClient.SqlClient> => {
  const config = ShardingConfig.layer({
    ...shardingDefaults,
    ...options.sharding,
    runnerAddress: Option.some(RunnerAddress.make(options.host, options.port)),
    runnerListenAddress: options.listenHost === undefined
      ? Option.none()
      : Option.some(RunnerAddress.make(options.listenHost, options.port))
  })
  const health = RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(clientProtocol))
  return SocketRunner.layer.pipe(
    Layer.provide([socketServer, clientProtocol]),
    Layer.provide(health),
    storage,
    Layer.provide(config),
    Layer.provide(serialization)
  )
}

/** A client: it sends to the runners and hosts no shards. It finds them through the storage. */
export const layerClient = (
  options: { readonly sharding?: ShardingOptions } = {}
): Layer.Layer<Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage, never, SqlClient.SqlClient> =>
  SocketRunner.layerClientOnly.pipe(
    Layer.provide(clientProtocol),
    storage,
    Layer.provide(ShardingConfig.layer({ ...shardingDefaults, ...options.sharding, runnerAddress: Option.none() })),
    Layer.provide(serialization)
  )
