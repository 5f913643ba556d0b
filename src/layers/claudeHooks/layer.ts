/**
 * Claude Code hooks (the `hooks` setting in Claude Code's shape) on the loop's own hook points,
 * registered into `Hooks` for the life of this layer: each matcher group becomes one hook.
 *
 * | Claude Code        | hook point                              |
 * | ------------------ | --------------------------------------- |
 * | `PreToolUse`       | `beforeTool` (deny, `updatedInput`), and the approval (`allow`/`ask`, see `bridge.ts`) |
 * | `PermissionRequest` | when the approver is about to ask the user: `decision.behavior` `allow` or `deny` answers instead (`bridge.ts`) |
 * | `PostToolUse`      | `afterTool`: a block reason or `additionalContext` is added to the result the model sees |
 * | `PostToolUseFailure` | `onToolFailure`: likewise, for a call that failed |
 * | `UserPromptSubmit` | `beforeTurn` of a top-level turn: block, or context added before the prompt |
 * | `Stop`             | `beforeStop` of a top-level turn; `SubagentStop` of a sub-turn |
 * | `SubagentStart`    | `beforeSubTurn` (observer) |
 * | `SessionStart`     | `sessionStart`, and `afterCompact` (source `compact`); its context is added to the next turn |
 * | `SessionEnd`, `PreCompact`, `PostCompact` | `sessionEnd`, `beforeCompact`, `afterCompact` (observers) |
 * | `Notification`     | when the approver is about to ask the user |
 *
 * Each command runs with `sh -c` in the project directory, the event as JSON on stdin, and the
 * environment `exec` gets (no credential by name or value, no registered secret; `passEnv` names
 * exceptions), plus `CLAUDE_PROJECT_DIR` and `AGENT_LOOP_PROJECT_DIR`; an `http` hook is sent the
 * same JSON in a POST and its response body is read as a command's stdout (a status other than
 * 2xx is a non-blocking error). A hook's `timeout` (seconds, default 60) is on the Clock. Output is
 * scrubbed of known secrets before it reaches the model or an event. As in Claude Code, every
 * matching group's hooks run at once (an identical command or URL once), and their answers
 * combine: a deny or block by any wins, `ask` over `allow`, `updatedInput`s in the groups' order.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as AgentEvent from "../../domain/Event.ts"
import * as Hook from "../../domain/Hook.ts"
import * as Message from "../../domain/Message.ts"
import { EventBus } from "../../services/EventBus.ts"
import { Hooks } from "../../services/Hooks.ts"
import { Secrets } from "../../services/Secrets.ts"
import * as Script from "../fileHooks/script.ts"
import * as Bridge from "./bridge.ts"
import { type Command, commandText, compile, EVENTS, type EventName, type Group, type HooksSource } from "./config.ts"
import { claudeName, fromClaudeInput, interpret, type Said, toClaudeInput, toClaudeResponse } from "./io.ts"
import { namesFor } from "./names.ts"
import * as Transcript from "./transcript.ts"

/** Options of `layer`. */
export interface ClaudeHooksOptions {
  readonly sources: ReadonlyArray<HooksSource>
  /** The workspace: the commands' working directory and `CLAUDE_PROJECT_DIR`. */
  readonly projectDir: string
  /** Where `PreToolUse` permission decisions go and `Notification` and `PermissionRequest` hooks come from. */
  readonly bridge?: Bridge.Bridge
  /**
   * A directory for the sessions' transcripts in Claude Code's JSON Lines shape (`transcript.ts`),
   * kept current for `transcript_path`; without it `transcript_path` is `transcriptPath`'s, or empty.
   */
  readonly transcriptDir?: string
  /** The session's transcript file, when something else keeps one. */
  readonly transcriptPath?: (sessionKey: string) => string | undefined
  /**
   * Variables the commands are given although they look like credentials (the CLI's `hookEnv`
   * setting): Claude Code's `hooks` setting has no field for it.
   */
  readonly passEnv?: ReadonlyArray<string>
}

const withTag = (tag: string, text: string) => `<${tag}>\n${text}\n</${tag}>`

/** What one hook said, and the group it came from. */
interface Heard {
  readonly said: Said
  readonly hook: string
}

