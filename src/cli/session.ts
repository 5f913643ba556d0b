/**
 * What `run` and `chat` share: the event sink with its renderer and events file, the approval
 * hook, and remembering the session for `--continue`.
 */
import { Effect, type FileSystem, type Scope } from "effect"
import type { AgentEvent } from "../domain/Event.ts"
import { AgentLoop } from "../services/AgentLoop.ts"
import type { EventBus } from "../services/EventBus.ts"
import { approvalHook } from "./approval.ts"
import { writeLastSession } from "./dataDir.ts"
import * as EventsFile from "./eventsFile.ts"
import * as EventSink from "./eventSink.ts"
import type { CliFailure } from "./failure.ts"
import { makeRenderer } from "./render.ts"
import { Screen } from "./screen.ts"
import type { CliSettings } from "./settings.ts"

/** Starts rendering (and recording) events and registers the approval hook, for the scope. */
export const attach = (settings: CliSettings, ask: Effect.Effect<string | undefined> | undefined) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const loop = yield* AgentLoop
    const handlers: Array<(event: AgentEvent) => Effect.Effect<void>> = []
    if (settings.events !== undefined) handlers.push(yield* EventsFile.open(settings.events))
    handlers.push(makeRenderer(screen, { verbose: settings.verbose }))
    const sink = yield* EventSink.start(handlers)
    yield* loop.registerHook(approvalHook({ yes: settings.yes, screen, ask }), { name: "cli-approval", source: "agent-loop CLI" })
    if (settings.persist) yield* writeLastSession(settings.dataDir, settings.sessionKey)
    return sink
  }) satisfies Effect.Effect<
    EventSink.EventSink,
    CliFailure,
    Screen | AgentLoop | EventBus | FileSystem.FileSystem | Scope.Scope
  >

/** Warns when the sink lost events (its buffer overflowed). */
export const warnDropped = (sink: EventSink.EventSink) =>
  Effect.gen(function*() {
    const dropped = yield* sink.dropped
    if (dropped > 0) yield* (yield* Screen).line(`agent-loop: ${dropped} events were dropped from the display and events file`)
  })
