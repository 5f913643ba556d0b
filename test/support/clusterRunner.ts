/**
 * A cluster runner process for tests and benchmarks: the session entity on a loop with a scripted
 * provider, the sessions in JSON Lines in a shared directory, the cluster's storage on Postgres.
 *
 * Argument: a JSON `RunnerSpec`. It prints `ready` once the runner has joined, then
 * `turn SESSION TURN-ID` as each turn starts here (so a test knows which runner has a session) and
 * `end SESSION TURN-ID STATUS [ERROR]` as each ends, and exits when its stdin closes, so a runner never
 * outlives the process that started it. With `store: "sql"` the sessions live in the cluster's
 * Postgres (fenced commits), else in JSON Lines in `sessionsDir`.
 * The cluster secret, when there is one, comes in `AGENT_LOOP_CLUSTER_SECRET` (never on the
 * command line).
 *
 * The scripted model answers `seen N: a | b | c`, where N is the number of messages it was sent and
 * a, b, c the user messages among them, so a test can read what history a turn saw. An input that
 * starts with `hang` makes the model never finish (a turn to stop a runner in); `wait N` answers
 * after N milliseconds (on the Clock); `die-after-commit` kills the runner (SIGKILL) right after
 * the turn's commit, before it answers (`die-after-commit tools a` does that to a `tools` turn).
 *
 * With `toolLog`, the runner has tools that append a line to that file each time they run:
 * `record` (`record NOTE`), `deploy` (`deploy`, then never ends; not idempotent) and `look`
 * (`look`, then waits for the file `toolLog.release`; idempotent). An input `tools a;deploy;look`
 * makes the model call `record` with note a, then `deploy`, then `look`, one reply each, and then
 * answer `done: ` and the last tool result; `tools-after N a` does the same with its first reply N
 * ms late.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as fs from "node:fs"
import { Context, Duration, Effect, Layer, Redacted, Schema, Stream } from "effect"
import * as AgentLoopCluster from "../../src/cluster/AgentLoopCluster.ts"
import * as Scripted from "../../src/layers/providers/Scripted.ts"
import * as SessionStoreJsonl from "../../src/layers/SessionStoreJsonl.ts"
import * as SessionStoreSql from "../../src/layers/SessionStoreSql.ts"
import { AgentLoop } from "../../src/services/AgentLoop.ts"
import type { SessionStore } from "../../src/services/SessionStore.ts"
import type { SessionStoreError } from "../../src/domain/errors.ts"
import type { FileSystem, Path } from "effect"
import type { SqlClient } from "effect/sql"
import * as AgentLoopLive from "../../src/programs/AgentLoopLive.ts"
import { EventBus } from "../../src/services/EventBus.ts"
import * as ToolRegistryLive from "../../src/layers/ToolRegistry.ts"
import * as Message from "../../src/domain/Message.ts"
import * as Tool from "../../src/domain/Tool.ts"

/** How a runner process is started. */
export interface RunnerSpec {
  readonly databaseUrl: string
  readonly port: number
  readonly sessionsDir: string
  /** Cluster timings, in milliseconds. */
  readonly timingsMs?: Readonly<Record<string, number>>
  /** Where sessions live: JSON Lines in `sessionsDir` (default) or the cluster's Postgres. */
  readonly store?: "jsonl" | "sql"
  /** The retention window of answered requests, in milliseconds (swept every window). */
  readonly retentionMs?: number
  /** How often the runner sweeps, in milliseconds, when not every window. */
  readonly retentionIntervalMs?: number
  /** Where the tools log their runs (no tools without it). */
  readonly toolLog?: string
  /** How long the scripted model takes to answer an ordinary prompt (default: at once). */
  readonly modelDelayMs?: number
  /** TLS on the runner port: PEM files of its certificate and key, and of the CA that signed the runners' certificates. */
  readonly tls?: { readonly cert: string; readonly key: string; readonly ca: string }
}

const spec: RunnerSpec = JSON.parse(process.argv[2] ?? "{}")

const model = Scripted.layer((request) => {
  const users = request.messages.filter((m) => m.role === "user").map((m) => Message.textOf(m.content))
  // `die-after-commit` (see below) may lead any other input
  const last = (users.at(-1) ?? "").replace(/^die-after-commit /, "")
  if (last.startsWith("hang")) return { content: "working", stall: true }
  const wait = /^wait (\d+)/.exec(last)
  if (wait) return { content: `waited ${wait[1]}: ${users.join(" | ")}`, delay: Duration.millis(Number(wait[1])) }
  if (last.startsWith("tools ")) return toolStep(request.messages, last.slice("tools ".length).split(";"))
  // `tools-after N STEPS`: as `tools STEPS`, the first reply N ms late (a turn to freeze a runner in before its first checkpoint)
  const late = /^tools-after (\d+) (.*)$/.exec(last)
  if (late) {
    const step = toolStep(request.messages, late[2]!.split(";"))
    return request.messages.at(-1)?.role === "user" ? { ...step, delay: Duration.millis(Number(late[1])) } : step
  }
  // the model options the turn's request carried, as the client set them
  if (last.startsWith("options")) return { content: JSON.stringify({ temperature: request.temperature, reasoning: request.reasoning }) }
  // a slow first answer: time for steering to arrive while the turn runs
  if (last.startsWith("slow") && request.messages.at(-1)?.role === "user") return { content: "thinking", delay: "1 second" }
  const content = `seen ${request.messages.length}: ${users.join(" | ")}`
  return spec.modelDelayMs === undefined ? { content } : { content, delay: Duration.millis(spec.modelDelayMs) }
})

