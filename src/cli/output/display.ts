/**
 * What `run` and `chat` share: the event sink with its renderer, waiting indicator and JSON
 * outputs, the approval hook, and remembering the session for `--continue`. (Tool results reach
 * none of them with a known secret: the loop scrubs them.)
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Scope from "effect/Scope"
import type { AgentEvent } from "../../domain/Event.ts"
import { AgentLoop } from "../../services/AgentLoop.ts"
import { Sandbox } from "../../services/Sandbox.ts"
import { SessionStore } from "../../services/SessionStore.ts"
import type { EventBus } from "../../services/EventBus.ts"
import * as nodePath from "node:path"
import * as Duration from "effect/Duration"
import { approvalHook, ASK_TIMEOUT } from "../permissions/approval.ts"
import { writeLastSession } from "../config/dataDir.ts"
import * as EventsFile from "./eventsFile.ts"
import * as EventSink from "./eventSink.ts"
import type { CliFailure } from "../terminal/failure.ts"
import { makeRenderer } from "./render.ts"
import { Screen, type ScreenShape } from "../terminal/screen.ts"
import type { CliSettings } from "../settings/settings.ts"
import * as SandboxNotices from "../sandbox/sandboxNotices.ts"
import * as Spinner from "./spinner.ts"

/** What goes to stdout while a turn runs: the model's text, every event as JSON Lines, or nothing (JSON at the end). */
export type StdoutContent = "text" | "events" | "none"

/**
 * Registers the approval hook: last of the `beforeTool` hooks (so deny rules see the arguments
 * other hooks left), with room for a prompt at `beforeTool` (an `ask` rule on a tool that needs
 * no approval), which denies by itself at its deadline.
 */
export const registerApproval = (settings: CliSettings, screen: ScreenShape, ask: Effect.Effect<string | undefined> | undefined) =>
  Effect.gen(function*() {
    const loop = yield* AgentLoop
    const sandbox = yield* Sandbox
    return yield* loop.registerHook(
      approvalHook({
        policy: settings.approval,
        screen,
        ask,
        permissions: settings.permissions,
        bridge: settings.hookBridge,
        ...(process.stderr.columns === undefined ? {} : { columns: process.stderr.columns }),
        overflowDir: nodePath.join(settings.dataDir, "approvals"),
        sandbox: {
          active: sandbox.kind !== "none",
          autoAllowExec: settings.sandbox.autoAllowExec,
          allowUnsandboxed: settings.sandbox.allowUnsandboxed,
          excludedCommands: settings.sandbox.excludedCommands,
          grant: sandbox.grantUnsandboxed
        }
      }),
      { name: "cli-approval", source: "agent-loop CLI", priority: -1, timeout: Duration.sum(ASK_TIMEOUT, Duration.seconds(5)) }
    )
  })

/**
 * A session gets a metadata record naming its workspace, so `--continue`, `--resume` and
 * `sessions list` can tell this project's sessions from others'. It is written when the command
 * ends (and when `chat` leaves a session for another), and only into a session that holds something and has none yet: a turn that saved nothing
 * (a hard abort) leaves no session behind. A failure is a warning only.
 */
export const recordWorkspace = (settings: CliSettings, sessionKey: string = settings.sessionKey) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const log = yield* store.log(sessionKey)
    if (log.length > 0 && !log.some((entry) => entry.role === "meta")) {
      yield* store.append(sessionKey, [{ role: "meta", workspace: settings.workspace }])
    }
  }).pipe(Effect.catch((error) => Effect.logWarning(`cannot record the session's workspace: ${error.message}`)))

/** Starts rendering (and recording) events and registers the CLI's hooks, for the scope. */
export const attach = (settings: CliSettings, ask: Effect.Effect<string | undefined> | undefined, stdout: StdoutContent = "text") =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const handlers: Array<(event: AgentEvent) => Effect.Effect<void>> = []
    // --events naming stdout turns stdout into the event stream: text mixed in would corrupt it
    const eventsToStdout = stdout === "events" || (settings.events !== undefined && EventsFile.isStdout(settings.events))
    if (settings.events !== undefined && !EventsFile.isStdout(settings.events)) handlers.push(yield* EventsFile.open(settings.events))
    if (eventsToStdout) handlers.push(EventsFile.toStdout(screen, { messages: stdout === "events" }))
    handlers.push(makeRenderer(screen, { verbose: settings.verbose, ...(stdout === "text" && !eventsToStdout ? {} : { text: "none" }) }))
    handlers.push(yield* Spinner.start(screen))
    handlers.push(SandboxNotices.handler(screen))
    const sink = yield* EventSink.start(handlers)
    yield* registerApproval(settings, screen, ask)
    if (settings.persist) {
      yield* Effect.addFinalizer(() => recordWorkspace(settings))
      yield* writeLastSession(settings.dataDir, settings.workspace, settings.sessionKey)
    }
    return sink
  }) satisfies Effect.Effect<
    EventSink.EventSink,
    CliFailure,
    Screen | AgentLoop | EventBus | SessionStore | FileSystem.FileSystem | Scope.Scope
  >

/** Warns when the sink lost events (its buffer overflowed). */
export const warnDropped = (sink: EventSink.EventSink) =>
  Effect.gen(function*() {
    const dropped = yield* sink.dropped
    if (dropped > 0) yield* (yield* Screen).line(`agent-loop: ${dropped} events were dropped from the display and events file`)
  })
