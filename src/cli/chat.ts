/**
 * `agent-loop chat`: a conversation on stdin. Follow-ups run as turns after the one that queued
 * them. Ctrl-C interrupts gracefully, twice aborts; at the prompt, twice quits.
 *
 * On a terminal, a line typed while a turn runs steers it; when idle (or before the turn it would
 * steer has started) it starts the next turn.
 * When stdin is not a terminal (piped input), every line is its own turn, run in order, and
 * `/followup TEXT` is the same as `TEXT`: whether a piped line reached the loop before or after a
 * turn had started is a matter of timing, so steering would make `printf 'a\nb\n' | agent-loop
 * chat` answer differently from one run to the next.
 *
 * A line that starts a turn sends the images it mentions (`@shots/error.png`, as `run` does); one
 * whose image cannot be sent is answered with one line and skipped. Steering is text only.
 */
import * as path from "node:path"
import { Deferred, Effect, Fiber, Option, Queue } from "effect"
import { checkInput } from "../domain/Config.ts"
import type { ContentPart } from "../domain/Message.ts"
import * as Usage from "../domain/Usage.ts"
import { AgentLoop } from "../services/AgentLoop.ts"
import { ToolRegistry } from "../services/ToolRegistry.ts"
import * as App from "./app.ts"
import * as CtrlC from "./ctrlC.ts"
import { ExitCode, fail } from "./failure.ts"
import type { AgentFlags } from "./flags.ts"
import { imageMentions, mentionedImages } from "./images.ts"
import * as LineInput from "./lineInput.ts"
import type { ProviderKeys } from "./providerKeys.ts"
import { clean } from "./safeText.ts"
import { Screen } from "./screen.ts"
import { attach, warnDropped } from "./session.ts"
import * as Settings from "./settings.ts"
import * as Slash from "./slashCommands.ts"
import { exitWithin } from "./signals.ts"
import { undoLast } from "./undo.ts"

/** A queued turn: its text, and the model a custom command asks for. */
interface Queued {
  readonly text: string
  readonly model?: string
}

