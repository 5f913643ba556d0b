/**
 * `agent-loop run [PROMPT]`: one turn. The prompt is the argument, or stdin (`-`, or no argument
 * with piped input); piped input with an argument is attached after it. Exits 0 when the turn
 * completes, 130 after Ctrl-C (interrupted or aborted), 143 after SIGTERM, 1 with a one-line
 * reason otherwise.
 *
 * Output (`--output-format`): `text` streams the answer to stdout (whole responses when stdout is
 * not a terminal); `json` prints one object at the end (`runResult.ts`); `stream-json` prints every
 * event as one JSON line, between a first `system`/`init` line and a `result` line (`streamJson.ts`,
 * Claude Code's shapes). `--input-format stream-json` takes user messages as JSON lines on stdin,
 * one turn each, in one process. Tool calls, notes and the closing line go to stderr in every format.
 * `--output-schema FILE` (with `json`) asks for a typed answer, printed as the object's `output`.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { checkInput } from "../../domain/Config.ts"
import type { Content } from "../../domain/Message.ts"
import { EXIT_PLAN_MODE } from "../../domain/Tool.ts"
import type { TurnResult } from "../../domain/Turn.ts"
import { AgentLoop } from "../../services/AgentLoop.ts"
import { LoopConfig } from "../../services/LoopConfig.ts"
import { ToolRegistry } from "../../services/ToolRegistry.ts"
import type { PathRule } from "../../services/Workspace.ts"
import * as CustomCommands from "../config/customCommands.ts"
import { promptInput } from "../input/images.ts"
import * as LineInput from "../input/lineInput.ts"
import { readAll, resolvePrompt } from "../input/stdinPrompt.ts"
import * as Display from "../output/display.ts"
import * as OutputSchema from "../output/outputSchema.ts"
import { runResult } from "../output/runResult.ts"
import * as StreamJson from "../output/streamJson.ts"
import * as Approval from "../permissions/approval.ts"
import * as PlanReview from "../output/planReview.ts"
import type { ProviderKeys } from "../providers/providerKeys.ts"
import * as App from "../runtime/app.ts"
import * as PlanSlot from "../runtime/planSlot.ts"
import { remember } from "../sessions/workspace.ts"
import type { AgentFlags } from "../settings/flags.ts"
import * as Settings from "../settings/settings.ts"
import * as CtrlC from "../terminal/ctrlC.ts"
import { ExitCode, fail } from "../terminal/failure.ts"
import { Screen } from "../terminal/screen.ts"
import { exitWithin } from "../terminal/signals.ts"
import * as CommandPrompt from "./commandPrompt.ts"

import type { OutputFormat } from "../output/formats.ts"

export { type OutputFormat, outputFormats } from "../output/formats.ts"

/**
 * The exit of a finished turn. A turn a hook stopped with `continue: false` (`quietStop`, its
 * `stopReason`) ends as Claude Code ends it: the reason shown, exit 0.
 */
export const outcome = (result: TurnResult, maxIterations: number, quietStop?: string) => {
  if (quietStop !== undefined && (result.status === "failed" || result.status === "blocked")) {
    return Effect.flatMap(Screen, (screen) => screen.line(screen.err.dim(quietStop)))
  }
  switch (result.status) {
    case "completed":
      return Effect.void
    case "interrupted":
    case "aborted":
      return fail("", ExitCode.interrupted)
    case "max_iterations":
      return fail(`no final answer after ${maxIterations} iterations (raise --max-iterations)`)
    case "blocked":
      return fail(result.error ?? "blocked by a hook")
    case "failed":
      return fail(result.error ?? "the turn failed")
  }
}

/**
 * The turn's input: the prompt with the images of `--image` and of the `@path` mentions typed in
 * the argument (see `images.ts`).
 */
export const inputOf = (
  prompt: string,
  argument: Option.Option<string>,
  images: ReadonlyArray<string>,
  options: { readonly workspace: string; readonly maxBytes: number; readonly pathRule?: PathRule }
): Effect.Effect<Content, unknown, FileSystem.FileSystem> =>
  promptInput({ prompt, mentionsIn: Option.getOrUndefined(Option.filter(argument, (a) => a !== "-")), files: images, ...options })