/** A matcher group with its name in errors and verdicts (`PreToolUse[0] Bash`). */
interface Named extends Group {
  readonly name: string
}

/** Registers the hooks of `options.sources`; problems in them are logged as warnings and skipped. */
export const layer = (
  options: ClaudeHooksOptions
): Layer.Layer<never, never, Hooks | EventBus | ChildProcessSpawner.ChildProcessSpawner> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const { groups, warnings } = compile(options.sources)
    for (const warning of warnings) yield* Effect.logWarning(`claude hook skipped: ${warning}`)
    if (groups.length === 0) return
    const hooks = yield* Hooks
    const bus = yield* EventBus
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const secrets = yield* Secrets
    const scope = yield* Effect.scope
    const projectDir = options.projectDir
    // without an approver that reads a shared bridge, the hooks' own approveTool below still honours "allow"
    const bridge = options.bridge ?? Bridge.make()
    /** Context from `SessionStart` hooks, for the session's next turn. */
    const pending = new Map<string, Array<string>>()

    // the transcript: events since the last hook, written before the next one runs
    const transcripts = options.transcriptDir === undefined ? undefined : Transcript.make(options.transcriptDir, projectDir, secrets)
    const transcriptEvents = transcripts === undefined
      ? undefined
      : yield* bus.subscribe({ strategy: "lossless", kinds: Transcript.TRANSCRIPT_KINDS })
    const syncTranscript = transcripts === undefined || transcriptEvents === undefined
      ? Effect.void
      : Effect.flatMap(transcriptEvents.takeAll, transcripts.write)
    if (transcripts !== undefined) yield* Effect.addFinalizer(() => syncTranscript)

    const env = () => ({
      ...Script.hookEnv(secrets, options.passEnv ?? []),
      CLAUDE_PROJECT_DIR: projectDir,
      AGENT_LOOP_PROJECT_DIR: projectDir
    })

    const base = (context: Hook.HookContext, event: string) => ({
      session_id: context.sessionKey,
      transcript_path: transcripts?.path(context.sessionKey) ?? options.transcriptPath?.(context.sessionKey) ?? "",
      cwd: projectDir,
      hook_event_name: event,
      permission_mode: "default"
    })

    /** Runs one hook on `input` and reads what it said. */
    const runOne = (command: Command, input: string, plainIsContext: boolean) => {
      const ran = command._tag === "Command"
        ? Script.run({
          command: ["/bin/sh", "-c", command.command],
          cwd: projectDir,
          input,
          env: env(),
          timeout: Duration.millis(command.timeoutMs)
        }).pipe(Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, spawner))
        : post(command, input)
      return Effect.map(Effect.result(ran), (result): Said =>
        result._tag === "Failure"
          ? { failure: result.failure.message }
          : interpret(result.success.exitCode, secrets.scrub(result.success.stdout), secrets.scrub(result.success.stderr), plainIsContext))
    }

    /**
     * Runs every hook of `matching` at once on `input` (a command or URL that several groups name,
     * once), and gives what each said in the groups' order.
     */
    const runGroups = (matching: ReadonlyArray<Named>, context: Hook.HookContext, input: Record<string, unknown>, plainIsContext: boolean) =>
      Effect.gen(function*() {
        yield* syncTranscript
        const seen = new Set<string>()
        const jobs: Array<{ readonly group: Named; readonly command: Command }> = []
        for (const group of matching) {
          for (const command of group.commands) {
            const key = `${command._tag}:${commandText(command)}`
            if (seen.has(key)) continue
            seen.add(key)
            jobs.push({ group, command })
          }
        }
        const json = JSON.stringify(input)
        return yield* Effect.forEach(jobs, ({ command, group }) =>
          Effect.gen(function*() {
            const said = yield* runOne(command, json, plainIsContext)
            if (said.failure !== undefined) {
              const message = secrets.scrub(`${group.event} hook \`${commandText(command)}\` ${said.failure}`)
              const at = yield* Clock.currentTimeMillis
              yield* bus.publish(AgentEvent.make("Error", context, at, { stage: EVENTS[group.event], message, hook: group.name }))
            }
            if (said.systemMessage !== undefined) yield* Effect.logWarning(`hook ${group.name}: ${said.systemMessage}`)
            return { said, hook: group.name } satisfies Heard
          }), { concurrency: "unbounded" })
      })

    const contexts = (heard: ReadonlyArray<Heard>) => heard.flatMap(({ said }) => (said.context === undefined ? [] : [said.context]))
    const reasons = (heard: ReadonlyArray<Heard>, pick: (said: Said) => string | undefined) =>
      heard.flatMap(({ said }) => {
        const reason = pick(said)
        return reason === undefined ? [] : [reason]
      })

    /** Sessions that started and have not ended: they end when this layer closes, if the loop has not ended them. */
    const open = new Set<string>()
    const endSession = (sessionKey: string) => {
      if (!open.delete(sessionKey)) return undefined
      const reason = bridge.takeEnd(sessionKey)
      const groups = matching("SessionEnd", [reason])
      if (groups.length === 0) return undefined
      const context = Hook.sessionContext(sessionKey)
      return Effect.asVoid(runGroups(groups, context, { ...base(context, "SessionEnd"), reason }, false))
    }
    // this layer closes before the loop that would end its sessions (it is built on the loop)
    yield* Effect.addFinalizer(() => Effect.forEach([...open], (sessionKey) => endSession(sessionKey) ?? Effect.void, { discard: true }))
    // chat's /clear ends the session it leaves at once, as Claude Code does
    bridge.onEndNow((sessionKey, reason) =>
      Effect.suspend(() => {
        // a session that never started has nothing to end (and no reason to keep)
        if (!open.has(sessionKey)) return Effect.void
        bridge.endsFor(sessionKey, reason)
        return endSession(sessionKey) ?? Effect.void
      }))

    const byEvent = new Map<EventName, Array<Named>>()
    for (const group of groups) {
      const name = `${group.event}[${group.index}]${group.matcher === undefined || group.matcher === "" ? "" : ` ${group.matcher}`}`
      byEvent.set(group.event, [...(byEvent.get(group.event) ?? []), { ...group, name }])
    }
    const matching = (event: EventName, names: ReadonlyArray<string>) => (byEvent.get(event) ?? []).filter((group) => group.test(names))

    /** The tool-result hooks: feedback (a block's reason, `additionalContext`) added to what the model sees. */
    const afterTool = (event: "PostToolUse" | "PostToolUseFailure") =>
    ({
      context,
      call,
      result
    }: { readonly context: Hook.HookContext; readonly call: Hook.HookToolCall; readonly result: { readonly content: Message.Content } }) => {
      const groups = matching(event, namesFor(call))
      if (groups.length === 0) return undefined
      return Effect.gen(function*() {
        const output = Message.textOf(result.content)
        const input = {
          ...base(context, event),
          tool_name: claudeName(call),
          tool_input: toClaudeInput(call.name, call.arguments, projectDir),
          ...(event === "PostToolUse"
            ? { tool_response: toClaudeResponse(call.name, call.arguments, output, projectDir) }
            : { error: output }),
          tool_use_id: call.id
        }
        const heard = yield* runGroups(groups, context, input, false)
        const feedback = heard.flatMap(({ said }) => [said.block, said.context].filter((t): t is string => t !== undefined))
        return feedback.length === 0 ? undefined : Hook.patch({ content: `${output}\n\n${withTag("post-tool-use-hook", feedback.join("\n"))}` })
      })
    }

    const hook: Hook.Hook = {
      beforeTool: ({ call, context }) => {
        const groups = matching("PreToolUse", namesFor(call))
        if (groups.length === 0) return undefined
        return Effect.gen(function*() {
          const input = { ...base(context, "PreToolUse"), tool_name: claudeName(call), tool_input: toClaudeInput(call.name, call.arguments, projectDir), tool_use_id: call.id }
          const heard = yield* runGroups(groups, context, input, false)
          const stops = reasons(heard, (said) => said.stop)
          if (stops.length > 0) {
            bridge.stopQuietly(context.turnId, stops.join("\n"))
            return Hook.abortTurn(stops.join("\n"))
          }
          const denials = reasons(heard, (said) =>
            said.block ?? (said.permission?.decision === "deny" ? said.permission.reason ?? "denied by a hook" : undefined))
          if (denials.length > 0) return Hook.deny(denials.join("\n"))
          let args: unknown = undefined
          for (const { hook, said } of heard) {
            if (said.permission !== undefined && said.permission.decision !== "deny") {
              bridge.record(call.id, { decision: said.permission.decision, reason: said.permission.reason, hook })
            }
            if (said.updatedInput !== undefined) args = fromClaudeInput(call.name, args ?? call.arguments, said.updatedInput, projectDir)
          }
          return args === undefined ? undefined : Hook.modify({ arguments: args })
        })
      },
      approveTool: ({ call }) => bridge.peek(call.id)?.decision === "allow" ? Hook.approve : undefined,
      afterTool: afterTool("PostToolUse"),
      onToolFailure: afterTool("PostToolUseFailure"),
      beforeTurn: ({ context, input }) => {
        if (context.depth > 0) return undefined
        const started = pending.get(context.sessionKey)
        pending.delete(context.sessionKey)
        const groups = matching("UserPromptSubmit", [])
        const fromStart = started === undefined ? [] : [Message.user(withTag("session-start-hook", started.join("\n")))]
        if (groups.length === 0) return fromStart.length === 0 ? undefined : Hook.modify({ addMessages: fromStart })
        return Effect.gen(function*() {
          const heard = yield* runGroups(groups, context, { ...base(context, "UserPromptSubmit"), prompt: Message.textOf(input) }, true)
          const quiet = reasons(heard, (said) => said.stop)
          if (quiet.length > 0) bridge.stopQuietly(context.turnId, quiet.join("\n"))
          const stops = reasons(heard, (said) => said.stop ?? said.block)
          if (stops.length > 0) return Hook.block(stops.join("\n"))
          const added = contexts(heard)
          const messages = added.length === 0 ? fromStart : [...fromStart, Message.user(withTag("user-prompt-submit-hook", added.join("\n")))]
          return messages.length === 0 ? undefined : Hook.modify({ addMessages: messages })
        })
      },
      beforeStop: ({ context, stopHookActive }) => {
        const event = context.depth > 0 ? "SubagentStop" : "Stop"
        const groups = matching(event, [])
        if (groups.length === 0) return undefined
        return Effect.gen(function*() {
          const heard = yield* runGroups(groups, context, { ...base(context, event), stop_hook_active: stopHookActive }, false)
          // continue: false lets it stop
          if (heard.some(({ said }) => said.stop !== undefined)) return undefined
          const blocks = reasons(heard, (said) => said.block)
          if (blocks.length === 0) return undefined
          yield* bridge.continued(context, blocks.join("\n"))
          return Hook.block(blocks.join("\n"))
        })
      },
      beforeSubTurn: ({ context, subTurn }) => {
        const groups = matching("SubagentStart", [])
        if (groups.length === 0) return undefined
        const input = { ...base(context, "SubagentStart"), agent_id: subTurn.childTurnId, agent_type: "general-purpose", prompt: subTurn.prompt }
        return Effect.as(runGroups(groups, context, input, false), undefined)
      },
      sessionStart: ({ sessionKey }) => {
        open.add(sessionKey)
        const source = bridge.takeStart(sessionKey)
        const groups = matching("SessionStart", [source])
        if (groups.length === 0) return undefined
        const context = Hook.sessionContext(sessionKey)
        return Effect.map(runGroups(groups, context, { ...base(context, "SessionStart"), source }, true), (heard) => {
          const added = contexts(heard)
          if (added.length > 0) pending.set(sessionKey, [...(pending.get(sessionKey) ?? []), ...added])
          return undefined
        })
      },
      sessionEnd: ({ sessionKey }) => endSession(sessionKey),
      beforeCompact: ({ context, reason }) => {
        const trigger = reason === "summary" ? "manual" : "auto"
        const groups = matching("PreCompact", [trigger])
        if (groups.length === 0) return undefined
        return Effect.asVoid(runGroups(groups, context, { ...base(context, "PreCompact"), trigger, custom_instructions: "" }, false))
      },
      afterCompact: ({ context, reason }) => {
        const trigger = reason === "summary" ? "manual" : "auto"
        const groups = matching("PostCompact", [trigger])
        // the conversation starts again from its summary: SessionStart with source compact, its context for the next turn
        const starts = context.depth > 0 ? [] : matching("SessionStart", ["compact"])
        if (groups.length === 0 && starts.length === 0) return undefined
        return Effect.gen(function*() {
          if (groups.length > 0) yield* runGroups(groups, context, { ...base(context, "PostCompact"), trigger }, false)
          if (starts.length === 0) return
          const heard = yield* runGroups(starts, context, { ...base(context, "SessionStart"), source: "compact" }, true)
          const added = contexts(heard)
          if (added.length > 0) pending.set(context.sessionKey, [...(pending.get(context.sessionKey) ?? []), ...added])
        })
      }
    }

    const notification = byEvent.get("Notification") ?? []
    if (notification.length > 0) {
      bridge.onNotify((context, message) =>
        Effect.asVoid(Effect.forkIn(runGroups(notification, context, { ...base(context, "Notification"), message }, false), scope)))
    }
    if (byEvent.has("PermissionRequest")) {
      bridge.onPermissionRequest((context, call) => {
        const groups = matching("PermissionRequest", namesFor(call))
        if (groups.length === 0) return Effect.succeed(undefined)
        const input = { ...base(context, "PermissionRequest"), tool_name: claudeName(call), tool_input: toClaudeInput(call.name, call.arguments, projectDir) }
        return Effect.map(runGroups(groups, context, input, false), (heard) => {
          const denied = heard.find(({ said }) => said.behavior?.decision === "deny" || said.block !== undefined)
          if (denied !== undefined) {
            return { decision: "deny", reason: denied.said.behavior?.reason ?? denied.said.block ?? "denied by a hook", hook: denied.hook } as const
          }
          const allowed = heard.find(({ said }) => said.behavior?.decision === "allow")
          return allowed === undefined ? undefined : { decision: "allow", reason: allowed.said.behavior?.reason, hook: allowed.hook } as const
        })
      })
    }

    // one hook for all the groups: the handlers of events without groups answer nothing
    const registered = Object.fromEntries(
      Object.entries(hook).filter(([point]) =>
        Object.entries(EVENTS).some(([event, at]) => at === point && byEvent.has(event as EventName)) ||
        (point === "approveTool" && byEvent.has("PreToolUse")) ||
        (point === "beforeTurn" && byEvent.has("SessionStart")) ||
        (point === "afterCompact" && byEvent.has("SessionStart")) ||
        (point === "sessionStart" && byEvent.has("SessionEnd"))
      )
    ) as Hook.Hook
    if (Object.keys(registered).length === 0 && transcripts === undefined) return
    // the hooks' own timeouts end them; this only bounds the kills (they run at once)
    const timeout = groups.reduce(
      (longest, group) =>
        group.commands.reduce(
          (max, command) => Duration.max(max, Duration.sum(Duration.millis(command.timeoutMs), Duration.times(Script.killGrace, 2))),
          longest
        ),
      Duration.zero
    )
    const sources = [...new Set(groups.map((group) => group.source))]
    yield* hooks.register(
      transcripts === undefined ? registered : { ...registered, afterTurn: () => syncTranscript },
      { name: "claude hooks", source: sources.join(", "), timeout }
    )
  }))

/** POSTs the event to an `http` hook: its status read as an exit code (2xx: 0), its body as stdout. */
const post = (command: Extract<Command, { readonly _tag: "Http" }>, input: string) =>
  Effect.tryPromise({
    try: (signal) =>
      fetch(command.url, {
        method: "POST",
        headers: { ...command.headers, "content-type": "application/json" },
        body: input,
        signal,
        redirect: "error"
      }).then(async (response) => {
        const body = (await response.text()).slice(0, Script.outputLimit)
        const ok = response.status >= 200 && response.status < 300
        return { exitCode: ok ? 0 : 1, stdout: ok ? body : "", stderr: ok ? "" : `HTTP ${response.status}` }
      }),
    catch: (error) => new Script.ScriptFailure({ message: `request failed: ${error instanceof Error ? error.message : String(error)}` })
  }).pipe(
    Effect.timeoutOrElse({
      duration: Duration.millis(command.timeoutMs),
      orElse: () => Effect.fail(new Script.ScriptFailure({ message: `timed out after ${command.timeoutMs}ms` }))
    })
  )
