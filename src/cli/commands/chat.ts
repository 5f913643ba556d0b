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
 *
 * `make` opens the chat: it yields the services once, keeps what changes in one record (`State`),
 * and names a step for each kind of line and each command.
 */
import * as path from "node:path"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import { checkInput } from "../../domain/Config.ts"
import type { ContentPart } from "../../domain/Message.ts"
import { EXIT_PLAN_MODE } from "../../domain/Tool.ts"
import * as Usage from "../../domain/Usage.ts"
import * as SessionRunner from "../../programs/internal/sessionRunner.ts"
import { AgentLoop } from "../../services/AgentLoop.ts"
import { SessionStore } from "../../services/SessionStore.ts"
import { ToolRegistry } from "../../services/ToolRegistry.ts"
import * as CustomCommands from "../config/customCommands.ts"
import { chatHistoryFile, newSessionKey, writeLastSession } from "../config/dataDir.ts"
import { imageMentions, mentionedImages } from "../input/images.ts"
import * as LineInput from "../input/lineInput.ts"
import * as PromptSyntax from "../input/promptSyntax.ts"
import * as Display from "../output/display.ts"
import { replay } from "../output/replay.ts"
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
import * as ChatModes from "./chatModes.ts"
import * as CommandPrompt from "./commandPrompt.ts"
import * as PromptActions from "./promptActions.ts"
import { rewind as rewindTo } from "./rewind.ts"
import * as Slash from "./slashCommands.ts"
import { undoLast } from "./undo.ts"

/** How soon a second Esc at an empty prompt opens `/rewind`. */
const ESC_ESC_MS = 800

/** Runs the chat until /exit, end of input, or Ctrl-C twice at the prompt. */
export const chat = (flags: AgentFlags, inspect: Option.Option<number> = Option.none()) =>
  Effect.gen(function*() {
    const settings = yield* Settings.resolve(flags)
    yield* Settings.announce(settings)
    // SessionStart hooks are told a session taken up again is resumed
    if (flags.continue || Option.isSome(flags.resume)) settings.hookBridge.startsAs(settings.sessionKey, "resume")
    const resumed = flags.continue || Option.isSome(flags.resume)
    const code = yield* Effect.scoped(Effect.flatMap(make(settings, inspect, resumed), (opened) => opened.run)).pipe(Effect.provide(App.layer(settings)))
    if (code !== ExitCode.ok) return yield* fail("", code)
  }) satisfies Effect.Effect<void, unknown, Screen | App.Platform | ProviderKeys>

/**
 * What the chat keeps between lines, changed only by the steps of `make`. Fibers interleave only
 * at yield points, so each step's change is whole.
 */
interface State {
  /** The chat's session: `/clear` and `/resume` change it, only between turns. */
  sessionKey: string
  /** The model of the turns started from now on (`/model`). */
  model: string
  /** The usage of the session's turns in this chat, and how many ran (`/cost`); a new session starts both again. */
  spent: Usage.Usage
  turns: number
  /** The drain running the lines that waited (and the follow-ups of their turns), once one has started. */
  draining: Fiber.Fiber<unknown, unknown> | undefined
  /** Stdin has ended: the chat ends once nothing more runs. */
  inputEnded: boolean
  /** What `!cmd` lines ran, for the next message. */
  pending: Array<string>
  /** The `!cmd` running now, which Esc stops. */
  shell: Fiber.Fiber<string | undefined> | undefined
  /** The memory file `# note` lines go to, once known. */
  memoryFile: string | undefined
  /** When Esc was last pressed at an empty prompt with no turn running: a second press soon after opens `/rewind`. */
  lastIdleEscape: number
}

/**
 * A chat on the resolved settings, for the scope: its services, yielded once; its line input, event
 * display, approval hook and session pointer; its state; and the steps that act on a typed line.
 * `run` holds the conversation and gives the exit code.
 */
