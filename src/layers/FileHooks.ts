/**
 * File hooks: scripts on disk in the open Agent Hooks format (DESIGN §6), registered into
 * `Hooks` for the life of this layer.
 *
 * Each discovered hook becomes an in-process hook on the point of its trigger. When the point
 * fires (and, for tool triggers, the matchers accept the call) its script runs with the event as
 * JSON on stdin, and the environment `exec` gets (`Script.hookEnv`: no credential by name or value,
 * no value registered in `Secrets`) plus the variables its `HOOK.md` names in `env`; what it prints is scrubbed of known secrets before it becomes a reason or an error. Exit 0 continues, honouring a `{"decision", "modified_input", "reason"}` reply on
 * stdout (a `pre-tool-call` reply may also say `approve`, approving a call that needs approval, or
 * `ask`, so the user is asked); exit 2 blocks with stderr as the reason; anything else (another exit code, unparseable
 * stdout, a crash, the timeout) continues and is reported as an `Error` event. `async` hooks run
 * detached in this layer's scope and can never block.
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { NodeServices } from "@effect/platform-node"
 * import { FileHooks, HooksLive } from "effect-agent-loop"
 *
 * const hooks = FileHooks.layer().pipe(Layer.provideMerge(HooksLive.layer), Layer.provide(NodeServices.layer))
 * ```
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as Hook from "../domain/Hook.ts"
import type { TurnResult } from "../domain/Turn.ts"
import * as AgentEvent from "../domain/Event.ts"
import * as Message from "../domain/Message.ts"
import { EventBus } from "../services/EventBus.ts"
import { Hooks } from "../services/Hooks.ts"
import { Secrets, type SecretsShape } from "../services/Secrets.ts"
import { type Bridge, MAX_VERDICTS } from "./claudeHooks/bridge.ts"
import { discover, type DiscoverOptions, type FileHook, resolveDirs } from "./fileHooks/discover.ts"
import * as Script from "./fileHooks/script.ts"

export { discover, type DiscoverOptions, type Discovery, type FileHook, resolveDirs } from "./fileHooks/discover.ts"
export type { HookProblem, Trigger } from "./fileHooks/manifest.ts"

/** What a script asked for; `permission`: a `pre-tool-call` reply's `approve` or `ask` for the approval step. */
type Verdict =
  | { readonly _tag: "Go"; readonly modifiedInput?: unknown; readonly permission?: "approve" | "ask"; readonly reason?: string }
  | { readonly _tag: "Stop"; readonly reason: string }

/** The reply a script may print on stdout when it exits 0. */
const Reply = Schema.fromJsonString(Schema.Struct({
  decision: Schema.optionalKey(Schema.Literals(["allow", "deny", "approve", "ask"])),
  modified_input: Schema.optionalKey(Schema.Unknown),
  reason: Schema.optionalKey(Schema.String)
}))
const decodeReply = Schema.decodeUnknownResult(Reply)

const excerpt = (text: string, max = 200): string => (text.length > max ? `${text.slice(0, max)}…` : text)

/**
 * Reads a finished script's exit code and output as a verdict; a misbehaving script is a failure.
 * Its output is scrubbed of known secrets first: a reason goes to the model, a failure into events.
 */
const interpret = (hook: FileHook, raw: Script.ScriptResult, scrub: (text: string) => string): Effect.Effect<Verdict, Script.ScriptFailure> => {
  const result = { ...raw, stdout: scrub(raw.stdout), stderr: scrub(raw.stderr) }
  const stderr = result.stderr.trim()
  if (result.exitCode === 2) return Effect.succeed({ _tag: "Stop", reason: stderr || `blocked by hook ${hook.name}` })
  if (result.exitCode !== 0) {
    return Effect.fail(new Script.ScriptFailure({ message: `exited with code ${result.exitCode}${stderr ? `: ${excerpt(stderr)}` : ""}` }))
  }
  const stdout = result.stdout.trim()
  if (stdout === "") return Effect.succeed({ _tag: "Go" })
  const reply = decodeReply(stdout)
  if (Result.isFailure(reply)) {
    return Effect.fail(new Script.ScriptFailure({ message: `unparseable stdout: ${excerpt(stdout)}` }))
  }
  if (reply.success.decision === "deny") {
    return Effect.succeed({ _tag: "Stop", reason: reply.success.reason ?? (stderr || `denied by hook ${hook.name}`) })
  }
  const { decision, reason } = reply.success
  return Effect.succeed({
    _tag: "Go",
    ...("modified_input" in reply.success ? { modifiedInput: reply.success.modified_input } : {}),
    ...(decision === "approve" || decision === "ask" ? { permission: decision, ...(reason === undefined ? {} : { reason }) } : {})
  })
}


