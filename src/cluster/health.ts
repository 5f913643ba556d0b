/**
 * A cluster's health, seen from both sides. A client asks whether any runner is up before it
 * stores a request no one would run (`awaitRunner`). A runner reports its own (`report`).
 *
 * The client's wait has a deadline on the Clock, and fails saying no runner is up, or at once
 * saying that a runner refused it (the secrets differ). The runner's report (its address, the
 * shards it holds, the turns in flight, whether its lock storage answers) is `serve`'s `/healthz`.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import * as ShardId from "effect/cluster/ShardId"
import * as Sharding from "effect/cluster/Sharding"
import * as SqlClient from "effect/sql/SqlClient"
import { AgentLoop } from "../services/AgentLoop.ts"
import { ClusterAuthError, type ClusterSecurity } from "./auth.ts"
import { connect } from "./transport.ts"

/** No runner of the cluster was up (registered, healthy and reachable) within the deadline. */
export class NoRunnerUp extends Schema.TaggedError<NoRunnerUp>()("NoRunnerUp", {
  message: Schema.String
}) {}

/** How often a waiting client looks again. */
const LOOK_AGAIN = Duration.millis(500)

/** A runner that answered the handshake: `host:port`, or undefined when none did (`tried` says why). */
const firstReachable = (security: ClusterSecurity, tried: { last?: string }) =>
  Effect.gen(function*() {
    const storage = yield* RunnerStorage.RunnerStorage
    // storage that cannot be read is like no runner: the client waits for either to come back
    const runners = yield* storage.getRunners.pipe(Effect.orElseSucceed(() => []))
    for (const [runner, healthy] of runners) {
      if (!healthy) continue
      const reached = yield* Effect.result(Effect.scoped(connect(runner.address, security)))
      if (reached._tag === "Success") return `${runner.address.host}:${runner.address.port}`
      // the runner is up and said no: waiting will not change that
      if (reached.failure instanceof ClusterAuthError) return yield* reached.failure
      tried.last = reached.failure.message
    }
    return undefined
  })

/**
 * Waits until a runner of the cluster is registered, healthy and passes the handshake; fails with
 * `NoRunnerUp` after `deadline`, or at once with `ClusterAuthError` when a runner refuses this
 * process. Succeeds with the runner's `host:port`.
 */
export const awaitRunner = (options: { readonly deadline: Duration.Input; readonly security?: ClusterSecurity }) => {
  const deadline = Duration.fromInputUnsafe(options.deadline)
  const tried: { last?: string } = {}
  const look: Effect.Effect<string, ClusterAuthError, RunnerStorage.RunnerStorage> = Effect.flatMap(
    firstReachable(options.security ?? {}, tried),
    (address) => address === undefined ? Effect.andThen(Effect.sleep(LOOK_AGAIN), Effect.suspend(() => look)) : Effect.succeed(address)
  )
  return look.pipe(
    Effect.timeoutOrElse({
      duration: deadline,
      orElse: () =>
        Effect.fail(
          new NoRunnerUp({
            message: tried.last === undefined
              ? `no runner of the cluster is up (waited ${Duration.format(deadline)}): start one with agent-loop serve`
              : `no runner of the cluster could be reached (waited ${Duration.format(deadline)}): ${tried.last}`
          })
        )
    })
  )
}

/** What `GET /healthz` shows of a runner. */
export interface RunnerHealth {
  /** Whether the runner can do its work: its lock storage answers, and it is not shutting down. */
  readonly healthy: boolean
  /** `host:port` other processes reach it at. */
  readonly runner: string
  /** The shards it holds now. */
  readonly shards: number
  /** The (root) turns running on it. */
  readonly sessionsInFlight: number
  /** Whether the cluster's storage (shard locks, messages) answered within the deadline. */
  readonly lockStorage: { readonly healthy: boolean; readonly error?: string }
}

/** The longest the storage check of `report` waits. */
const STORAGE_DEADLINE = Duration.seconds(2)

/** The runner's health now; `shardsPerGroup` as configured (Effect's default is 300). */
export const report = (runner: string, shardsPerGroup = 300): Effect.Effect<RunnerHealth, never, Sharding.Sharding | SqlClient.SqlClient | AgentLoop> =>
  Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    const sql = yield* SqlClient.SqlClient
    const loop = yield* AgentLoop
    const storage = yield* sql`SELECT 1`.pipe(
      Effect.timeoutOrElse({ duration: STORAGE_DEADLINE, orElse: () => Effect.fail({ message: `no answer within ${Duration.format(STORAGE_DEADLINE)}` }) }),
      Effect.match({
        onFailure: (error): RunnerHealth["lockStorage"] => ({ healthy: false, error: error.message }),
        onSuccess: (): RunnerHealth["lockStorage"] => ({ healthy: true })
      })
    )
    let shards = 0
    for (let id = 1; id <= shardsPerGroup; id++) if (sharding.hasShardId(ShardId.make("default", id))) shards++
    const inFlight = yield* loop.activeTurns
    const shuttingDown = yield* sharding.isShutdown
    return { healthy: storage.healthy && !shuttingDown, runner, shards, sessionsInFlight: inFlight.length, lockStorage: storage }
  })
