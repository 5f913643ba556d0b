/**
 * Claude Code hooks (the `hooks` setting in Claude Code's shape) on the loop's own hook points,
 * registered into `Hooks` for the life of this layer: each matcher group becomes one hook.
 *
 * | Claude Code        | hook point                              |
 * | ------------------ | --------------------------------------- |
 * | `PreToolUse`       | `beforeTool` (deny, `updatedInput`), and the approval (`allow`/`ask`, see `bridge.ts`) |
 * | `PostToolUse`      | `afterTool`: a block reason or `additionalContext` is added to the result the model sees |
 * | `UserPromptSubmit` | `beforeTurn` of a top-level turn: block, or context added before the prompt |
 * | `Stop`             | `beforeStop` of a top-level turn; `SubagentStop` of a sub-turn |
 * | `SessionStart`     | `sessionStart`; its context is added to the session's first turn |
 * | `SessionEnd`, `PreCompact` | `sessionEnd`, `beforeCompact` (observers) |
 * | `Notification`     | when the approver is about to ask the user |
 *
 * Each command runs with `sh -c` in the project directory, the event as JSON on stdin, and the
 * environment `exec` gets (no credential by name or value, no registered secret; `passEnv` names
 * exceptions), plus `CLAUDE_PROJECT_DIR` and `AGENT_LOOP_PROJECT_DIR`; its `timeout` (seconds, default 60) is on the Clock. Its output is
 * scrubbed of known secrets before it reaches the model or an event. Commands of a group run in
 * order, and the first to block or deny ends the group.
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
import { compile, EVENTS, type Group, type HooksSource } from "./config.ts"
import { claudeName, fromClaudeInput, interpret, type Said, toClaudeInput, toClaudeResponse } from "./io.ts"
import { namesFor } from "./names.ts"

/** Options of `layer`. */
export interface ClaudeHooksOptions {
  readonly sources: ReadonlyArray<HooksSource>
  /** The workspace: the commands' working directory and `CLAUDE_PROJECT_DIR`. */
  readonly projectDir: string
  /** Where `PreToolUse` permission decisions go and `Notification` hooks come from. */
  readonly bridge?: Bridge.Bridge
  /** The session's transcript file, when the store keeps one per session. */
  readonly transcriptPath?: (sessionKey: string) => string | undefined
  /**
   * Variables the commands are given although they look like credentials (the CLI's `hookEnv`
   * setting): Claude Code's `hooks` setting has no field for it.
   */
  readonly passEnv?: ReadonlyArray<string>
}

