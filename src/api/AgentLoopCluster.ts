/**
 * The `AgentLoopCluster` namespace of the public API (`index.ts`): the names of
 * `cluster/AgentLoopCluster.ts` users need, listed by name; the texts of its lost and refused turns
 * stay internal.
 */
export {
  AgentSession,
  type ClientOptions,
  ClusterAuthError,
  ClusterSecret,
  type ClusterSecurity,
  type ClusterTls,
  ClusterUnavailable,
  DEFAULT_RETENTION_WINDOW,
  HookNotSupportedOnClient,
  layerClient,
  layerClientWith,
  layerEntity,
  layerRunner,
  type RetentionOptions,
  type RunnerOptions,
  shardingDefaults,
  type ShardingOptions
} from "../cluster/AgentLoopCluster.ts"