/** Runs one turn of the prompt; `outputSchema` is the file of `--output-schema`. */
export const run = (
  argument: Option.Option<string>,
  format: OutputFormat,
  flags: AgentFlags,
  images: ReadonlyArray<string> = [],
  outputSchema: Option.Option<string> = Option.none(),
  inputFormat: StreamJson.InputFormat = "text"
) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    if (Option.isSome(outputSchema) && format !== "json") return yield* fail("--output-schema needs --output-format json")
    const streamed = inputFormat === "stream-json"
    if (streamed && format !== "stream-json") return yield* fail("--input-format stream-json needs --output-format stream-json")
    if (streamed && (Option.isSome(argument) || images.length > 0)) {
      return yield* fail("--input-format stream-json reads every message from stdin: give no prompt or --image")
    }
    const typed = Option.isSome(outputSchema) ? yield* OutputSchema.load(outputSchema.value) : undefined
    let settings = yield* Settings.resolve(flags)
    // SessionStart hooks are told a session taken up again is resumed
    if (flags.continue || Option.isSome(flags.resume)) settings.hookBridge.startsAs(settings.sessionKey, "resume")
    const limits = {
      maxImageBytes: settings.maxImageBytes,
      ...(settings.acceptsImages === undefined ? {} : { acceptsImages: settings.acceptsImages })
    }
    let input: Content = ""
    // `run /NAME`: the command, whose `allowed-tools` narrow the turn's tools
    let command: CustomCommands.CustomCommand | undefined
    let commandArgs = ""
    if (!streamed) {
      let prompt = yield* resolvePrompt(argument, { isTTY: screen.interactive, read: readAll(process.stdin) })
      // `run /NAME args`: a custom command's prompt, with its model and tools
      const called = Option.isSome(argument) ? CustomCommands.invocation(prompt) : undefined
      if (called !== undefined && !called.name.includes("/")) {
        command = CustomCommands.find(settings.commands, called.name)
        if (command === undefined) {
          // a command file that was skipped says why before the failure
          yield* Settings.announce(settings)
          const names = settings.commands.map((c) => `/${c.name}`).join(", ")
          return yield* fail(`unknown command /${called.name}; ${names === "" ? "no custom commands are defined" : `custom commands: ${names}`}`)
        }
        prompt = CustomCommands.expand(command.body, called.args)
        commandArgs = called.args
        if (command.model !== undefined) settings = { ...settings, model: command.model }
      }
      input = yield* inputOf(prompt, argument, images, {
        workspace: settings.workspace,
        maxBytes: settings.maxImageBytes,
        pathRule: settings.permissions.pathRule
      })
      // refused here, before the session store is opened: the loop would refuse it too, after
      const rejected = checkInput(limits, settings.model, input)
      if (rejected) return yield* fail(rejected.message)
    }
    yield* Settings.announce(settings)
    // plan mode: the plan is printed (text output) and ends the turn, unless --yes accepts it
    const plans = PlanSlot.slot()
    const planning = settings.permissionMode === "plan"
    plans.set(PlanReview.printed(screen, settings.approval === "approve", format === "text"))
    yield* Effect.scoped(Effect.gen(function*() {
      const loop = yield* AgentLoop
      // with --input-format stream-json, stdin holds the messages: nothing else may read it
      const lines = screen.interactive && !streamed ? yield* LineInput.make : undefined
      const sink = yield* Display.start(settings, format === "text" ? "text" : format === "json" ? "none" : "events")
      yield* Approval.register(settings, screen, lines?.ask)
      yield* remember(settings)
      const main = yield* Effect.fiber
      const stop = Effect.sync(() => exitWithin(ExitCode.interrupted))
      yield* CtrlC.install({
        sessionKey: settings.sessionKey,
        onIdle: () => Effect.andThen(stop, Effect.sync(() => main.interruptUnsafe())),
        onHardAbort: stop,
        cancelQuestions: lines?.cancelQuestions
      })
      if (format === "stream-json") {
        // exit_plan_mode is offered only in plan mode
        const tools = (yield* (yield* ToolRegistry).list).map((tool) => tool.name).filter((name) => planning || name !== EXIT_PLAN_MODE)
        const init = StreamJson.initLine({ sessionKey: settings.sessionKey, model: settings.model, tools, cwd: settings.workspace })
        yield* screen.raw(`${JSON.stringify(init)}\n`)
      }
      const tools = command === undefined ? undefined : CustomCommands.turnTools(command, yield* (yield* ToolRegistry).list)
      if (command !== undefined) {
        // its `!` lines run and its `@` files are read now, on the run's tools and sandbox
        const made = yield* Effect.catch(CommandPrompt.make(command, commandArgs, settings), (message) => fail(message))
        input = yield* inputOf(made, argument, images, { workspace: settings.workspace, maxBytes: settings.maxImageBytes, pathRule: settings.permissions.pathRule })
      }
      const turn = (input: Content) =>
        Effect.gen(function*() {
          const started = yield* Clock.currentTimeMillis
          const result = yield* loop.turn(settings.sessionKey, input, {
            ...(typed === undefined ? {} : { output: typed.schema, outputJsonSchema: typed.jsonSchema }),
            ...(tools === undefined ? {} : { tools }),
            ...(planning ? { planMode: true } : {})
          }).pipe(CommandPrompt.withAllowed(command, settings.permissions))
          const finished = yield* Clock.currentTimeMillis
          yield* sink.flushed(result.turnId)
          yield* Display.warnDropped(sink)
          const own = runResult(result, settings.model, finished - started, typed !== undefined)
          if (format === "json") yield* screen.raw(`${JSON.stringify(own)}\n`)
          if (format === "stream-json") yield* screen.raw(`${JSON.stringify(StreamJson.resultLine(own, result))}\n`)
          return result
        })
      const maxIterations = (yield* LoopConfig).maxIterations
      const finish = (result: TurnResult) => outcome(result, maxIterations, settings.hookBridge.takeQuietStop(result.turnId))
      if (!streamed) return yield* finish(yield* turn(input))
      // One turn per line, in order; the exit says how the last one went.
      let last: TurnResult | undefined
      yield* Stream.runForEach(StreamJson.userInputs(process.stdin), (message) =>
        Effect.gen(function*() {
          const rejected = checkInput(limits, settings.model, message)
          if (rejected) return yield* fail(rejected.message)
          last = yield* turn(message)
        }))
      if (last === undefined) return yield* fail("no user message on stdin (--input-format stream-json)")
      return yield* finish(last)
    })).pipe(Effect.provide(App.layer(settings, { planReview: plans.review })))
  }) satisfies Effect.Effect<void, unknown, Screen | App.Platform | ProviderKeys>
