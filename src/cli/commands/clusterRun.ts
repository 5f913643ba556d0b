/**
 * `agent-loop run --cluster URL [PROMPT]`: one turn, run by the cluster's runner for the session
 * (`agent-loop serve`) instead of in this process. Prompt, session (`--session`, `--continue`),
 * output formats, `--events`, Ctrl-C and exit codes are those of `run`; the events shown are
 * streamed from the runner.
 *
 * The provider, model, tools, approval policy and hooks are the runners': flags that would choose
 * them here are refused rather than ignored. `--model` is passed on as the turn's model.
 *
 * Before storing the request, it waits (`--cluster-wait`, 30 s by default) for a runner to be up
 * and to pass the handshake, and fails saying which of the two is missing. It opens one database
 * connection.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as nodePath from "node:path"
import * as AgentLoopCluster from "../../cluster/AgentLoopCluster.ts"
import { LOST_TURN_ERROR } from "../../cluster/entity.ts"
import * as Health from "../../cluster/health.ts"
import * as Transport from "../../cluster/transport.ts"
import { DEFAULT_MAX_IMAGE_BYTES } from "../../domain/Message.ts"
import { AgentLoop } from "../../services/AgentLoop.ts"
import { dataDir, writeLastSession } from "../config/dataDir.ts"
import { readAll, resolvePrompt } from "../input/stdinPrompt.ts"
import * as EventsFile from "../output/eventsFile.ts"
import * as EventSink from "../output/eventSink.ts"
import { makeRenderer } from "../output/render.ts"
import { runResult } from "../output/runResult.ts"
import * as Spinner from "../output/spinner.ts"
import * as StreamJson from "../output/streamJson.ts"
import type { AgentFlags } from "../settings/flags.ts"
import { sessionKey } from "../settings/settings.ts"
import * as CtrlC from "../terminal/ctrlC.ts"
import { ExitCode, fail } from "../terminal/failure.ts"
import { Screen } from "../terminal/screen.ts"
import { exitWithin } from "../terminal/signals.ts"
import * as ClusterOptions from "./clusterOptions.ts"
import { inputOf, type OutputFormat, outcome } from "./run.ts"

/** Flags that choose what only the runners decide. */
const runnerFlags = (flags: AgentFlags): ReadonlyArray<string> => [
  ...Option.isSome(flags.provider) ? ["--provider"] : [],
  ...Option.isSome(flags.baseUrl) ? ["--base-url"] : [],
  ...Option.isSome(flags.apiKeyEnv) ? ["--api-key-env"] : [],
  ...Option.isSome(flags.project) ? ["--project"] : [],
  ...Option.isSome(flags.location) ? ["--location"] : [],
  ...Option.isSome(flags.system) ? ["--system"] : [],
  ...Option.isSome(flags.tools) ? ["--tools"] : [],
  ...Option.isSome(flags.workspace) ? ["--workspace"] : [],
  ...Option.isSome(flags.maxIterations) ? ["--max-iterations"] : [],
  ...Option.isSome(flags.approval) || flags.yes ? ["--approval/--yes"] : [],
  ...Option.isSome(flags.permissionMode) || flags.dangerouslySkipPermissions ? ["--permission-mode/--dangerously-skip-permissions"] : [],
  ...Option.isSome(flags.appendSystemPrompt) ? ["--append-system-prompt"] : [],
  ...flags.addDir.length > 0 ? ["--add-dir"] : [],
  ...Option.isSome(flags.sandbox) ? ["--sandbox"] : [],
  ...flags.allow.length > 0 || flags.deny.length > 0 || flags.allowedTools.length > 0 || flags.disallowedTools.length > 0
    ? ["--allow/--deny/--allowedTools/--disallowedTools"]
    : [],
  ...Option.isSome(flags.replay) ? ["--replay"] : [],
  ...Option.isSome(flags.record) ? ["--record"] : [],
  ...Option.isSome(flags.mcpConfig) ? ["--mcp-config"] : [],
  ...flags.mcpWorkspace ? [] : ["--no-mcp-workspace"],
  ...flags.ephemeral ? ["--ephemeral"] : []
]

