/**
 * `agent-loop chat`: a conversation on stdin. Lines wait for their turn on a line of the chat's own,
 * run by the session runner's drains (`programs/internal/sessionRunner.ts`): follow-ups run as
 * turns right after the one that queued them, then the lines that waited. Ctrl-C interrupts
 * gracefully, twice aborts; at the prompt, twice quits.
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
 *
 * The chat's session can change while it runs (`/clear`, `/resume`), only between turns: Ctrl-C,
 * steering and the commands act on the current one, read when they act.
 */
import * as path from "node:path"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import { checkInput } from "../../domain/Config.ts"
import type { ContentPart } from "../../domain/Message.ts"
import * as Usage from "../../domain/Usage.ts"
import * as SessionRunner from "../../programs/internal/sessionRunner.ts"
import { AgentLoop } from "../../services/AgentLoop.ts"
import { SessionStore } from "../../services/SessionStore.ts"
import { ToolRegistry } from "../../services/ToolRegistry.ts"
import * as CustomCommands from "../config/customCommands.ts"
import { newSessionKey, writeLastSession } from "../config/dataDir.ts"
import { imageMentions, mentionedImages } from "../input/images.ts"
import * as LineInput from "../input/lineInput.ts"
import * as Display from "../output/display.ts"
import * as Approval from "../permissions/approval.ts"
import type { ProviderKeys } from "../providers/providerKeys.ts"
import * as App from "../runtime/app.ts"
import { listLines } from "../sessions/listing.ts"
import * as Picker from "../sessions/sessionPicker.ts"
import { recordWorkspace, remember } from "../sessions/workspace.ts"
import type { AgentFlags } from "../settings/flags.ts"
import * as Settings from "../settings/settings.ts"
import * as CtrlC from "../terminal/ctrlC.ts"
import { ExitCode, fail } from "../terminal/failure.ts"
import { clean } from "../terminal/safeText.ts"
import { Screen } from "../terminal/screen.ts"
import { exitWithin } from "../terminal/signals.ts"
import * as Slash from "./slashCommands.ts"
import { undoLast } from "./undo.ts"

