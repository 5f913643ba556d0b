/**
 * The Prometheus exposition of `Metrics.layerPrometheus`: metric names as Prometheus spells them,
 * and a `# HELP` line for every family (Effect's formatter writes one only for metrics that have
 * a description, and the cluster's gauges have none).
 */

/** Names the formatter is given: a duration in seconds ends in `_seconds`, as Prometheus names units. */
export const metricName = (name: string): string => name === "gen_ai.client.operation.duration" ? `${name}_seconds` : name

/** What the metrics of `effect/cluster` (which carry no description) measure. */
const clusterHelp: Readonly<Record<string, string>> = {
  effect_cluster_entities: "Entities active on this runner, by entity type",
  effect_cluster_entity_mailbox_size: "Requests admitted to an entity's mailbox, queued or in flight",
  effect_cluster_entity_mailbox_size_max: "The largest entity mailbox on this runner, by entity type",
  effect_cluster_singletons: "Singletons running on this runner",
  effect_cluster_runners: "Runners registered in the cluster",
  effect_cluster_runners_healthy: "Runners of the cluster that are healthy",
  effect_cluster_shards: "Shards this runner holds",
  effect_cluster_shards_releasing: "Shards this runner is releasing",
  effect_cluster_shard_release: "How long releasing a shard took, in milliseconds"
}

/**
 * `text` (the Prometheus text format) with a `# HELP` line before every `# TYPE` line that has
 * none: the known description, else the metric's name in words.
 */
export const withHelp = (text: string): string => {
  const lines = text.split("\n")
  const out: Array<string> = []
  for (const line of lines) {
    const type = /^# TYPE (\S+) /.exec(line)
    if (type !== null && !(out.at(-1) ?? "").startsWith(`# HELP ${type[1]} `)) {
      const name = type[1]!
      out.push(`# HELP ${name} ${clusterHelp[name] ?? name.replace(/_/g, " ")}`)
    }
    out.push(line)
  }
  return out.join("\n")
}
