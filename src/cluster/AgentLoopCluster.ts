/**
 * `AgentLoopCluster`: the loop across machines on Effect Cluster.
 *
 * Each session key is an entity (`AgentSession`) that lives on one runner at a time; its RPCs are
 * the `AgentLoop` operations that target one session, handled by the runner's own `AgentLoop`. So
 * per-session FIFO, steering and interrupts keep their single-process meaning cluster-wide. Runners
 * share the cluster's storage (runner registry, shard locks, persisted requests) on SQL, and the
 * sessions' history through the `SessionStore` the application gives them (a session has one runner
 * at a time, so any store the runners share will do).
 *
 * When a runner stops, its shards move to the others: requests it had not started run on the
 * session's next runner, and the next turn there sees the whole history. A turn it was running
 * resumes there from its last checkpoint (`resume.ts`); one with no checkpoint is reported as the
 * session log tells it: completed when its commit is there, else `aborted` with nothing saved. The
 * runner taking a session takes its ownership epoch, so with a fencing store a runner that was
 * paused and wakes up cannot write (`fence.ts`).
 *
 * With `security.secret` on runners and clients alike, runner connections start with a
 * challenge–response handshake and persisted requests are signed (`auth.ts`): a runner refuses
 * peers and requests that cannot prove the secret. `security.tls` puts the runner port under TLS.
 *
 * @example
 * ```ts
 * import * as PgClient from "@effect/sql-pg/PgClient"
 * import { Layer, Redacted } from "effect"
 * import { AgentLoopCluster, AgentLoopLive, OpenAiCompatible, SessionStoreSql, ToolRegistryLive } from "effect-agent-loop"
 *
 * const sql = PgClient.layer({ url: Redacted.make("postgres://agent@db/agents") })
 *
 * // a runner: the loop it runs sessions on, registered as the session entity; sessions in the same database
 * const runner = AgentLoopCluster.layerRunner({ host: "10.0.0.5", port: 34431 }).pipe(
 *   Layer.provide(AgentLoopLive.layer({ model: "gpt-4.1-mini" })),
 *   Layer.provide([OpenAiCompatible.layer(), ToolRegistryLive.layer([])]),
 *   Layer.provideMerge(SessionStoreSql.layer()),
 *   Layer.provide(sql)
 * )
 *
 * // anywhere else: the same AgentLoop interface, backed by the cluster
 * const client = AgentLoopCluster.layerClient().pipe(Layer.provide(sql))
 * ```
 */
import * as Layer from "effect/Layer"
import type * as MessageStorage from "effect/cluster/MessageStorage"
import type * as Runners from "effect/cluster/Runners"
import type * as Sharding from "effect/cluster/Sharding"
import type * as SocketServer from "effect/socket/SocketServer"
import type * as SqlClient from "effect/sql/SqlClient"
import type { AgentLoop } from "../services/AgentLoop.ts"
import type { EventBus } from "../services/EventBus.ts"
import type { LoopConfig } from "../services/LoopConfig.ts"
import type { SessionStore } from "../services/SessionStore.ts"
import type { ClusterSecurity } from "./auth.ts"
import * as Client from "./client.ts"
import * as SessionEntity from "./entity.ts"
import * as Retention from "./retention.ts"
import * as Transport from "./transport.ts"

export { ClusterAuthError, ClusterSecret, type ClusterSecurity, type ClusterTls } from "./auth.ts"
export { ClusterUnavailable, HookNotSupportedOnClient, type ClientOptions } from "./client.ts"
export { LOST_TURN_ERROR } from "./entity.ts"
export { OUTPUT_UNSUPPORTED } from "./client.ts"
export { AgentSession } from "./protocol.ts"
export { shardingDefaults, type ShardingOptions } from "./transport.ts"
export { DEFAULT_WINDOW as DEFAULT_RETENTION_WINDOW, type RetentionOptions } from "./retention.ts"

/** Where a runner is reached and listens, its cluster timings, and how long answered requests are kept. */
export interface RunnerOptions extends Transport.RunnerOptions {
  readonly retention?: Retention.RetentionOptions
}

/**
 * The session entity over the `AgentLoop` of this process, on an existing `Sharding`; the
 * `SqlClient` is the cluster's database, where requests are claimed before their turns start.
 */
export const layerEntity: Layer.Layer<never, never, AgentLoop | EventBus | LoopConfig | SessionStore | Sharding.Sharding | SqlClient.SqlClient> =
  SessionEntity.layer

/**
 * A runner process: a socket runner (TCP, as `NodeClusterSocket`) with SQL storage on the given
 * `SqlClient`, running the session entity on the `AgentLoop` the application provides. The
 * `SessionStore` is the one that loop uses: with a store that fences (`SessionStoreSql` in the
 * cluster's database) a session has one writer, and a client whose runner stopped learns its
 * turn's outcome from the log. Answered requests are swept after `retention.window`.
 */
export const layerRunner = (
  options: RunnerOptions
): Layer.Layer<
  Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage,
  SocketServer.SocketServerError,
  AgentLoop | EventBus | LoopConfig | SessionStore | SqlClient.SqlClient
> =>
  Layer.merge(SessionEntity.layer, Retention.layer(options.retention)).pipe(Layer.provideMerge(Transport.layerRunner(options)))

/**
 * `AgentLoop` (and its `EventBus`) over the cluster, on an existing `Sharding` (a runner's, or a
 * client-only node's) and the cluster's `SqlClient` (replies may leave a turn's messages in the
 * session log there).
 */
export const layerClientWith: (options?: Client.ClientOptions) => Layer.Layer<AgentLoop | EventBus, never, Sharding.Sharding | SqlClient.SqlClient> = Client.layer

/** `AgentLoop` over the cluster, from a process that hosts no sessions: it finds the runners through the storage. */
export const layerClient = (
  options: Client.ClientOptions & { readonly sharding?: Transport.ShardingOptions; readonly security?: ClusterSecurity } = {}
): Layer.Layer<AgentLoop | EventBus, never, SqlClient.SqlClient> =>
  Client.layer(options).pipe(Layer.provide(Transport.layerClient({
    ...(options.sharding === undefined ? {} : { sharding: options.sharding }),
    ...(options.security === undefined ? {} : { security: options.security })
  })))