const toolFields = (call: Hook.HookToolCall) => ({ tool_name: call.name, tool_input: call.arguments, tool_use_id: call.id })

const subTurnFields = (subTurn: Hook.HookSubTurn) => ({
  subagent: {
    child_turn_id: subTurn.childTurnId,
    model: subTurn.model,
    prompt: subTurn.prompt,
    async: subTurn.async,
    critical: subTurn.critical
  }
})

const resultFields = (result: TurnResult) => ({
  status: result.status,
  iterations: result.iterations,
  ...(result.finalMessage !== undefined ? { final_message: result.finalMessage.content } : {}),
  ...(result.error !== undefined ? { error: result.error } : {})
})

const matches = (hook: FileHook, call: Hook.HookToolCall): boolean =>
  (hook.toolMatcher === undefined || hook.toolMatcher.test(call.name)) &&
  (hook.patternMatcher === undefined || hook.patternMatcher.test(JSON.stringify(call.arguments ?? null)))

/** The point a trigger runs at, as the `stage` of its `Error` events. */
const pointOf: Record<FileHook["trigger"], keyof Hook.Hook> = {
  "pre-session": "sessionStart",
  "post-session": "sessionEnd",
  "pre-agent-turn": "beforeTurn",
  "post-agent-turn": "afterTurn",
  "pre-agent-turn-stop": "beforeStop",
  "post-agent-turn-stop": "afterTurn",
  "pre-tool-call": "beforeTool",
  "post-tool-call": "afterTool",
  "post-tool-call-failure": "onToolFailure",
  "pre-subagent": "beforeSubTurn",
  "post-subagent": "afterSubTurn",
  "pre-context-compact": "beforeCompact",
  "post-context-compact": "afterCompact"
}

/** Builds the in-process hook that runs `hook`'s script at its trigger's point. */
const toHook = (
  hook: FileHook,
  workDir: string,
  env: {
    readonly spawner: ChildProcessSpawner.ChildProcessSpawner["Service"]
    readonly publishError: (context: Hook.HookContext, message: string) => Effect.Effect<void>
    readonly scope: Scope.Scope
    readonly secrets: SecretsShape
    readonly bridge: Bridge | undefined
    readonly passEnv: ReadonlyArray<string>
  }
): Hook.Hook => {
  const point = pointOf[hook.trigger]

  const exec = (context: Hook.HookContext, fields: Record<string, unknown>) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const event = {
        event_type: hook.trigger,
        timestamp: new Date(now).toISOString(),
        session_id: context.sessionKey,
        work_dir: workDir,
        turn_id: context.turnId,
        iteration: context.iteration,
        depth: context.depth,
        ...(context.parentTurnId !== undefined ? { parent_turn_id: context.parentTurnId } : {}),
        ...fields
      }
      const { secrets } = env
      const result = yield* Script.run({
        command: hook.command,
        cwd: workDir,
        input: JSON.stringify(event),
        env: Script.hookEnv(secrets, [...env.passEnv, ...hook.env]),
        timeout: Duration.millis(hook.timeout)
      }).pipe(
        Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, env.spawner),
        Effect.mapError((failure) => new Script.ScriptFailure({ message: secrets.scrub(failure.message) }))
      )
      return yield* interpret(hook, result, secrets.scrub)
    })

  /** Runs the script; detached hooks return at once and report their own failures. */
  const fire = <D>(context: Hook.HookContext, fields: Record<string, unknown>, decide: (verdict: Verdict) => D | undefined) =>
    hook.async
      ? Effect.as(
        Effect.forkIn(
          Effect.catch(exec(context, fields), (e) => env.publishError(context, `${point} failed: ${e.message}`)),
          env.scope
        ),
        undefined
      )
      : Effect.map(exec(context, fields), decide)

  const stopWith = <D>(make: (reason: string) => D) => (verdict: Verdict): D | undefined =>
    verdict._tag === "Stop" ? make(verdict.reason) : undefined
  const ignore = (): undefined => undefined

  switch (hook.trigger) {
    case "pre-session":
      return { sessionStart: ({ sessionKey }) => fire(Hook.sessionContext(sessionKey), {}, stopWith(Hook.block)) }
    case "post-session":
      return { sessionEnd: ({ sessionKey }) => Effect.asVoid(fire(Hook.sessionContext(sessionKey), {}, ignore)) }
    case "pre-agent-turn":
      return {
        beforeTurn: ({ context, input, messages }) =>
          fire(context, { prompt: Message.textOf(input), message_count: messages.length }, stopWith(Hook.block))
      }
    case "post-agent-turn":
      return { afterTurn: ({ context, result }) => Effect.asVoid(fire(context, resultFields(result), ignore)) }
    case "post-agent-turn-stop":
      // only when the stop gate let a final answer end the turn
      return {
        afterTurn: ({ context, result }) =>
          result.status === "completed" ? Effect.asVoid(fire(context, resultFields(result), ignore)) : Effect.void
      }
    case "pre-agent-turn-stop":
      return {
        beforeStop: ({ context, finalMessage, stopHookActive }) =>
          fire(context, { stop_hook_active: stopHookActive, last_message: finalMessage.content }, stopWith(Hook.block))
      }
    case "pre-tool-call": {
      // a reply `approve` approves the call at the approval step (`ask`: the user is asked even if a rule allows it)
      const approved = new Set<string>()
      return {
        beforeTool: ({ context, call }) =>
          matches(hook, call)
            ? fire(context, toolFields(call), (verdict) => {
              if (verdict._tag === "Stop") return Hook.deny(verdict.reason)
              if (verdict.permission !== undefined) {
                if (verdict.permission === "approve") approved.add(call.id)
                // calls that never reach the approval step (no approval needed, denied later) are forgotten past a bound
                if (approved.size > MAX_VERDICTS) approved.delete(approved.values().next().value!)
                env.bridge?.record(call.id, { decision: verdict.permission === "approve" ? "allow" : "ask", reason: verdict.reason, hook: hook.name })
              }
              return "modifiedInput" in verdict ? Hook.modify({ arguments: verdict.modifiedInput }) : undefined
            })
            : undefined,
        approveTool: ({ call }) => (approved.delete(call.id) ? Hook.approve : undefined)
      }
    }
    case "post-tool-call":
    case "post-tool-call-failure": {
      const handler = ({ context, call, result }: Parameters<NonNullable<Hook.Hook["afterTool"]>>[0]) =>
        matches(hook, call)
          ? Effect.asVoid(fire(context, { ...toolFields(call), tool_output: Message.textOf(result.content), is_error: result.isError }, ignore))
          : undefined
      return hook.trigger === "post-tool-call" ? { afterTool: handler } : { onToolFailure: handler }
    }
    case "pre-subagent":
      return { beforeSubTurn: ({ context, subTurn }) => fire(context, subTurnFields(subTurn), stopWith(Hook.block)) }
    case "post-subagent":
      return {
        afterSubTurn: ({ context, subTurn, result }) =>
          Effect.asVoid(fire(context, { ...subTurnFields(subTurn), ...resultFields(result) }, ignore))
      }
    case "pre-context-compact":
      return {
        beforeCompact: ({ context, reason, messages }) =>
          fire(context, { reason, message_count: messages.length }, stopWith(Hook.abortTurn))
      }
    case "post-context-compact":
      return {
        afterCompact: ({ context, reason, dropped, remaining }) =>
          Effect.asVoid(fire(context, { reason, dropped, remaining }, ignore))
      }
  }
}

