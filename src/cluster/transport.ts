/**
 * Effect Cluster on Node: runners talk over TCP sockets (as `NodeClusterSocket`), and the cluster's
 * runner registry, shard locks and persisted messages live in SQL (`SqlRunnerStorage`,
 * `SqlMessageStorage`) on the `SqlClient` the application provides (Postgres in the CLI).
 *
 * Every runner connection starts with the cluster handshake (`auth.ts`) before any RPC: with a
 * shared secret, a runner serves only peers that prove it; with a certificate and key, it listens
 * with TLS, and peers given TLS options connect with it.
 *
 * The sharding configuration is built here rather than read from the environment, so that no
 * stray `HOST` or `PORT` variable changes where a runner listens.
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import * as Net from "node:net"
import * as Tls from "node:tls"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as RunnerHealth from "effect/cluster/RunnerHealth"
import * as Runners from "effect/cluster/Runners"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SocketRunner from "effect/cluster/SocketRunner"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "effect/cluster/SqlRunnerStorage"
import type * as MessageStorage from "effect/cluster/MessageStorage"
import type * as Sharding from "effect/cluster/Sharding"
import type * as RunnerStorage from "effect/cluster/RunnerStorage"
import * as RpcClient from "effect/rpc/RpcClient"
import * as RpcSerialization from "effect/rpc/RpcSerialization"
import * as Socket from "effect/socket/Socket"
import * as SocketServer from "effect/socket/SocketServer"
import type * as SqlClient from "effect/sql/SqlClient"
import * as ClientStorage from "./clientStorage.ts"
import { acceptPeer, ClusterAuthError, ClusterSecret, type ClusterSecurity, greetRunner, HANDSHAKE_TIMEOUT } from "./auth.ts"

/** Cluster timings and sizes: `ShardingConfig` fields; every process of one cluster must agree on `shardsPerGroup`. */
export type ShardingOptions = Partial<ShardingConfig.ShardingConfig["Service"]>

/**
 * Defaults for a cluster of chat sessions: a stopped runner is noticed within about five seconds
 * (health checks) and its sessions move on; a frozen runner's shard locks expire after twenty
 * seconds; a lock renewal may take up to five seconds (a loaded machine or database) before the
 * runner gives its shards up (its turns go on, fenced: `fence.ts`); a runner that vanished
 * without a trace is dropped once its heartbeat is ten seconds old; requests a runner has not been told about are found in
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
  /** The cluster's secret and TLS (none by default: for a private network only). */
  readonly security?: ClusterSecurity
}

const serialization = RpcSerialization.layerSchemaBinary()

/** A runner's TCP port could not be reached (refused, timed out, failed TLS). */
export class RunnerUnreachable extends Data.TaggedError("RunnerUnreachable")<{ readonly message: string }> {}

/** `host:port`, bracketing an IPv6 host. */
const label = (address: { readonly host: string; readonly port: number }) =>
  `${address.host.includes(":") ? `[${address.host}]` : address.host}:${address.port}`

/*
 * Connections are those of `NodeClusterSocket`, with Nagle's algorithm off: a turn is a handful of
 * small messages each way, and holding each back until the previous one is acknowledged (40 ms
 * delayed acknowledgements) made a turn cost a quarter of a second of waiting.
 */

/**
 * Connects to a runner (TLS when `security.tls` is given) and goes through the handshake; the
 * connection closes with the scope.
 */
const open = (
  address: { readonly host: string; readonly port: number },
  security: ClusterSecurity
): Effect.Effect<Net.Socket, ClusterAuthError | RunnerUnreachable, Scope.Scope> =>
  Effect.gen(function*() {
    const where = label(address)
    const tls = security.tls
    const conn = yield* Effect.acquireRelease(
      Effect.callback<Net.Socket, RunnerUnreachable>((resume) => {
        const socket = tls === undefined
          ? Net.createConnection({ host: address.host, port: address.port, noDelay: true })
          : Tls.connect({
            host: address.host,
            port: address.port,
            ...(tls.ca === undefined ? {} : { ca: tls.ca }),
            ...(Net.isIP(address.host) === 0 ? { servername: address.host } : {})
          })
        socket.setNoDelay(true)
        socket.once(tls === undefined ? "connect" : "secureConnect", () => resume(Effect.succeed(socket)))
        socket.once("error", (error) => resume(Effect.fail(new RunnerUnreachable({ message: `cannot reach the runner at ${where}: ${error.message}` }))))
        return Effect.sync(() => socket.destroy())
      }).pipe(
        Effect.timeoutOrElse({
          duration: tls === undefined ? Duration.seconds(1) : HANDSHAKE_TIMEOUT,
          orElse: () => Effect.fail(new RunnerUnreachable({ message: `the runner at ${where} did not accept a connection in time` }))
        })
      ),
      (socket) => Effect.sync(() => socket.destroy())
    )
    yield* greetRunner(conn, security.secret, where)
    return conn
  })

/** Whether a runner can be reached and passes the handshake, on a connection that closes with the scope. */
export const connect = (
  address: { readonly host: string; readonly port: number },
  security: ClusterSecurity = {}
): Effect.Effect<void, ClusterAuthError | RunnerUnreachable, Scope.Scope> => Effect.asVoid(open(address, security))

