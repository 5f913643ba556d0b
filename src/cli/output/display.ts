/**
 * What `run` and `chat` show and record of the events while their turns run: one event sink
 * (`eventSink.ts`) feeding the events file, the JSON Lines on stdout, the renderer, the waiting
 * indicator and the sandbox's notices. (Tool results reach none of them with a known secret: the
 * loop scrubs them.)
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Scope from "effect/Scope"
import type { AgentEvent } from "../../domain/Event.ts"
import type { EventBus } from "../../services/EventBus.ts"
import * as SandboxNotices from "../sandbox/sandboxNotices.ts"
import type { CliFailure } from "../terminal/failure.ts"
import { Screen } from "../terminal/screen.ts"
import * as EventsFile from "./eventsFile.ts"
import * as EventSink from "./eventSink.ts"
import { expanded, type LastCall, makeRenderer } from "./render.ts"
import * as Spinner from "./spinner.ts"

/** What goes to stdout while a turn runs: the model's text, every event as JSON Lines, or nothing (JSON at the end). */
export type StdoutContent = "text" | "events" | "none"

/** What the display needs of the settings (`CliSettings` has both). */
export interface DisplaySettings {
  /** `--events FILE`; a name of stdout makes stdout the event stream. */
  readonly events: string | undefined
  readonly verbose: boolean
}

/** Starts showing (and recording) the loop's events, for the scope; the sink says when a turn's end has been shown. */
export const start = (settings: DisplaySettings, stdout: StdoutContent = "text") =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const handlers: Array<(event: AgentEvent) => Effect.Effect<void>> = []
    // --events naming stdout turns stdout into the event stream: text mixed in would corrupt it
    const eventsToStdout = stdout === "events" || (settings.events !== undefined && EventsFile.isStdout(settings.events))
    if (settings.events !== undefined && !EventsFile.isStdout(settings.events)) handlers.push(yield* EventsFile.open(settings.events))
    if (eventsToStdout) handlers.push(EventsFile.toStdout(screen, { messages: stdout === "events" }))
    const lastCall: LastCall = { current: undefined }
    handlers.push(makeRenderer(screen, { verbose: settings.verbose, lastCall, ...(stdout === "text" && !eventsToStdout ? {} : { text: "none" }) }))
    handlers.push(yield* Spinner.start(screen))
    handlers.push(SandboxNotices.handler(screen))
    const sink = yield* EventSink.start(handlers)
    return { ...sink, expanded: () => expanded(lastCall, screen) }
  }) satisfies Effect.Effect<Display, CliFailure, Screen | EventBus | FileSystem.FileSystem | Scope.Scope>

/** The event sink, and the last tool call shown whole (chat's Ctrl-O). */
export interface Display extends EventSink.EventSink {
  /** The lines of the last top-level tool call that ended, unfolded; none before the first. */
  readonly expanded: () => ReadonlyArray<string>
}

/** Warns when the sink lost events (its buffer overflowed). */
export const warnDropped = (sink: EventSink.EventSink) =>
  Effect.gen(function*() {
    const dropped = yield* sink.dropped
    if (dropped > 0) yield* (yield* Screen).line(`agent-loop: ${dropped} events were dropped from the display and events file`)
  })