/** Runs the chat until /exit, end of input, or Ctrl-C twice at the prompt. */
export const chat = (flags: AgentFlags, inspect: Option.Option<number> = Option.none()) =>
  Effect.gen(function*() {
    const settings = yield* Settings.resolve(flags)
    yield* Settings.announce(settings)
    const code = yield* Effect.scoped(Effect.gen(function*() {
      const screen = yield* Screen
      const loop = yield* AgentLoop
      const registry = yield* ToolRegistry
      // the inspector's code loads only when asked for
      if (Option.isSome(inspect)) yield* Effect.flatMap(Effect.promise(() => import("./inspect.ts")), (m) => m.inspectBeside(inspect))
      const key = settings.sessionKey
      // up/down recall earlier inputs, of this chat and earlier ones, from a private file
      const input = yield* LineInput.makeEditing({ prompt: screen.openPrompt, historyFile: path.join(settings.dataDir, "chat-history.jsonl") })
      const sink = yield* attach(settings, screen.interactive ? input.ask : undefined)
      const turns = yield* Queue.unbounded<Queued>()
      const quit = yield* Deferred.make<number>()
      let busy = false
      let inputEnded = false
      // `/model` changes it for the turns started after; `/cost` sums the turns' usage
      let model = settings.model
      let spent = Usage.empty
      let turnCount = 0
      const dim = screen.err.dim

      const showPrompt = screen.interactive ? screen.prompt(screen.err.bold("> ")) : Effect.void
      const startTurn = (text: string, commandModel?: string) =>
        Effect.andThen(Effect.sync(() => {
          busy = true
        }), Queue.offer(turns, commandModel === undefined ? { text } : { text, model: commandModel }))

      /** A line with the images it mentions (see `images.ts`); one that cannot be sent is said why, and `undefined`. */
      const inputOf = (text: string, turnModel: string) =>
        Effect.gen(function*() {
          const images = yield* mentionedImages(text, settings.workspace, settings.maxImageBytes)
          const input = images.length === 0 ? text : [{ type: "text", text } as const, ...images] as ReadonlyArray<ContentPart>
          const rejected = checkInput({
            maxImageBytes: settings.maxImageBytes,
            ...(settings.acceptsImages === undefined ? {} : { acceptsImages: settings.acceptsImages })
          }, turnModel, input)
          if (rejected) return yield* Effect.fail(rejected)
          return input
        }).pipe(Effect.catch((error) => Effect.as(screen.line(screen.err.red(`✗ ${clean(error.message)}`)), undefined)))

      /** With nothing more to run: idle, and the prompt again (or the end, once input has ended). */
      const idleIfDone = Effect.gen(function*() {
        if ((yield* Queue.size(turns)) > 0) return
        busy = false
        if (inputEnded) yield* Deferred.succeed(quit, ExitCode.ok)
        else yield* showPrompt
      })

      const worker = Effect.forever(Effect.gen(function*() {
        const queued = yield* Queue.take(turns)
        const turnModel = queued.model ?? model
        const input = yield* inputOf(queued.text, turnModel)
        if (input !== undefined) {
          const result = yield* loop.turn(key, input, { model: turnModel })
          spent = Usage.add(spent, result.usage)
          turnCount++
          yield* sink.flushed(result.turnId)
          if (result.error !== undefined && result.status !== "completed") yield* screen.line(screen.err.red(`✗ ${clean(result.error)}`))
          yield* Queue.offerAll(turns, result.followUps.map((text) => ({ text })))
        }
        yield* idleIfDone
      }))

      const steer = (text: string) =>
        loop.injectSteering(key, text).pipe(
          Effect.andThen(screen.line(dim(
            imageMentions(text).length === 0
              ? "(steering queued: the model sees it next)"
              : "(steering queued: the model sees it next, as text: images go with a new turn)"
          ))),
          Effect.catchTags({
            NoActiveTurn: () => startTurn(text),
            SteeringQueueFull: (e) => screen.line(`agent-loop: ${e.capacity} steering messages are already waiting; try again shortly`)
          })
        )

      const prompt = Effect.suspend(() => busy ? Effect.void : showPrompt)
      const say = (text: string) => Effect.andThen(screen.line(dim(clean(text))), prompt)

      const builtin = (name: string, args: string): Effect.Effect<void> => {
        switch (name) {
          case "exit":
            return Effect.asVoid(Deferred.succeed(quit, ExitCode.ok))
          case "help":
            return Effect.andThen(Effect.forEach(Slash.helpLines(settings.commands), (help) => screen.line(dim(clean(help)))), prompt)
          case "model":
            if (args === "") return say(`model ${model}`)
            model = args
            return say(`model ${model} for the next turns`)
          case "cost":
            return say(Slash.costLine(spent, turnCount))
          case "tools":
            return Effect.flatMap(registry.list, (tools) => say(tools.length === 0 ? "no tools are offered" : `tools: ${tools.map((t) => t.name).join(", ")}`))
          case "undo":
            if (busy) return screen.line(dim("(a turn is running: /undo after it)"))
            // a refusal is printed, and the chat goes on
            return undoLast(settings.dataDir, key).pipe(
              Effect.asVoid,
              Effect.catch((error) => screen.line(screen.err.red(`✗ ${clean(error.message)}`))),
              Effect.andThen(prompt),
              Effect.provideService(Screen, screen)
            )
          case "stop":
            return Effect.catchTag(loop.interruptHard(key), "NoActiveTurn", () => say("(no turn is running)"))
          default: {
            // followup
            if (args === "") return screen.line(dim("usage: /followup TEXT"))
            if (!screen.interactive) return startTurn(args)
            return Effect.catchTag(loop.injectFollowUp(key, args), "NoActiveTurn", () => startTurn(args))
          }
        }
      }

      const handle = (line: string): Effect.Effect<void> => {
        const text = line.trim()
        if (text === "") return busy ? Effect.void : showPrompt
        const parsed = Slash.parse(text, settings.commands)
        switch (parsed._tag) {
          case "Builtin":
            return builtin(parsed.name, parsed.args)
          case "Unknown":
            return screen.line(dim(`unknown command /${clean(parsed.name)}; /help lists them`))
          case "Custom":
            // chat offers one set of tools to every turn: a command that narrows them runs with `run`
            if (parsed.command.allowedTools !== undefined) {
              return say(`/${parsed.command.name} narrows the tools (allowed-tools): run it with agent-loop run /${parsed.command.name}`)
            }
            return startTurn(parsed.prompt, parsed.command.model)
          case "Text":
            return screen.interactive ? steer(text) : startTurn(text)
        }
      }

      const reader = Effect.gen(function*() {
        while (true) {
          const line = yield* input.next
          if (Option.isNone(line)) break
          yield* handle(line.value)
        }
        inputEnded = true
        if (!busy) yield* Deferred.succeed(quit, ExitCode.ok)
      })

      yield* CtrlC.install({
        sessionKey: key,
        cancelQuestions: input.cancelQuestions,
        onIdle: (repeated) =>
          repeated
            ? Effect.andThen(Effect.sync(() => exitWithin(ExitCode.interrupted)), Deferred.succeed(quit, ExitCode.interrupted))
            : screen.line(dim("(Ctrl-C again to quit, or /exit)"))
      })
      yield* screen.line(dim(`agent-loop chat · session ${key} · model ${clean(settings.model)} · /help for commands`))
      yield* showPrompt
      const working = yield* Effect.forkScoped(worker)
      yield* Effect.forkScoped(reader)
      const exitCode = yield* Deferred.await(quit)
      const active = yield* loop.activeTurn(key)
      if (active !== undefined) yield* Effect.catchTag(loop.interruptHard(key), "NoActiveTurn", () => Effect.void)
      // Once the worker is gone, the aborted turn has returned, as `flushed` requires.
      yield* Fiber.interrupt(working)
      if (active !== undefined) yield* sink.flushed(active.turnId)
      yield* warnDropped(sink)
      return exitCode
    })).pipe(Effect.provide(App.layer(settings)))
    if (code !== ExitCode.ok) return yield* fail("", code)
  }) satisfies Effect.Effect<void, unknown, Screen | App.Platform | ProviderKeys>