/** The reply to a `tools` turn: the next step's call, or the answer once every step ran. */
function toolStep(messages: ReadonlyArray<Message.Message>, steps: ReadonlyArray<string>) {
  const since = messages.length - 1 - [...messages].reverse().findIndex((m) => m.role === "user")
  const step = steps[messages.slice(since).filter((m) => m.role === "assistant").length]
  if (step === undefined) return { content: `done: ${Message.textOf(messages.at(-1)!.content)}` }
  return { toolCalls: [step === "deploy" || step === "look" ? { name: step } : { name: "record", arguments: { note: step } }] }
}

const logRun = (line: string) => Effect.sync(() => fs.appendFileSync(spec.toolLog!, `${line}\n`))

const tools = spec.toolLog === undefined ? [] : [
  Tool.make({
    name: "record",
    description: "records a note",
    parameters: Schema.Struct({ note: Schema.String }),
    execute: ({ note }) => Effect.as(logRun(`record ${note}`), `recorded ${note}`)
  }),
  Tool.make({ name: "deploy", description: "deploys", parameters: Schema.Struct({}), execute: () => Effect.andThen(logRun("deploy"), Effect.never) }),
  Tool.make({
    name: "look",
    description: "looks",
    parameters: Schema.Struct({}),
    readOnly: true,
    idempotent: true,
    execute: () =>
      Effect.andThen(
        logRun("look"),
        Effect.sleep("50 millis").pipe(
          Effect.repeat({ until: () => fs.existsSync(`${spec.toolLog}.release`) }),
          Effect.as("looked"),
          Effect.timeoutOrElse({ duration: "60 seconds", orElse: () => Effect.succeed("gave up looking") })
        )
      )
  })
]

const sharding = Object.fromEntries(Object.entries(spec.timingsMs ?? {}).map(([k, ms]) => [k, Duration.millis(ms)]))

const store: Layer.Layer<SessionStore, SessionStoreError, FileSystem.FileSystem | Path.Path | SqlClient.SqlClient> = spec.store === "sql"
  ? SessionStoreSql.layer()
  : SessionStoreJsonl.layer(spec.sessionsDir)

const local = AgentLoopLive.layer({ model: "scripted", maxParallelTurns: 1024, acceptsImages: { vision: true } }).pipe(
  Layer.provide([model, ToolRegistryLive.layer(tools)]),
  Layer.provideMerge(store)
)

const retention = spec.retentionMs === undefined ? {} : {
  retention: {
    window: Duration.millis(spec.retentionMs),
    ...(spec.retentionIntervalMs === undefined ? {} : { interval: Duration.millis(spec.retentionIntervalMs) })
  }
}

const secret = process.env["AGENT_LOOP_CLUSTER_SECRET"]
const security = {
  ...(secret === undefined ? {} : { secret: Redacted.make(secret) }),
  ...(spec.tls === undefined ? {} : { tls: { cert: fs.readFileSync(spec.tls.cert, "utf8"), key: fs.readFileSync(spec.tls.key, "utf8"), ca: fs.readFileSync(spec.tls.ca, "utf8") } })
}

const runner = AgentLoopCluster.layerRunner({ host: "127.0.0.1", port: spec.port, sharding, security, ...retention }).pipe(
  Layer.provideMerge(local),
  Layer.provide(PgClient.layer({ url: Redacted.make(spec.databaseUrl) })),
  Layer.provide(NodeServices.layer)
)

process.stdin.on("end", () => process.exit(0))
process.stdin.resume()

NodeRuntime.runMain(Effect.scoped(Effect.gen(function*() {
  const context = yield* Layer.build(runner)
  const bus = Context.get(context, EventBus)
  yield* bus.stream({ kinds: ["TurnStart", "TurnEnd"], capacity: 4096 }).pipe(
    Stream.runForEach((event) =>
      Effect.sync(() =>
        process.stdout.write(
          event._tag === "TurnEnd"
            ? `end ${event.sessionKey} ${event.turnId} ${event.status}${event.error === undefined ? "" : ` ${event.error}`}\n`
            : `turn ${event.sessionKey} ${event.turnId}\n`
        )
      )
    ),
    Effect.forkScoped
  )
  // after the commit, before the answer: the runner dies with the turn saved and unanswered
  yield* Context.get(context, AgentLoop).registerHook({
    afterTurn: ({ result }) =>
      Effect.sync(() => {
        const first = result.messages[0]
        if (first?.role === "user" && Message.textOf(first.content).startsWith("die-after-commit")) process.kill(process.pid, "SIGKILL")
      })
  })
  yield* Effect.sync(() => process.stdout.write("ready\n"))
  return yield* Effect.never
})))
