/**
 * The runner registry as a client reads it. A client hosts no shards, so it only needs the list of
 * runners; Effect's `SqlRunnerStorage` also reserves a connection for shard locks as soon as it is
 * built, which on a client's one-connection pool left every other query waiting until the database
 * closed that idle connection (20 s). This reads `cluster_runners` on the shared pool instead, with
 * the query Effect's storage uses, and refuses the operations only a runner performs.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ClusterError from "effect/cluster/ClusterError"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SqlClient from "effect/sql/SqlClient"

/** Effect Cluster's runner table (its default prefix). */
const RUNNERS = "cluster_runners"

const runnerOnly = (operation: string) => Effect.die(new Error(`a cluster client hosts no shards: it does not ${operation}`))

/** `RunnerStorage` for a process that hosts no shards, on the application's `SqlClient`. */
export const layer: Layer.Layer<RunnerStorage.RunnerStorage, never, SqlClient.SqlClient | ShardingConfig.ShardingConfig> = Layer.effect(
  RunnerStorage.RunnerStorage
)(Effect.gen(function*() {
  const config = yield* ShardingConfig.ShardingConfig
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const expires = sql.literal(String(Math.ceil(Duration.toSeconds(config.shardLockExpiration))))
  // a runner whose heartbeat is older than a lock's expiry is gone, as the runners themselves judge
  const alive = sql.onDialectOrElse({
    pg: () => sql`NOW() - INTERVAL '${expires} seconds'`,
    mysql: () => sql`DATE_SUB(NOW(), INTERVAL ${expires} SECOND)`,
    mssql: () => sql`DATEADD(SECOND, -${expires}, GETDATE())`,
    orElse: () => sql`datetime('now', '-${expires} seconds')`
  })
  return RunnerStorage.makeEncoded({
    getRunners: sql`SELECT runner, healthy FROM ${sql(RUNNERS)} WHERE last_heartbeat > ${alive}`.values.pipe(
      Effect.map((rows) => rows.map(([runner, healthy]) => [String(runner), Boolean(healthy)] as const)),
      ClusterError.PersistenceError.refail
    ),
    register: () => runnerOnly("register"),
    unregister: () => runnerOnly("unregister"),
    setRunnerHealth: () => runnerOnly("report runner health"),
    acquire: () => runnerOnly("acquire shards"),
    refresh: () => runnerOnly("refresh shard locks"),
    release: () => runnerOnly("release shards"),
    releaseAll: () => runnerOnly("release shards")
  })
}))
