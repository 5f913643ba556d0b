/**
 * The inspector's cluster view, read from the cluster's own tables (Effect Cluster's SQL storage,
 * default prefix `cluster`): every runner with its health and last heartbeat, and the sessions
 * with requests not yet processed, with the runner that holds their shard.
 */
import * as Effect from "effect/Effect"
import * as SqlClient from "effect/sql/SqlClient"
import { AgentSession } from "../cluster/protocol.ts"
import type { ClusterView } from "./Inspector.ts"

const time = (value: unknown): number | undefined => {
  const ms = value instanceof Date ? value.getTime() : typeof value === "string" || typeof value === "number" ? new Date(value).getTime() : NaN
  return Number.isFinite(ms) ? ms : undefined
}

/** Runners and sessions in flight, as the cluster's database has them now. */
export const clusterView: Effect.Effect<ClusterView, unknown, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const runners = yield* sql<{ address: string; healthy: unknown; last_heartbeat: unknown }>`
    SELECT address, healthy, last_heartbeat FROM cluster_runners ORDER BY address`
  const sessions = yield* sql<{ entity_id: string; address: string | null }>`
    SELECT DISTINCT m.entity_id, l.address
    FROM cluster_messages m LEFT JOIN cluster_locks l ON l.shard_id = m.shard_id
    WHERE m.processed = FALSE AND m.entity_type = ${AgentSession.type}
    ORDER BY m.entity_id`
  return {
    runners: runners.map((r) => {
      const at = time(r.last_heartbeat)
      return { address: r.address, healthy: r.healthy === true || r.healthy === 1, ...(at === undefined ? {} : { lastHeartbeat: at }) }
    }),
    sessions: sessions.map((s) => (s.address === null ? { sessionKey: s.entity_id } : { sessionKey: s.entity_id, runner: s.address }))
  }
})