/** Runs one turn of the prompt on the cluster. */
export const runOnCluster = (
  argument: Option.Option<string>,
  format: OutputFormat,
  flags: AgentFlags,
  cluster: Redacted.Redacted<string>,
  images: ReadonlyArray<string> = [],
  clusterFlags: ClusterOptions.ClientFlags = { clusterSecret: Option.none(), clusterTlsCa: Option.none(), clusterWait: 30 }
) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const refused = runnerFlags(flags)
    if (refused.length > 0) {
      return yield* fail(`${refused.join(", ")}: the cluster's runners decide this (agent-loop serve), not run --cluster`)
    }
    const url = yield* ClusterOptions.parse(cluster)
    if (clusterFlags.clusterWait < 1) return yield* fail("--cluster-wait must be at least 1 second")
    const security = yield* ClusterOptions.security(clusterFlags)
    const data = dataDir()
    const workspace = nodePath.resolve(Option.getOrElse(flags.workspace, () => "."))
    const key = yield* sessionKey(flags, data, workspace)
    const model = Option.getOrUndefined(flags.model)
    const prompt = yield* resolvePrompt(argument, { isTTY: screen.interactive, read: readAll(process.stdin) })
    // the runners' model decides whether images are accepted; their size is checked here and there
    const input = yield* inputOf(prompt, argument, images, { workspace: process.cwd(), maxBytes: DEFAULT_MAX_IMAGE_BYTES })
    yield* Effect.scoped(Effect.gen(function*() {
      // a request no runner takes would wait in the database forever: fail by the deadline instead
      yield* Health.awaitRunner({ deadline: ClusterOptions.waitOf(clusterFlags), security }).pipe(
        Effect.catchTag("NoRunnerUp", (error) => fail(error.message)),
        Effect.catchTag("ClusterAuthError", (error) => fail(`the cluster's runner at ${error.address} did not accept this client: ${error.message}`))
      )
      const loop = yield* AgentLoop
      const eventsToStdout = format === "stream-json" || (flags.events._tag === "Some" && EventsFile.isStdout(flags.events.value))
      const handlers = [
        ...flags.events._tag === "Some" && !EventsFile.isStdout(flags.events.value) ? [yield* EventsFile.open(flags.events.value)] : [],
        ...eventsToStdout ? [EventsFile.toStdout(screen, { messages: format === "stream-json" })] : [],
        makeRenderer(screen, { verbose: flags.verbose, ...(format === "text" && !eventsToStdout ? {} : { text: "none" as const }) }),
        yield* Spinner.start(screen)
      ]
      const sink = yield* EventSink.start(handlers)
      yield* writeLastSession(data, workspace, key)
      // the runners decide the tools (and the model, unless --model says)
      if (format === "stream-json") {
        yield* screen.raw(`${JSON.stringify(StreamJson.initLine({ sessionKey: key, model: model ?? "", tools: [], cwd: process.cwd() }))}\n`)
      }
      const main = yield* Effect.fiber
      const stop = Effect.sync(() => exitWithin(ExitCode.interrupted))
      yield* CtrlC.install({ sessionKey: key, onIdle: () => Effect.andThen(stop, Effect.sync(() => main.interruptUnsafe())), onHardAbort: stop })
      const started = yield* Clock.currentTimeMillis
      const result = yield* loop.turn(key, input, model === undefined ? {} : { model }).pipe(
        Effect.catchTag("ContentRejected", (rejected) => fail(rejected.message))
      )
      const finished = yield* Clock.currentTimeMillis
      yield* sink.flushed(result.turnId)
      const own = runResult(result, model ?? "", finished - started)
      if (format === "json") yield* screen.raw(`${JSON.stringify(own)}\n`)
      if (format === "stream-json") yield* screen.raw(`${JSON.stringify(StreamJson.resultLine(own, result))}\n`)
      // a turn its runner lost is no Ctrl-C: say so, and exit 1, not 130
      if (result.status === "aborted" && result.error === LOST_TURN_ERROR) return yield* fail(`turn aborted: ${LOST_TURN_ERROR}`)
      return yield* outcome(result, result.iterations)
    })).pipe(Effect.provide(
      // one connection: a client only stores its request and reads the reply
      AgentLoopCluster.layerClientWith().pipe(
        Layer.provideMerge(Transport.layerClient({ security })),
        Layer.provide(ClusterOptions.database(url, { maxConnections: 1, applicationName: "agent-loop run --cluster" }))
      )
    ))
  })