/** Runs the chat until /exit, end of input, or Ctrl-C twice at the prompt. */
export const chat = (flags: AgentFlags, inspect: Option.Option<number> = Option.none()) =>
  Effect.gen(function*() {
    const settings = yield* Settings.resolve(flags)
    yield* Settings.announce(settings)
    const code = yield* Effect.scoped(Effect.gen(function*() {
      const screen = yield* Screen
      const loop = yield* AgentLoop
      const registry = yield* ToolRegistry
      const store = yield* SessionStore
      // what recording a session's workspace and `--continue`'s pointer need
      const services = yield* Effect.context<SessionStore | FileSystem.FileSystem>()
      // the inspector's code loads only when asked for
      if (Option.isSome(inspect)) yield* Effect.flatMap(Effect.promise(() => import("./inspect.ts")), (m) => m.inspectBeside(inspect))
      // `/clear` and `/resume` change it between turns
      let key = settings.sessionKey
      // up/down recall earlier inputs, of this chat and earlier ones, from a private file
      const input = yield* LineInput.makeEditing({ prompt: screen.openPrompt, historyFile: path.join(settings.dataDir, "chat-history.jsonl") })
      const sink = yield* Display.start(settings)
      yield* Approval.register(settings, screen, screen.interactive ? input.ask : undefined)
      yield* remember(settings)
      // the lines waiting for their turn; a drain runs them, and the follow-ups each turn leaves first
      const backlog = SessionRunner.makeLine()
      const scope = yield* Effect.scope
      let draining: Fiber.Fiber<void, unknown> | undefined
      const quit = yield* Deferred.make<number>()
      let inputEnded = false
      // `/model` changes it for the turns started after; `/cost` sums the turns' usage
      let model = settings.model
      let spent = Usage.empty
      let turnCount = 0
      const dim = screen.err.dim

      const showPrompt = screen.interactive ? screen.prompt(screen.err.bold("> ")) : Effect.void

      /** A line with the images it mentions (see `images.ts`); one that cannot be sent is said why, and `undefined`. */
      const inputOf = (text: string, turnModel: string) =>
        Effect.gen(function*() {
          const images = yield* mentionedImages(text, settings.workspace, settings.maxImageBytes, settings.permissions.pathRule)
          const input = images.length === 0 ? text : [{ type: "text", text } as const, ...images] as ReadonlyArray<ContentPart>
          const rejected = checkInput({
            maxImageBytes: settings.maxImageBytes,
            ...(settings.acceptsImages === undefined ? {} : { acceptsImages: settings.acceptsImages })
          }, turnModel, input)
          if (rejected) return yield* Effect.fail(rejected)
          return input
        }).pipe(Effect.catch((error) => Effect.as(screen.line(screen.err.red(`✗ ${clean(error.message)}`)), undefined)))

      /** With nothing more to run: idle, and the prompt again (or the end, once input has ended). */
      const idleIfDone = Effect.suspend(() => {
        if (backlog.busy()) return Effect.void
        return inputEnded ? Deferred.succeed(quit, ExitCode.ok) : showPrompt
      })

      /** One turn of a drain: the line's images, the model and tools it asks for, its end shown; `undefined` when it cannot be sent. */
      const turnOf = (step: SessionRunner.Step) =>
        Effect.gen(function*() {
          const turnModel = step.message.model ?? model
          const input = yield* inputOf(step.message.text, turnModel)
          if (input === undefined) return undefined
          const result = yield* loop.turn(key, input, { model: turnModel, ...(step.message.tools === undefined ? {} : { tools: step.message.tools }) })
          spent = Usage.add(spent, result.usage)
          turnCount++
          yield* sink.flushed(result.turnId)
          if (result.error !== undefined && result.status !== "completed") yield* screen.line(screen.err.red(`✗ ${clean(result.error)}`))
          return result
        })

      /** A line (and the model and tools a custom command asks for) for a turn: after those waiting, or now. */
      const startTurn = (text: string, command?: Omit<SessionRunner.Queued, "text">) =>
        Effect.suspend(() => {
          const first = backlog.offer({ text, ...command })
          if (first === undefined) return Effect.void
          const run = Effect.andThen(SessionRunner.drain(first, backlog, turnOf), idleIfDone)
          return Effect.map(Effect.forkIn(Effect.provideContext(run, services), scope), (fiber) => {
            draining = fiber
          })
        })

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

      const prompt = Effect.suspend(() => backlog.busy() ? Effect.void : showPrompt)
      const say = (text: string) => Effect.andThen(screen.line(dim(clean(text))), prompt)
      const failed = (error: { readonly message: string }) => Effect.andThen(screen.line(screen.err.red(`✗ ${clean(error.message)}`)), prompt)
      /** What a command that needs the session to itself says while a turn runs. */
      const afterTurn = (name: string) => screen.line(dim(`(a turn is running: /${name} after it)`))

      /** Makes `next` the chat's session: the one left keeps its workspace, `--continue` goes to `next`. */
      const switchTo = (next: string, said: string) =>
        Effect.gen(function*() {
          if (settings.persist) {
            yield* recordWorkspace(settings.workspace, key)
            yield* writeLastSession(settings.dataDir, settings.workspace, next)
          }
          key = next
          spent = Usage.empty
          turnCount = 0
          yield* say(said)
        })

      /** Summarises the session now; the renderer says how many messages went, this says the rest. */
      const compact = Effect.scoped(Effect.gen(function*() {
        yield* screen.line(dim("(summarising the conversation…)"))
        const summarized = yield* sink.watch((event) => event._tag === "SessionSummarize" && event.sessionKey === key)
        // everything so far: the next turns start from the summary alone
        const outcome = yield* Effect.result(loop.compact(key, { keepMessages: 0, model }))
        if (outcome._tag === "Failure") return yield* failed(outcome.failure)
        if (outcome.success.summarized === 0) return yield* say("nothing to summarise yet")
        yield* summarized
        yield* prompt
      }))

      /** The sessions of this workspace, this one among them (its workspace is recorded first). */
      const workspaceSessions = Effect.gen(function*() {
        if (settings.persist) yield* recordWorkspace(settings.workspace, key)
        return yield* store.list
      })

      const sessions = Effect.gen(function*() {
        const listing = listLines(yield* workspaceSessions, { _tag: "workspace", workspace: settings.workspace }, { last: key, style: screen.err })
        if (listing._tag === "Empty") return yield* say(listing.message)
        for (const line of listing.lines) yield* screen.line(line)
        yield* say("(* this chat's session; /resume KEY continues another)")
      })

      const resume = (wanted: string) =>
        Effect.gen(function*() {
          if (wanted === key) return yield* say(`already in session ${wanted}`)
          let chosen = wanted
          if (wanted === "") {
            if (input.borrowKeys === undefined) return yield* say("usage: /resume KEY (/sessions lists them)")
            const picked = yield* Picker.pickFrom(
              (yield* workspaceSessions).filter((info) => info.sessionKey !== key),
              settings.workspace,
              input.borrowKeys,
              (text) => process.stderr.write(text)
            )
            if (picked === undefined) return yield* say("no session picked")
            chosen = picked
          }
          const info = (yield* store.list).find((each) => each.sessionKey === chosen)
          if (info === undefined || info.problem !== undefined) {
            return yield* say(info === undefined ? `no saved session ${chosen} (/sessions lists them)` : `session ${chosen} cannot be read: ${info.problem}`)
          }
          yield* switchTo(chosen, `session ${chosen}: ${Picker.describe(info, settings.workspace).trim()}`)
        })

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
            if (backlog.busy()) return afterTurn(name)
            // a refusal is printed, and the chat goes on
            return undoLast(settings.dataDir, key).pipe(
              Effect.asVoid,
              Effect.catch((error) => screen.line(screen.err.red(`✗ ${clean(error.message)}`))),
              Effect.andThen(prompt),
              Effect.provideService(Screen, screen)
            )
          case "compact":
            return backlog.busy() ? afterTurn(name) : compact
          case "clear":
            if (backlog.busy()) return afterTurn(name)
            return Effect.flatMap(newSessionKey, (next) => switchTo(next, `new session ${next}; the last one stays saved: /resume ${key}`)).pipe(
              Effect.provideContext(services)
            )
          case "sessions":
            return sessions.pipe(Effect.catch(failed), Effect.provideContext(services))
          case "resume":
            return backlog.busy() ? afterTurn(name) : resume(args).pipe(Effect.catch(failed), Effect.provideContext(services))
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
        if (text === "") return backlog.busy() ? Effect.void : showPrompt
        const parsed = Slash.parse(text, settings.commands)
        switch (parsed._tag) {
          case "Builtin":
            return builtin(parsed.name, parsed.args)
          case "Unknown":
            return screen.line(dim(`unknown command /${clean(parsed.name)}; /help lists them`))
          case "Custom":
            return Effect.flatMap(registry.list, (registered) => {
              const tools = CustomCommands.turnTools(parsed.command, registered)
              return startTurn(parsed.prompt, {
                ...(parsed.command.model === undefined ? {} : { model: parsed.command.model }),
                ...(tools === undefined ? {} : { tools })
              })
            })
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
        if (!backlog.busy()) yield* Deferred.succeed(quit, ExitCode.ok)
      })

      // the session left last gets its workspace recorded, as `remember` does for the first
      if (settings.persist) yield* Effect.addFinalizer(() => Effect.suspend(() => key === settings.sessionKey ? Effect.void : recordWorkspace(settings.workspace, key)))
      yield* CtrlC.install({
        sessionKey: () => key,
        cancelQuestions: input.cancelQuestions,
        onIdle: (repeated) =>
          repeated
            ? Effect.andThen(Effect.sync(() => exitWithin(ExitCode.interrupted)), Deferred.succeed(quit, ExitCode.interrupted))
            : screen.line(dim("(Ctrl-C again to quit, or /exit)"))
      })
      yield* screen.line(dim(`agent-loop chat · session ${key} · model ${clean(settings.model)} · /help for commands`))
      yield* showPrompt
      yield* Effect.forkScoped(reader)
      const exitCode = yield* Deferred.await(quit)
      const active = yield* loop.activeTurn(key)
      if (active !== undefined) yield* Effect.catchTag(loop.interruptHard(key), "NoActiveTurn", () => Effect.void)
      // Once the drain is gone, the aborted turn has returned, as `flushed` requires; what waited is dropped.
      if (draining !== undefined) yield* Fiber.interrupt(draining)
      if (active !== undefined) yield* sink.flushed(active.turnId)
      yield* Display.warnDropped(sink)
      return exitCode
    })).pipe(Effect.provide(App.layer(settings)))
    if (code !== ExitCode.ok) return yield* fail("", code)
  }) satisfies Effect.Effect<void, unknown, Screen | App.Platform | ProviderKeys>
