/**
 * A cluster runner process for tests and benchmarks: the session entity on a loop with a scripted
 * provider, the sessions in JSON Lines in a shared directory, the cluster's storage on Postgres.
 *
 * Argument: a JSON `RunnerSpec`. It prints `ready` once the runner has joined, then
 * `turn SESSION TURN-ID` as each turn starts here (so a test knows which runner has a session), and
 * exits when its stdin closes, so a runner never outlives the process that started it.
 *
 * The scripted model answers `seen N: a | b | c`, where N is the number of messages it was sent and
 * a, b, c the user messages among them, so a test can read what history a turn saw. An input that
 * starts with `hang` makes the model never finish (a turn to stop a runner in).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Context, Duration, Effect, Layer, Redacted, Stream } from "effect"
import * as AgentLoopCluster from "../../src/cluster/AgentLoopCluster.ts"
import * as Scripted from "../../src/layers/providers/Scripted.ts"
import * as SessionStoreJsonl from "../../src/layers/SessionStoreJsonl.ts"
import * as AgentLoopLive from "../../src/programs/AgentLoopLive.ts"
import { EventBus } from "../../src/services/EventBus.ts"
import * as ToolRegistryLive from "../../src/layers/ToolRegistry.ts"
import * as Message from "../../src/domain/Message.ts"

/** How a runner process is started. */
export interface RunnerSpec {
  readonly databaseUrl: string
  readonly port: number
  readonly sessionsDir: string
  /** Cluster timings, in milliseconds. */
  readonly timingsMs?: Readonly<Record<string, number>>
}

const spec: RunnerSpec = JSON.parse(process.argv[2] ?? "{}")

const model = Scripted.layer((request) => {
  const users = request.messages.filter((m) => m.role === "user").map((m) => Message.textOf(m.content))
  const last = users.at(-1) ?? ""
  if (last.startsWith("hang")) return { content: "working", stall: true }
  // the model options the turn's request carried, as the client set them
  if (last.startsWith("options")) return { content: JSON.stringify({ temperature: request.temperature, reasoning: request.reasoning }) }
  // a slow first answer: time for steering to arrive while the turn runs
  if (last.startsWith("slow") && request.messages.at(-1)?.role === "user") return { content: "thinking", delay: "1 second" }
  return { content: `seen ${request.messages.length}: ${users.join(" | ")}` }
})

const sharding = Object.fromEntries(Object.entries(spec.timingsMs ?? {}).map(([k, ms]) => [k, Duration.millis(ms)]))

const local = AgentLoopLive.layer({ model: "scripted", maxParallelTurns: 64, acceptsImages: { vision: true } }).pipe(
  Layer.provide([model, ToolRegistryLive.layer([]), SessionStoreJsonl.layer(spec.sessionsDir)])
)

const runner = AgentLoopCluster.layerRunner({ host: "127.0.0.1", port: spec.port, sharding }).pipe(
  Layer.provideMerge(local),
  Layer.provide(PgClient.layer({ url: Redacted.make(spec.databaseUrl) })),
  Layer.provide(NodeServices.layer)
)

process.stdin.on("end", () => process.exit(0))
process.stdin.resume()

NodeRuntime.runMain(Effect.scoped(Effect.gen(function*() {
  const bus = Context.get(yield* Layer.build(runner), EventBus)
  yield* bus.stream({ kinds: ["TurnStart"], capacity: 1024 }).pipe(
    Stream.runForEach((event) => Effect.sync(() => process.stdout.write(`turn ${event.sessionKey} ${event.turnId}\n`))),
    Effect.forkScoped
  )
  yield* Effect.sync(() => process.stdout.write("ready\n"))
  return yield* Effect.never
})))
