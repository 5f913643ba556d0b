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
import { AgentLoop } from "../services/AgentLoop.ts"
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
import { exitWithin } from "./signals.ts"

/** The help of the chat's slash commands. */
const commandsHelp = [
  "/followup TEXT  run TEXT as a new turn after the current one",
  "/stop           abort the running turn (nothing of it is saved)",
  "/exit           quit (also Ctrl-D)",
  "Ctrl-C          interrupt: the model sums up; twice within 2 s aborts"
]

/** Runs the chat until /exit, end of input, or Ctrl-C twice at the prompt. */
export const chat = (flags: AgentFlags) =>
  Effect.gen(function*() {
    const settings = yield* Settings.resolve(flags)
    yield* Settings.announce(settings)
    const code = yield* Effect.scoped(Effect.gen(function*() {
      const screen = yield* Screen
      const loop = yield* AgentLoop
      const key = settings.sessionKey
      // up/down recall earlier inputs, of this chat and earlier ones, from a private file
      const input = yield* LineInput.makeEditing({ prompt: screen.openPrompt, historyFile: path.join(settings.dataDir, "chat-history.jsonl") })
      const sink = yield* attach(settings, screen.interactive ? input.ask : undefined)
      const turns = yield* Queue.unbounded<string>()
      const quit = yield* Deferred.make<number>()
      let busy = false
      let inputEnded = false
      const dim = screen.err.dim

      const showPrompt = screen.interactive ? screen.prompt(screen.err.bold("> ")) : Effect.void
      const startTurn = (text: string) =>
        Effect.andThen(Effect.sync(() => {
          busy = true
        }), Queue.offer(turns, text))

      /** A line with the images it mentions (see `images.ts`); one that cannot be sent is said why, and `undefined`. */
      const inputOf = (text: string) =>
        Effect.gen(function*() {
          const images = yield* mentionedImages(text, settings.workspace, settings.maxImageBytes)
          const input = images.length === 0 ? text : [{ type: "text", text } as const, ...images] as ReadonlyArray<ContentPart>
          const rejected = checkInput({
            maxImageBytes: settings.maxImageBytes,
            ...(settings.acceptsImages === undefined ? {} : { acceptsImages: settings.acceptsImages })
          }, settings.model, input)
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
        const input = yield* inputOf(yield* Queue.take(turns))
        if (input !== undefined) {
          const result = yield* loop.turn(key, input)
          yield* sink.flushed(result.turnId)
          if (result.error !== undefined && result.status !== "completed") yield* screen.line(screen.err.red(`✗ ${clean(result.error)}`))
          yield* Queue.offerAll(turns, result.followUps)
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

      const handle = (line: string): Effect.Effect<void> => {
        const text = line.trim()
        if (text === "") return busy ? Effect.void : showPrompt
        if (text === "/exit" || text === "/quit") return Effect.asVoid(Deferred.succeed(quit, ExitCode.ok))
        if (text === "/help") return Effect.andThen(Effect.forEach(commandsHelp, (help) => screen.line(dim(help))), busy ? Effect.void : showPrompt)
        if (text === "/stop") {
          return Effect.catchTag(loop.interruptHard(key), "NoActiveTurn", () => Effect.andThen(screen.line(dim("(no turn is running)")), showPrompt))
        }
        if (text === "/followup" || text.startsWith("/followup ")) {
          const followUp = text.slice("/followup".length).trim()
          if (followUp === "") return screen.line(dim("usage: /followup TEXT"))
          if (!screen.interactive) return startTurn(followUp)
          return Effect.catchTag(loop.injectFollowUp(key, followUp), "NoActiveTurn", () => startTurn(followUp))
        }
        if (text.startsWith("/")) return screen.line(dim(`unknown command ${text.split(" ")[0]}; /help lists them`))
        return screen.interactive ? steer(text) : startTurn(text)
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
