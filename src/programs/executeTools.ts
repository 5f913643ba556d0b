/**
 * Running a response's tool calls (DESIGN §6 step 5).
 *
 * Calls are grouped in order: consecutive read-only calls form one parallel group (at most
 * `toolConcurrency` calls at once), each mutating (or unknown) call is a group of its own. Before
 * each group is a checkpoint where a graceful interrupt, or newly queued steering in
 * `skip-remaining` mode, skips every remaining call with a result saying why, so the history stays
 * well formed. Results are appended in call order.
 *
 * A tool's output and error messages are outside text (a command may print the environment, a
 * server may quote a header): they are scrubbed of every known secret (`Secrets`) as they come
 * out of the tool, so hooks, events, sessions and cassettes only ever see the scrubbed text.
 */
import { Cause, Duration, Effect, Exit, Option } from "effect"
import { readCause, show } from "../domain/causeMessage.ts"
import type { HookContext, HookToolCall } from "../domain/Hook.ts"
import * as Message from "../domain/Message.ts"
import { toOutput, type ToolContext } from "../domain/Tool.ts"
import type { CurrentTurn } from "../services/CurrentTurn.ts"
import type { RegisteredTool } from "../services/ToolRegistry.ts"
import type { Env } from "./Env.ts"
import { append, spanned, type TurnContext } from "./TurnContext.ts"
import { gracefulAsked, gracefulRequested, hookContext } from "./TurnControl.ts"
import { stopFor, type TurnAborted } from "./turnEnd.ts"

/** The result the model sees for calls skipped by a graceful interrupt. */
export const SKIPPED_GRACEFUL = "Skipped due to graceful interrupt."
/** The result the model sees for calls skipped because the user sent a new message. */
export const SKIPPED_STEERING = "Skipped due to queued user message."

interface PlannedCall {
  readonly index: number
  readonly call: Message.ToolCall
  readonly tool: RegisteredTool | undefined
}

/** Groups calls in order: runs of read-only calls together, everything else alone. */
export const groupCalls = <A extends { readonly tool: { readonly readOnly: boolean } | undefined }>(
  calls: ReadonlyArray<A>
): ReadonlyArray<ReadonlyArray<A>> => {
  const groups: Array<Array<A>> = []
  for (const call of calls) {
    const last = groups[groups.length - 1]
    if (call.tool?.readOnly && last && last[0]!.tool?.readOnly) last.push(call)
    else groups.push([call])
  }
  return groups
}

/** What `parseArguments` returns for text that is not JSON. */
const NOT_JSON: unique symbol = Symbol("NOT_JSON")

const parseArguments = (raw: string): unknown => {
  try {
    return raw.trim() === "" ? {} : JSON.parse(raw)
  } catch {
    return NOT_JSON
  }
}