/** Connections to runners (timeouts as `NodeClusterSocket.layerClientProtocol`), through the handshake. */
const clientProtocol = (security: ClusterSecurity) =>
  Layer.effect(Runners.RpcClientProtocol)(Effect.gen(function*() {
    const rpcSerialization = yield* RpcSerialization.RpcSerialization
    return {
      codecFor: rpcSerialization.codecFor,
      make: Effect.fnUntraced(function*(address: RunnerAddress.RunnerAddress) {
        const opened = open(address, security).pipe(
          Effect.tapError((error) => error._tag === "ClusterAuthError" ? Effect.logWarning(`cluster: ${error.address}: ${error.message}`) : Effect.void),
          Effect.mapError((cause) => new Socket.SocketError({ reason: new Socket.SocketOpenError({ kind: "Unknown", cause }) }))
        )
        const socket = yield* NodeSocket.fromDuplex(opened)
        return yield* RpcClient.makeProtocolSocket().pipe(
          Effect.provideService(Socket.Socket, socket),
          Effect.provideService(RpcSerialization.RpcSerialization, rpcSerialization)
        )
      }, Effect.orDie)
    }
  }))

/** A server whose connections reach the RPC server only once the peer passed the handshake. */
const guarded = (server: SocketServer.SocketServer["Service"], secret: ClusterSecurity["secret"]): SocketServer.SocketServer["Service"] =>
  SocketServer.SocketServer.of({
    address: server.address,
    run: (handler) =>
      server.run((socket) =>
        Effect.gen(function*() {
          const conn = yield* Effect.serviceOption(NodeSocket.NetSocket)
          if (conn._tag === "None") return yield* Effect.die(new Error("the runner's server gave no Node socket to authenticate"))
          const accepted = yield* Effect.result(acceptPeer(conn.value, secret))
          if (accepted._tag === "Failure") {
            // after the refusal is written: the peer reads why before the connection ends
            conn.value.destroySoon()
            return yield* Effect.logWarning(`cluster: refused a connection from ${accepted.failure.address}: ${accepted.failure.message}`)
          }
          return yield* handler(socket)
        })
      )
  })

/** The runner's server, on `runnerListenAddress`, else `runnerAddress`; TLS with a certificate and key. */
const socketServer = (security: ClusterSecurity) =>
  Layer.unwrap(Effect.gen(function*() {
    const config = yield* ShardingConfig.ShardingConfig
    const address = Option.getOrThrow(Option.orElse(config.runnerListenAddress, () => config.runnerAddress))
    const tls = security.tls
    const listening = tls?.cert !== undefined && tls.key !== undefined
      ? NodeSocketServer.layerTls({ host: address.host, port: address.port, noDelay: true, cert: tls.cert, key: tls.key })
      : NodeSocketServer.layer({ host: address.host, port: address.port, noDelay: true })
    return Layer.effect(SocketServer.SocketServer)(Effect.map(Effect.service(SocketServer.SocketServer), (server) => guarded(server, security.secret))).pipe(
      Layer.provide(listening)
    )
  }))

/** Message and runner storage on the application's `SqlClient` (tables `cluster_*`, created on first use). */
const storage = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  layer.pipe(
    Layer.provideMerge(SqlMessageStorage.layer.pipe(Layer.provide(NodeCrypto.layerDigest))),
    Layer.provideMerge(Layer.orDie(SqlRunnerStorage.layer))
  )

/** A client's storage: the same messages, and the runner registry read without a reserved connection (`clientStorage.ts`). */
const clientStorage = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  layer.pipe(
    Layer.provideMerge(SqlMessageStorage.layer.pipe(Layer.provide(NodeCrypto.layerDigest))),
    Layer.provideMerge(ClientStorage.layer)
  )

/**
 * The secret, when there is one, for the session entity (which checks requests) and the client
 * (which signs them); both look for it with `Effect.serviceOption`, hence not in the layers' types.
 */
const secretLayer = (security: ClusterSecurity): Layer.Layer<never> =>
  security.secret === undefined ? Layer.empty : Layer.succeed(ClusterSecret, security.secret) as Layer.Layer<never>

/** What a runner or client node provides. */
export type Node = Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage | RunnerStorage.RunnerStorage

/** A runner: it takes a share of the shards and runs the entities registered on it. */
export const layerRunner = (
  options: RunnerOptions
): Layer.Layer<Node, SocketServer.SocketServerError, SqlClient.SqlClient> => {
  const security = options.security ?? {}
  const config = ShardingConfig.layer({
    ...shardingDefaults,
    ...options.sharding,
    runnerAddress: Option.some(RunnerAddress.make(options.host, options.port)),
    runnerListenAddress: options.listenHost === undefined
      ? Option.none()
      : Option.some(RunnerAddress.make(options.listenHost, options.port))
  })
  const outgoing = clientProtocol(security)
  const health = RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(outgoing))
  return SocketRunner.layer.pipe(
    Layer.provide([socketServer(security), outgoing]),
    Layer.provide(health),
    storage,
    Layer.provide(config),
    Layer.provide(serialization),
    Layer.merge(secretLayer(security))
  )
}

/** A client: it sends to the runners and hosts no shards. It finds them through the storage. */
export const layerClient = (
  options: { readonly sharding?: ShardingOptions; readonly security?: ClusterSecurity } = {}
): Layer.Layer<Node, never, SqlClient.SqlClient> =>
  SocketRunner.layerClientOnly.pipe(
    Layer.provide(clientProtocol(options.security ?? {})),
    clientStorage,
    Layer.provide(ShardingConfig.layer({ ...shardingDefaults, ...options.sharding, runnerAddress: Option.none() })),
    Layer.provide(serialization),
    Layer.merge(secretLayer(options.security ?? {}))
  )