/**
 * Discovers the file hooks and registers them into `Hooks` until the layer is released. Bad
 * `HOOK.md` files are logged as warnings and skipped (see `discover` for the list). With
 * `project: false` the workspace's own hooks are not even read.
 */
export const layer = (
  options: DiscoverOptions & {
    /** Where `pre-tool-call` replies `approve`/`ask` go for an approver that asks the user (the CLI's prompt). */
    readonly bridge?: Bridge
    /**
     * Variables every hook script is given although they look like credentials (the CLI's
     * `hookEnv` setting); a hook names its own with `env` in its `HOOK.md`.
     */
    readonly passEnv?: ReadonlyArray<string>
  } = {}
): Layer.Layer<never, never, Hooks | EventBus | FileSystem.FileSystem | ChildProcessSpawner.ChildProcessSpawner> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const { workDir } = resolveDirs(options)
    const found = yield* discover(options)
    for (const problem of found.problems) {
      yield* Effect.logWarning(`file hook skipped: ${problem.path}: ${problem.field}: ${problem.message}`)
    }
    const hooks = yield* Hooks
    const bus = yield* EventBus
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const scope = yield* Effect.scope
    const secrets = yield* Secrets
    for (const hook of found.hooks) {
      const publishError = (context: Hook.HookContext, message: string) =>
        Effect.flatMap(Clock.currentTimeMillis, (at) =>
          bus.publish(AgentEvent.make("Error", context, at, { stage: pointOf[hook.trigger], message, hook: hook.name })))
      yield* hooks.register(toHook(hook, workDir, { spawner, publishError, scope, secrets, bridge: options.bridge, passEnv: options.passEnv ?? [] }), {
        name: hook.name,
        priority: hook.priority,
        source: hook.path,
        // the script's own timeout kills it; this only bounds the kill itself
        timeout: Duration.sum(Duration.millis(hook.timeout), Duration.times(Script.killGrace, 2))
      })
    }
  }))