/** `Expected string\n  at ["path"]` lines as `path: Expected string`, one per failing field. */
const issuesOf = (message: string) => {
  const issues: Array<string> = []
  for (const line of message.split("\n")) {
    const at = /^\s*at ((?:\[[^\]]*\])+)$/.exec(line)
    if (at && issues.length > 0) {
      const field = [...at[1]!.matchAll(/\[("?)([^\]]*?)\1\]/g)].map((m) => m[2]).join(".")
      issues[issues.length - 1] = `${field}: ${issues[issues.length - 1]}`
    } else if (line.trim() !== "") issues.push(line.trim())
  }
  return issues.join("; ")
}

interface Outcome {
  readonly content: Message.Content
  readonly isError: boolean
}

/**
 * Runs the tool, bounded by its timeout; every failure becomes an error result; known secrets are
 * scrubbed. A tool that answers at once (an `Exit`) costs no step of the fiber.
 */
const invoke = (tool: RegisteredTool, args: unknown, toolContext: ToolContext, scrub: (text: string) => string) => {
  const run = Effect.matchCauseEffectEager(tool.execute(args, toolContext), {
    onSuccess: (value) => {
      const output = toOutput(value)
      return Effect.succeed<Outcome>({ content: Message.mapStrings(output.content, scrub), isError: output.isError ?? false })
    },
    onFailure: (cause) => {
      // An interruption is the turn's, not the tool's failure: it goes on (and has no typed error).
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
      const reading = readCause(cause)
      return Effect.succeed<Outcome>({
        content: scrub(
          reading._tag === "Error"
            ? (reading.error as { readonly message: string }).message
            : `Tool "${tool.name}" failed: ${show(reading._tag === "Defect" ? reading.defect : Cause.squash(cause))}`
        ),
        isError: true
      })
    }
  })
  if (tool.timeout === undefined) return run
  const timeout = tool.timeout
  return run.pipe(Effect.timeoutOrElse({
    duration: timeout,
    orElse: () => Effect.succeed({ content: `Tool "${tool.name}" timed out after ${Duration.toMillis(timeout)}ms`, isError: true })
  }))
}

/** What a tool sees of its call: where it runs (as hooks see it) and the call's id. */
const toolContextOf = (where: HookContext, toolCallId: string): ToolContext => {
  const { turnId, sessionKey, iteration, depth, parentTurnId } = where
  // Two literals rather than a spread: one is built per tool call, and the spread costs more than the object.
  return parentTurnId === undefined
    ? { turnId, sessionKey, iteration, depth, toolCallId }
    : ({ turnId, sessionKey, iteration, depth, parentTurnId, toolCallId } as ToolContext)
}

/** Running a response's tool calls, over the loop's hooks and config. */
export const make = (env: Env) => {
  const { config, hooks } = env
  const scrub = env.secrets.scrub

  /** Why the remaining calls must be skipped now, if they must. */
  const checkpoint = (context: TurnContext): Effect.Effect<string | undefined> => {
    const control = context.control
    const steered = config.steeringMode === "skip-remaining" && control.steering.length > 0
    if (!steered && !gracefulAsked(control)) return Effect.succeed(undefined)
    return Effect.gen(function*() {
      if (yield* gracefulRequested(control)) return SKIPPED_GRACEFUL
      if (steered) {
        yield* context.emit("InterruptReceived", { kind: "steering" })
        return SKIPPED_STEERING
      }
      return undefined
    })
  }

  /** A call that is not run, and why (called when the effect runs). */
  const skip = (context: TurnContext, planned: PlannedCall, reason: string) => {
    context.publish("ToolExecSkipped", { toolCallId: planned.call.id, toolName: planned.call.name, reason })
    return Effect.succeed(Message.toolResult(planned.call, reason, true))
  }

  /** One call: hooks, validation, approval, execution, patches, events. */
  const runCall = (context: TurnContext, planned: PlannedCall) =>
    spanned(context, "gen_ai.execute_tool", () => ({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": planned.call.name,
      "gen_ai.tool.call.id": planned.call.id
    }), () => runCallBody(context, planned), (result) => ({ "agent.tool.is_error": result.isError === true }))

  /**
   * The call up to its arguments: a call that cannot run (unknown tool, arguments that are not
   * JSON) gets an error result; otherwise `beforeTool` hooks may deny it, stop the turn or patch
   * the arguments. Called when the effect runs (see `spanned`).
   */
  const runCallBody = (
    context: TurnContext,
    planned: PlannedCall
  ): Effect.Effect<Message.ToolResultMessage, TurnAborted, CurrentTurn> => {
    const { call, tool } = planned
    const started = context.clock.currentTimeMillisUnsafe()
    if (tool === undefined) return notRun(context, call, started, `Tool "${call.name}" not found`)
    const args = parseArguments(call.arguments)
    if (args === NOT_JSON) {
      return notRun(context, call, started, `Invalid arguments for tool "${call.name}": not valid JSON. Received: ${call.arguments}`)
    }
    const where = hookContext(context.control)
    const hookCall: HookToolCall = { id: call.id, name: call.name, arguments: args, readOnly: tool.readOnly, requiresApproval: tool.requiresApproval }
    if (!hooks.handles("beforeTool")) return decide(context, planned, tool, where, hookCall, started)
    return Effect.flatMap(hooks.beforeTool({ context: where, call: hookCall }), (before) => {
      if (before._tag === "Deny") return skip(context, planned, `Tool execution denied by hook: ${before.reason}`)
      if (before._tag !== "Continue") return stopFor(context, "beforeTool", before)
      return decide(context, planned, tool, where, { ...hookCall, arguments: before.arguments }, started)
    })
  }

  /** Validation against the tool's Schema, then approval when the tool asks for it. */
  const decide = (
    context: TurnContext,
    planned: PlannedCall,
    tool: RegisteredTool,
    where: HookContext,
    hookCall: HookToolCall,
    started: number
  ): Effect.Effect<Message.ToolResultMessage, TurnAborted, CurrentTurn> =>
    Effect.matchCauseEffectEager(tool.decode(hookCall.arguments), {
      onFailure: (cause) => {
        const error = Cause.findErrorOption(cause)
        if (Option.isNone(error)) return Effect.failCause(cause as Cause.Cause<never>)
        const invalid = `Invalid arguments for tool "${planned.call.name}": ${issuesOf(error.value.message)}. Received: ${JSON.stringify(hookCall.arguments)}`
        return notRun(context, planned.call, started, invalid)
      },
      onSuccess: (args) => {
        if (!tool.needsApproval(args)) return execute(context, planned.call, tool, args, where, hookCall, started)
        return Effect.flatMap(hooks.approveTool({ context: where, call: hookCall }), (approval) =>
          approval._tag === "Deny"
            ? skip(context, planned, `Tool execution denied by approval: ${approval.reason}`)
            : execute(context, planned.call, tool, args, where, hookCall, started))
      }
    })

  /** `ToolExecStart`, the tool, then `afterTool` (or `onToolFailure`) hooks and `ToolExecEnd`. */
  const execute = (
    context: TurnContext,
    call: Message.ToolCall,
    tool: RegisteredTool,
    args: unknown,
    where: HookContext,
    hookCall: HookToolCall,
    started: number
  ): Effect.Effect<Message.ToolResultMessage, never, CurrentTurn> => {
    context.publish("ToolExecStart", { toolCallId: call.id, toolName: call.name, arguments: JSON.stringify(hookCall.arguments) })
    const toolContext = toolContextOf(where, call.id)
    return Effect.flatMapEager(invoke(tool, args, toolContext, scrub), (result) => {
      const failed = result.isError
      if (!hooks.handles(failed ? "onToolFailure" : "afterTool")) return Effect.succeed(ended(context, call, started, result))
      return Effect.map(hooks.afterTool({ context: where, call: hookCall, result, failed }), (outcome) => ended(context, call, started, outcome))
    })
  }

  /** A call that did not run: `ToolExecStart` with the raw arguments, then its error result. */
  const notRun = (context: TurnContext, call: Message.ToolCall, started: number, content: string) => {
    context.publish("ToolExecStart", { toolCallId: call.id, toolName: call.name, arguments: call.arguments })
    return Effect.succeed(ended(context, call, started, { content, isError: true }))
  }

  /** `ToolExecEnd` and the call's result message. */
  const ended = (context: TurnContext, call: Message.ToolCall, started: number, outcome: Outcome): Message.ToolResultMessage => {
    const now = context.clock.currentTimeMillisUnsafe()
    context.publish("ToolExecEnd", {
      toolCallId: call.id,
      toolName: call.name,
      durationMs: now - started,
      isError: outcome.isError,
      result: Message.textOf(outcome.content)
    }, now)
    return Message.toolResult(call, outcome.content, outcome.isError)
  }

  /**
   * A group's calls, in the turn's fiber while they answer at once; from the first that waits, it
   * and the rest run in parallel, as many at once as `toolConcurrency` allows (what `Effect.forEach`
   * does, without its machinery for a group that never waits). A failure ends the group there.
   */
  const runGroup = (
    context: TurnContext,
    group: ReadonlyArray<PlannedCall>
  ): Effect.Effect<ReadonlyArray<Message.ToolResultMessage>, TurnAborted, CurrentTurn> => {
    const results: Array<Message.ToolResultMessage> = []
    for (let i = 0; i < group.length; i++) {
      const run = runCall(context, group[i]!)
      if (!Exit.isExit(run)) {
        const starts = [() => run, ...group.slice(i + 1).map((planned) => () => runCall(context, planned))]
        return Effect.map(
          Effect.forEach(starts, (start) => start(), { concurrency: config.toolConcurrency }),
          (later) => results.concat(later)
        )
      }
      const done = run as Exit.Exit<Message.ToolResultMessage, TurnAborted>
      if (done._tag === "Failure") return Effect.failCause(done.cause)
      results.push(done.value)
    }
    return Effect.succeed(results)
  }

  /**
   * The groups from `index` on, each after its checkpoint (once a checkpoint says to skip, every
   * later call is skipped for the same reason); then the results join the conversation in call
   * order. Groups that finish at once (tools that answer at once) cost no fiber step.
   */
  const runGroups = (
    context: TurnContext,
    groups: ReadonlyArray<ReadonlyArray<PlannedCall>>,
    index: number,
    results: Array<Message.ToolResultMessage>,
    skipReason: string | undefined
  ): Effect.Effect<void, TurnAborted, CurrentTurn> => {
    if (index === groups.length) {
      append(context, ...results)
      return Effect.void
    }
    const group = groups[index]!
    return Effect.flatMapEager(skipReason === undefined ? checkpoint(context) : Effect.succeed(skipReason), (reason) =>
      Effect.flatMapEager(
        reason === undefined ? runGroup(context, group) : Effect.forEach(group, (p) => skip(context, p, reason)),
        (groupResults) => {
          for (const result of groupResults) results.push(result)
          return runGroups(context, groups, index + 1, results, reason)
        }
      ))
  }

  /**
   * Runs the calls of one response with the tools available to it; appends results in call order.
   * Called when the effect is to run.
   */
  const executeTools = (
    context: TurnContext,
    calls: ReadonlyArray<Message.ToolCall>,
    available: ReadonlyMap<string, RegisteredTool>
  ) => {
    context.control.phase = "tools"
    const planned = calls.map((call, index): PlannedCall => ({ index, call, tool: available.get(call.name) }))
    return runGroups(context, groupCalls(planned), 0, [], undefined)
  }

  return executeTools
}