const make = Effect.fnUntraced(function*(settings: Settings.CliSettings, inspect: Option.Option<number>, resumed: boolean) {
  const screen = yield* Screen
  const loop = yield* AgentLoop
  const registry = yield* ToolRegistry
  const store = yield* SessionStore
  // what recording a session's workspace and `--continue`'s pointer need, given to the steps that do either
  const services = yield* Effect.context<SessionStore | FileSystem.FileSystem>()
  const scope = yield* Effect.scope
  // the inspector's code loads only when asked for
  if (Option.isSome(inspect)) yield* Effect.flatMap(Effect.promise(() => import("./inspect.ts")), (m) => m.inspectBeside(inspect))
  // up/down recall earlier inputs, of this chat and earlier ones, from a private file
  // Esc stops the running turn now (`stopNow`): the key is queued here and handled in the chat's scope
  const escapes = yield* Queue.unbounded<string>()
  // Ctrl-O shows the last tool call whole (`expandLast`), queued the same way
  const expands = yield* Queue.unbounded<void>()
  // the permission mode, the status line, notifications and Tab completion (`chatModes.ts`)
  const view = ChatModes.make(settings, screen, { model: () => state.model, spent: () => state.spent, sessionKey: () => state.sessionKey })
  const input = yield* LineInput.makeEditing({
    prompt: screen.openPrompt,
    historyFile: chatHistoryFile(settings.dataDir, settings.workspace),
    keys: view.keys,
    onEscape: (line) => Queue.offerUnsafe(escapes, line),
    onExpand: () => Queue.offerUnsafe(expands, undefined)
  })
  const sink = yield* Display.start(settings)
  yield* Approval.register(settings, screen, screen.interactive ? input.ask : undefined, undefined, view.policyFor)
  yield* view.start(screen.interactive ? input.ask : undefined)
  yield* remember(settings)
  // the lines waiting for their turn; a drain runs them, and the follow-ups each turn leaves first
  const backlog = SessionRunner.makeLine()
  const quit = yield* Deferred.make<number>()
  const state: State = { sessionKey: settings.sessionKey, model: settings.model, spent: Usage.empty, turns: 0, draining: undefined, inputEnded: false, pending: [], shell: undefined, memoryFile: undefined, lastIdleEscape: 0 }
  // the session left last gets its workspace recorded, as `remember` does for the first
  if (settings.persist) {
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => state.sessionKey === settings.sessionKey ? Effect.void : recordWorkspace(settings.workspace, state.sessionKey))
    )
  }

  const dim = screen.err.dim
  const showPrompt = screen.interactive ? Effect.andThen(screen.prompt(screen.err.bold("> ")), view.statusLine) : Effect.void
  /** The prompt again, unless a turn runs: its end shows the prompt. */
  const prompt = Effect.suspend(() => backlog.busy() ? Effect.void : showPrompt)
  const say = (text: string) => Effect.andThen(screen.line(dim(clean(text))), prompt)
  const failed = (error: { readonly message: string }) => Effect.andThen(screen.line(screen.err.red(`✗ ${clean(error.message)}`)), prompt)
  /** What a command that needs the session to itself says while a turn runs. */
  const afterTurn = (name: string) => screen.line(dim(`(a turn is running: /${name} after it)`))

  /**
   * A typed message as the model gets it: the files it mentions after it (`promptSyntax.ts`), and
   * before it what `!cmd` lines ran since the last message (taken only once the message can go).
   */
  const withFiles = (typed: string) =>
    PromptActions.withMentionedFiles(typed, { workspace: settings.workspace, permissions: settings.permissions, registry, sessionKey: state.sessionKey }).pipe(
      Effect.mapError((message) => ({ _tag: "Unreadable" as const, message })),
      Effect.provideContext(services)
    )
  /** Prompts of custom commands: their `@` files are in them already (`commandPrompt.ts`). */
  const prepared = new Set<string>()
  const composed = (typed: string) =>
    Effect.map(prepared.delete(typed) ? Effect.succeed(typed) : withFiles(typed), (text) => [...state.pending.splice(0), text].join("\n\n"))

  /** A line with the images it mentions (`images.ts`) and the files (`composed`); when it cannot be sent, the user is told why, and `undefined`. */
  const inputOf = Effect.fnUntraced(
    function*(typed: string, model: string) {
      const images = yield* mentionedImages(typed, settings.workspace, settings.maxImageBytes, settings.permissions.pathRule)
      const text = yield* composed(typed)
      const content = images.length === 0 ? text : [{ type: "text", text } as const, ...images] as ReadonlyArray<ContentPart>
      const rejected = checkInput({
        maxImageBytes: settings.maxImageBytes,
        ...(settings.acceptsImages === undefined ? {} : { acceptsImages: settings.acceptsImages })
      }, model, content)
      if (rejected) return yield* Effect.fail(rejected)
      return content
    },
    Effect.catch((error) => Effect.as(screen.line(screen.err.red(`✗ ${clean(error.message)}`)), undefined))
  )

  /** One turn of a drain, on the session and model of the moment it starts; `undefined` when its line cannot be sent. */
  const turnOf = Effect.fnUntraced(function*(step: SessionRunner.Step) {
    const model = step.message.model ?? state.model
    const content = yield* inputOf(step.message.text, model)
    if (content === undefined) return undefined
    const allow = step.message.allow
    const result = yield* loop.turn(state.sessionKey, content, {
      model,
      ...(step.message.tools === undefined ? {} : { tools: step.message.tools }),
      ...(view.planning() ? { planMode: true } : {})
    }).pipe(
      allow === undefined ? (turn) => turn : settings.permissions.withAllowed(allow.rules, allow.source)
    )
    state.spent = Usage.add(state.spent, result.usage)
    state.turns++
    // the turn's end is shown before anything that follows it: the next turn, the prompt
    yield* sink.flushed(result.turnId)
    yield* view.turnEnded(result)
    if (result.error !== undefined && result.status !== "completed") yield* screen.line(screen.err.red(`✗ ${clean(result.error)}`))
    return result
  })

  /** After a drain: the prompt again, or the chat's end once input has ended. */
  const idleIfDone = Effect.suspend(() => {
    if (backlog.busy()) return Effect.void
    return state.inputEnded ? Deferred.succeed(quit, ExitCode.ok) : showPrompt
  })

  /** A line for a turn, with the model and tools a custom command asks for: it waits behind the running drain, or starts one. */
  const startTurn = Effect.fnUntraced(function*(text: string, command?: Omit<SessionRunner.Queued, "text">) {
    const first = backlog.offer({ text, ...command })
    if (first === undefined) return
    // the drain outlives the line that started it: it runs in the chat's scope, on the chat's services
    const drain = Effect.andThen(SessionRunner.drain(first, backlog, turnOf), idleIfDone)
    state.draining = yield* Effect.forkIn(Effect.provideContext(drain, services), scope)
  })

  /** A line typed while a turn may run: the model sees it next; with no turn to steer, it starts the next turn. */
  const steer = Effect.fnUntraced(
    function*(text: string) {
      const message = yield* withFiles(text)
      // the outputs of `!cmd` lines go with it, and stay for the next message when it cannot steer
      const taken = state.pending.splice(0)
      yield* Effect.tapError(
        loop.injectSteering(state.sessionKey, [...taken, message].join("\n\n")),
        () => Effect.sync(() => state.pending.unshift(...taken))
      )
      yield* screen.line(dim(
        imageMentions(text).length === 0
          ? "(steering queued: the model sees it next)"
          : "(steering queued: the model sees it next, as text: images go with a new turn)"
      ))
    },
    (steered, text) =>
      Effect.catchTags(steered, {
        NoActiveTurn: () => startTurn(text),
        Unreadable: (error) => failed(error),
        SteeringQueueFull: (e) => screen.line(`agent-loop: ${e.capacity} steering messages are already waiting; try again shortly`)
      })
  )

  /** `/followup TEXT`: a turn after the running one. Piped, or with no turn running, it is simply the next turn. */
  const followUp = (text: string) => {
    if (text === "") return screen.line(dim("usage: /followup TEXT"))
    if (!screen.interactive) return startTurn(text)
    return Effect.catchTag(loop.injectFollowUp(state.sessionKey, text), "NoActiveTurn", () => startTurn(text))
  }

  /** `/model NAME`: the model of the turns started from now on; bare, the model now. */
  const chooseModel = Effect.fnUntraced(function*(name: string) {
    if (name === "") return yield* say(`model ${state.model}`)
    state.model = name
    yield* say(`model ${state.model} for the next turns`)
  })

  /** Makes `next` the chat's session: the one left keeps its workspace, `--continue` goes to `next`, and `/cost` starts again. */
  const switchTo = Effect.fnUntraced(function*(next: string, said: string) {
    // the session left keeps no command running behind the one switched to (as the chat's end stops them)
    if (registry.jobs !== undefined && next !== state.sessionKey) {
      const jobs = registry.jobs
      const left = state.sessionKey
      const running = (yield* jobs.list(left)).filter((job) => job.state._tag === "Running")
      yield* Effect.forEach(running, (job) => Effect.ignore(jobs.kill(left, job.id)), { discard: true })
      if (running.length > 0) yield* screen.line(dim(`(stopped ${running.length} background command${running.length === 1 ? "" : "s"} of session ${left})`))
    }
    if (settings.persist) {
      yield* recordWorkspace(settings.workspace, state.sessionKey)
      yield* writeLastSession(settings.dataDir, settings.workspace, next)
    }
    state.sessionKey = next
    state.spent = Usage.empty
    state.turns = 0
    yield* say(said)
  })

  /** `/clear`: a new session; the one left stays saved. */
  const clear = Effect.fnUntraced(function*() {
    const next = yield* newSessionKey
    // as Claude Code names them to the SessionEnd and SessionStart hooks; the session left ends now
    settings.hookBridge.startsAs(next, "clear")
    yield* settings.hookBridge.endNow(state.sessionKey, "clear")
    yield* switchTo(next, `new session ${next}; the last one stays saved: /resume ${state.sessionKey}`)
  })

  /** `/compact`: summarises the session now, keeping nothing; the renderer says how many messages went, this says the rest. */
  const compact = Effect.fnUntraced(function*() {
    yield* screen.line(dim("(summarising the conversation…)"))
    const summarized = yield* sink.watch((event) => event._tag === "SessionSummarize" && event.sessionKey === state.sessionKey)
    // everything so far: the next turns start from the summary alone
    const outcome = yield* Effect.result(loop.compact(state.sessionKey, { keepMessages: 0, model: state.model }))
    if (outcome._tag === "Failure") return yield* failed(outcome.failure)
    if (outcome.success.summarized === 0) return yield* say("nothing to summarise yet")
    yield* summarized
    yield* prompt
  }, Effect.scoped)

  /** `/undo`: puts back what the session's last turn wrote; a refusal is printed, and the chat goes on. */
  const undo = Effect.fnUntraced(
    function*() {
      yield* undoLast(settings.dataDir, state.sessionKey)
    },
    Effect.catch((error) => screen.line(screen.err.red(`✗ ${clean(error.message)}`))),
    Effect.andThen(prompt),
    Effect.provideService(Screen, screen)
  )

  /** The sessions of this workspace, this one among them: its workspace is recorded first. */
  const workspaceSessions = Effect.fnUntraced(function*() {
    if (settings.persist) yield* recordWorkspace(settings.workspace, state.sessionKey)
    return yield* store.list
  })

  /** `/sessions`: this workspace's sessions, this chat's marked. */
  const listSessions = Effect.fnUntraced(function*() {
    const listing = listLines(yield* workspaceSessions(), { _tag: "workspace", workspace: settings.workspace }, { last: state.sessionKey, style: screen.err })
    if (listing._tag === "Empty") return yield* say(listing.message)
    for (const line of listing.lines) yield* screen.line(line)
    yield* say("(* this chat's session; /resume KEY continues another)")
  })

  /** The session a bare `/resume` picks from this workspace's others; `undefined`, the user told why, when none is. */
  const pick = Effect.fnUntraced(function*() {
    if (input.borrowKeys === undefined) return yield* Effect.as(say("usage: /resume KEY (/sessions lists them)"), undefined)
    const picked = yield* Picker.pickFrom(
      (yield* workspaceSessions()).filter((info) => info.sessionKey !== state.sessionKey),
      settings.workspace,
      input.borrowKeys,
      (text) => process.stderr.write(text)
    )
    if (picked === undefined) yield* say("no session picked")
    return picked
  })

  /** `/resume [KEY]`: continues another saved session, the one named or the one picked. */
  const resume = Effect.fnUntraced(function*(wanted: string) {
    if (wanted === state.sessionKey) return yield* say(`already in session ${wanted}`)
    const chosen = wanted === "" ? yield* pick() : wanted
    if (chosen === undefined) return
    const info = (yield* store.list).find((each) => each.sessionKey === chosen)
    if (info === undefined || info.problem !== undefined) {
      return yield* say(info === undefined ? `no saved session ${chosen} (/sessions lists them)` : `session ${chosen} cannot be read: ${info.problem}`)
    }
    settings.hookBridge.startsAs(chosen, "resume")
    // where the session was, then which it is, just above the prompt
    yield* replay(screen, yield* store.log(chosen))
    yield* switchTo(chosen, `session ${chosen}: ${Picker.describe(info, settings.workspace).trim()}`)
  })

  /** `/rewind [N]` (and Esc Esc at an empty prompt): the conversation and the files back to before a message of this session. */
  const rewind = (wanted: string) =>
    rewindTo(wanted, { screen, dataDir: settings.dataDir, workspace: settings.workspace, sessionKey: state.sessionKey, keys: input.borrowKeys }).pipe(
      // the message rewound to is offered again at the prompt, to edit and send (one line only)
      Effect.flatMap((chosen) => Effect.andThen(prompt, Effect.sync(() => chosen !== undefined && input.prefill?.(chosen.text)))),
      Effect.catch(failed),
      Effect.provideContext(services)
    )

  /** `/jobs`: the background commands of this chat's session. */
  const jobs = Effect.suspend(() =>
    registry.jobs === undefined ? say("no background commands here") : Effect.flatMap(registry.jobs.list(state.sessionKey), (listed) =>
      listed.length === 0
        ? say("no background commands (exec with background: true starts one)")
        : Effect.andThen(
          Effect.forEach(Slash.jobLines(listed, Date.now()), (line) => screen.line(line), { discard: true }),
          say("(they are stopped when the chat ends)")
        ))
  )

  /** A `!cmd` or `# note` typed at the prompt (`promptSyntax.ts`). */
  const special = (line: PromptSyntax.Special): Effect.Effect<void> => {
    if (line._tag === "Shell") {
      return Effect.gen(function*() {
        // in a fiber of its own, so that Esc can stop it (the command's processes are killed)
        const shell = yield* Effect.forkChild(PromptActions.runShell(line.command, {
          registry,
          permissions: settings.permissions,
          screen,
          ask: screen.interactive ? input.ask : undefined,
          sessionKey: state.sessionKey
        }))
        state.shell = shell
        const exit = yield* Fiber.await(shell)
        state.shell = undefined
        if (exit._tag === "Failure") yield* screen.line(dim("⏹ stopped: the command was killed; nothing of it goes with your next message"))
        else if (exit.value !== undefined) state.pending.push(exit.value)
        yield* prompt
      })
    }
    return Effect.gen(function*() {
      state.memoryFile ??= yield* PromptActions.memoryFile(settings.workspace, screen, input.ask)
      if (state.memoryFile === undefined) return yield* say("(note not saved: no memory file chosen)")
      yield* PromptActions.appendNote(state.memoryFile, line.note)
      yield* say(`(noted in ${path.relative(settings.workspace, state.memoryFile)})`)
    }).pipe(Effect.catch((error) => failed({ message: String(error) })), Effect.provideContext(services))
  }

  /** A built-in command (`slashCommands.ts`); those that need the session to themselves wait for the running turn. */
  const builtin = (name: string, args: string): Effect.Effect<void> => {
    switch (name) {
      case "exit":
        return Effect.suspend(() => {
          settings.hookBridge.endsFor(state.sessionKey, "prompt_input_exit")
          return Effect.asVoid(Deferred.succeed(quit, ExitCode.ok))
        })
      case "help":
        return Effect.andThen(Effect.forEach(Slash.helpLines(settings.commands), (help) => screen.line(dim(clean(help)))), prompt)
      case "model":
        return chooseModel(args)
      case "cost":
        return say(Slash.costLine(state.spent, state.turns))
      case "tools":
        return Effect.flatMap(registry.list, (all) => {
          // in plan mode the read-only ones and exit_plan_mode, else all but exit_plan_mode
          const tools = all.filter((t) => view.planning() ? t.readOnly || t.name === EXIT_PLAN_MODE : t.name !== EXIT_PLAN_MODE)
          return say(tools.length === 0 ? "no tools are offered" : `tools: ${tools.map((t) => t.name).join(", ")}`)
        })
      case "undo":
        return backlog.busy() ? afterTurn(name) : undo()
      case "compact":
        return backlog.busy() ? afterTurn(name) : compact()
      case "clear":
        return backlog.busy() ? afterTurn(name) : clear().pipe(Effect.provideContext(services))
      case "sessions":
        return listSessions().pipe(Effect.catch(failed), Effect.provideContext(services))
      case "resume":
        return backlog.busy() ? afterTurn(name) : resume(args).pipe(Effect.catch(failed), Effect.provideContext(services))
      case "rewind":
        return backlog.busy() ? afterTurn(name) : rewind(args)
      case "jobs":
        return jobs
      case "plan":
        // `/plan TEXT`: plan mode, and TEXT as the next turn
        return Effect.andThen(view.setMode("plan"), args === "" ? prompt : startTurn(args))
      case "stop":
        return Effect.catchTag(loop.interruptHard(state.sessionKey), "NoActiveTurn", () => say("(no turn is running)"))
      default:
        return followUp(args)
    }
  }

  /** What a typed line asks for, done: a command, or text that steers the running turn (on a terminal) or is the next turn. */
  const handle = (line: string): Effect.Effect<void> => {
    const text = line.trim()
    if (text === "") return backlog.busy() ? Effect.void : showPrompt
    const typed = screen.interactive ? PromptSyntax.special(text, input.wasPasted?.(line) ?? false) : undefined
    if (typed !== undefined) return special(typed)
    const parsed = Slash.parse(text, settings.commands)
    switch (parsed._tag) {
      case "Builtin":
        return builtin(parsed.name, parsed.args)
      case "Unknown":
        return screen.line(dim(`unknown command /${clean(parsed.name)}; /help lists them`))
      case "Custom": {
        const command = parsed.command
        // its `!` lines run and its `@` files are read when it is typed
        return Effect.flatMap(registry.list, (registered) =>
          CommandPrompt.make(command, parsed.args, settings).pipe(
            Effect.provideService(ToolRegistry, registry),
            Effect.matchEffect({
              onFailure: (message) => failed({ message }),
              onSuccess: (prompt) => {
                const tools = CustomCommands.turnTools(command, registered)
                prepared.add(prompt)
                return startTurn(prompt, {
                  ...(command.model === undefined ? {} : { model: command.model }),
                  ...(tools === undefined ? {} : { tools }),
                  ...(command.allowedTools === undefined ? {} : { allow: { rules: command.allowedTools, source: CommandPrompt.allowedSource(command) } })
                })
              }
            })
          ))
      }
      case "Text":
        return screen.interactive ? steer(text) : startTurn(text)
    }
  }

  /** Stdin, line by line, to its end; then the chat ends once nothing more runs. */
  const readLines = Effect.fnUntraced(function*() {
    while (true) {
      const line = yield* input.next
      if (Option.isNone(line)) break
      yield* handle(line.value)
    }
    state.inputEnded = true
    settings.hookBridge.endsFor(state.sessionKey, "prompt_input_exit")
    if (!backlog.busy()) yield* Deferred.succeed(quit, ExitCode.ok)
  })

  /**
   * Esc: the running turn stops now (`interruptNow`): its model call and tools are cancelled, what
   * it did is kept, and its end brings the prompt back; an open approval question is answered no.
   */
  const stopNow = (line: string) =>
    Effect.gen(function*() {
      if (state.shell !== undefined) return yield* Fiber.interrupt(state.shell)
      if (backlog.busy() || line !== "") return yield* stopTurn
      const now = Date.now()
      const twice = now - state.lastIdleEscape < ESC_ESC_MS
      state.lastIdleEscape = twice ? 0 : now
      if (twice) {
        yield* screen.line("")
        yield* rewind("")
      }
    })
  /** Ctrl-O: the last tool call whole (its diff unfolded, all it printed), then the prompt again. */
  const expandLast = Effect.suspend(() => {
    const lines = sink.expanded()
    if (lines.length === 0) return say("(no tool call has ended yet: Ctrl-O shows the last one whole)")
    return Effect.andThen(
      Effect.andThen(view.clearStatus, Effect.andThen(screen.line(""), Effect.forEach(lines, (line) => screen.line(line), { discard: true }))),
      prompt
    )
  })
  const stopTurn = Effect.suspend(() =>
    Effect.andThen(
      input.cancelQuestions,
      loop.interruptNow(state.sessionKey).pipe(
        Effect.andThen(screen.line(dim("⏹ stopped"))),
        Effect.catchTag("NoActiveTurn", () => Effect.void)
      )
    )
  )

  /** The chat's end: a running turn is aborted and its end shown; what waited is dropped. */
  const close = Effect.fnUntraced(function*() {
    const active = yield* loop.activeTurn(state.sessionKey)
    if (active !== undefined) yield* Effect.catchTag(loop.interruptHard(state.sessionKey), "NoActiveTurn", () => Effect.void)
    // Once the drain is gone, the aborted turn has returned, as `flushed` requires.
    if (state.draining !== undefined) yield* Fiber.interrupt(state.draining)
    if (active !== undefined) yield* sink.flushed(active.turnId)
    yield* Display.warnDropped(sink)
  })

  /** The conversation: Ctrl-C's handling, the greeting, stdin read in a fiber of its own, and the end once asked for. */
  const run = Effect.gen(function*() {
    yield* CtrlC.install({
      sessionKey: () => state.sessionKey,
      cancelQuestions: input.cancelQuestions,
      onIdle: (repeated) =>
        repeated
          ? Effect.andThen(Effect.sync(() => exitWithin(ExitCode.interrupted)), Deferred.succeed(quit, ExitCode.interrupted))
          : screen.line(dim("(Ctrl-C again to quit, or /exit)"))
    })
    yield* screen.line(dim(`agent-loop chat · session ${state.sessionKey} · model ${clean(settings.model)} · /help for commands`))
    if (resumed) yield* Effect.catch(Effect.flatMap(store.log(state.sessionKey), (entries) => replay(screen, entries)), failed)
    yield* showPrompt
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(escapes), stopNow)))
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Queue.take(expands), expandLast)))
    yield* Effect.forkScoped(readLines())
    const exitCode = yield* Deferred.await(quit)
    yield* close()
    return exitCode
  })

  return { run }
})