const withTag = (tag: string, text: string) => `<${tag}>\n${text}\n</${tag}>`

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

    const env = () => ({
      ...Script.hookEnv(secrets, options.passEnv ?? []),
      CLAUDE_PROJECT_DIR: projectDir,
      AGENT_LOOP_PROJECT_DIR: projectDir
    })

    const base = (context: Hook.HookContext, event: string) => ({
      session_id: context.sessionKey,
      transcript_path: options.transcriptPath?.(context.sessionKey) ?? "",
      cwd: projectDir,
      hook_event_name: event,
      permission_mode: "default"
    })

    /** Runs a group's commands in order on `input`; stops at the first that blocks, stops or denies. */
    const runGroup = (group: Group, name: string, context: Hook.HookContext, input: Record<string, unknown>, plainIsContext: boolean) =>
      Effect.gen(function*() {
        const said: Array<Said> = []
        for (const command of group.commands) {
          const result = yield* Effect.result(Script.run({
            command: ["/bin/sh", "-c", command.command],
            cwd: projectDir,
            input: JSON.stringify(input),
            env: env(),
            timeout: Duration.millis(command.timeoutMs)
          }).pipe(Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, spawner)))
          const one = result._tag === "Failure"
            ? { failure: result.failure.message }
            : interpret(result.success.exitCode, secrets.scrub(result.success.stdout), secrets.scrub(result.success.stderr), plainIsContext)
          if (one.failure !== undefined) {
            const message = secrets.scrub(`${group.event} hook \`${command.command}\` ${one.failure}`)
            const at = yield* Clock.currentTimeMillis
            yield* bus.publish(AgentEvent.make("Error", context, at, { stage: EVENTS[group.event], message, hook: name }))
          }
          if (one.systemMessage !== undefined) yield* Effect.logWarning(`hook ${name}: ${one.systemMessage}`)
          said.push(one)
          if (one.block !== undefined || one.stop !== undefined || one.permission?.decision === "deny") break
        }
        return said
      })

    const contexts = (said: ReadonlyArray<Said>) => said.flatMap((s) => (s.context === undefined ? [] : [s.context]))
    const stopping = (said: ReadonlyArray<Said>) => said.find((s) => s.block !== undefined || s.stop !== undefined)

    const toHook = (group: Group, name: string): Hook.Hook => {
      switch (group.event) {
        case "PreToolUse":
          return {
            beforeTool: ({ context, call }) => {
              if (!group.test(namesFor(call))) return undefined
              return Effect.gen(function*() {
                const input = { ...base(context, "PreToolUse"), tool_name: claudeName(call), tool_input: toClaudeInput(call.name, call.arguments, projectDir), tool_use_id: call.id }
                const said = yield* runGroup(group, name, context, input, false)
                let args: unknown = undefined
                for (const s of said) {
                  if (s.stop !== undefined) return Hook.abortTurn(s.stop)
                  if (s.block !== undefined) return Hook.deny(s.block)
                  if (s.permission?.decision === "deny") return Hook.deny(s.permission.reason ?? `denied by hook ${name}`)
                  if (s.permission !== undefined) bridge.record(call.id, { decision: s.permission.decision, reason: s.permission.reason, hook: name })
                  if (s.updatedInput !== undefined) args = fromClaudeInput(call.name, args ?? call.arguments, s.updatedInput, projectDir)
                }
                return args === undefined ? undefined : Hook.modify({ arguments: args })
              })
            },
            approveTool: ({ call }) => bridge.peek(call.id)?.decision === "allow" ? Hook.approve : undefined
          }
        case "PostToolUse":
          return {
            afterTool: ({ context, call, result }) => {
              if (!group.test(namesFor(call))) return undefined
              return Effect.gen(function*() {
                const output = Message.textOf(result.content)
                const input = {
                  ...base(context, "PostToolUse"),
                  tool_name: claudeName(call),
                  tool_input: toClaudeInput(call.name, call.arguments, projectDir),
                  tool_response: toClaudeResponse(call.name, call.arguments, output, projectDir),
                  tool_use_id: call.id
                }
                const said = yield* runGroup(group, name, context, input, false)
                const feedback = said.flatMap((s) => [s.block, s.context].filter((t): t is string => t !== undefined))
                return feedback.length === 0 ? undefined : Hook.patch({ content: `${output}\n\n${withTag("post-tool-use-hook", feedback.join("\n"))}` })
              })
            }
          }
        case "UserPromptSubmit":
          return {
            beforeTurn: ({ context, input }) => {
              if (context.depth > 0) return undefined
              return Effect.gen(function*() {
                const said = yield* runGroup(group, name, context, { ...base(context, "UserPromptSubmit"), prompt: Message.textOf(input) }, true)
                const stop = stopping(said)
                if (stop !== undefined) return Hook.block(stop.stop ?? stop.block!)
                const added = contexts(said)
                return added.length === 0 ? undefined : Hook.modify({ addMessages: [Message.user(withTag("user-prompt-submit-hook", added.join("\n")))] })
              })
            }
          }
        case "Stop":
        case "SubagentStop":
          return {
            beforeStop: ({ context, stopHookActive }) => {
              if ((context.depth > 0) !== (group.event === "SubagentStop")) return undefined
              return Effect.gen(function*() {
                const said = yield* runGroup(group, name, context, { ...base(context, group.event), stop_hook_active: stopHookActive }, false)
                if (said.some((s) => s.stop !== undefined)) return undefined // continue: false lets it stop
                const block = said.find((s) => s.block !== undefined)?.block
                return block === undefined ? undefined : Hook.block(block)
              })
            }
          }
        case "SessionStart":
          return {
            sessionStart: ({ sessionKey }) => {
              if (!group.test(["startup"])) return undefined
              const context = Hook.sessionContext(sessionKey)
              return Effect.map(runGroup(group, name, context, { ...base(context, "SessionStart"), source: "startup" }, true), (said) => {
                const added = contexts(said)
                if (added.length > 0) pending.set(sessionKey, [...(pending.get(sessionKey) ?? []), ...added])
                return undefined
              })
            },
            beforeTurn: ({ context }) => {
              const added = pending.get(context.sessionKey)
              if (added === undefined || context.depth > 0) return undefined
              pending.delete(context.sessionKey)
              return Hook.modify({ addMessages: [Message.user(withTag("session-start-hook", added.join("\n")))] })
            }
          }
        case "SessionEnd":
          return {
            sessionEnd: ({ sessionKey }) => {
              const context = Hook.sessionContext(sessionKey)
              return Effect.asVoid(runGroup(group, name, context, { ...base(context, "SessionEnd"), reason: "other" }, false))
            }
          }
        case "PreCompact":
          return {
            beforeCompact: ({ context, reason }) => {
              const trigger = reason === "summary" ? "manual" : "auto"
              if (!group.test([trigger])) return undefined
              return Effect.asVoid(runGroup(group, name, context, { ...base(context, "PreCompact"), trigger, custom_instructions: "" }, false))
            }
          }
        case "Notification":
          bridge.onNotify((context, message) =>
            Effect.asVoid(Effect.forkIn(runGroup(group, name, context, { ...base(context, "Notification"), message }, false), scope)))
          return {}
      }
    }

    for (const group of groups) {
      const name = `${group.event}[${group.index}]${group.matcher === undefined || group.matcher === "" ? "" : ` ${group.matcher}`}`
      const hook = toHook(group, name)
      if (Object.keys(hook).length === 0) continue
      // the commands' own timeouts kill them; this only bounds the kills
      const timeout = group.commands.reduce(
        (sum, command) => Duration.sum(sum, Duration.sum(Duration.millis(command.timeoutMs), Duration.times(Script.killGrace, 2))),
        Duration.zero
      )
      yield* hooks.register(hook, { name, source: group.source, timeout })
    }
  }))
