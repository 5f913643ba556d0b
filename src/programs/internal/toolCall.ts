/**
 * One tool call in flight (DESIGN §6 step 5), as one record that goes prepare → execute →
 * finalize:
 *
 * - `prepare`: a call that cannot run (unknown tool, arguments that are not JSON) gets its error
 *   result; `beforeTool` hooks may deny it, stop the turn or patch the arguments; the arguments
 *   are decoded by the tool's Schema; a tool that asks for approval is approved or denied.
 * - `execute`: `ToolExecStart`, then the tool, bounded by its timeout; every failure becomes an
 *   error result.
 * - `finalize`: `afterTool` (or `onToolFailure`) hooks, `ToolExecEnd`, the result message.
 *
 * A tool's output and error messages are outside text (a command may print the environment, a
 * server may quote a header): they are scrubbed of every known secret (`Secrets`) as they come
 * out of the tool, so hooks, events, sessions and cassettes only ever see the scrubbed text.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { readCause, show } from "../../domain/causeMessage.ts"
import { doneNow } from "../../domain/doneNow.ts"
import { type HookContext, type HookToolCall, limitText } from "../../domain/Hook.ts"
import * as Message from "../../domain/Message.ts"
import { jsonTooDeep, MAX_JSON_DEPTH } from "../../domain/text.ts"
import { toOutput, type ToolContext } from "../../domain/Tool.ts"
import type { CurrentTurn } from "../../services/CurrentTurn.ts"
import type { RegisteredTool } from "../../services/ToolRegistry.ts"
import * as Checkpoints from "./checkpoint.ts"
import type { Engine } from "./engine.ts"
import { spanned } from "./tracing.ts"
import * as RunningTurn from "./runningTurn.ts"
import type { TurnAborted } from "../../domain/errors.ts"
import { stopFor } from "./turnEnd.ts"

/** A call of a response, and the tool it names (if the turn has it). */
export interface PlannedCall {
  readonly call: Message.ToolCall
  readonly tool: RegisteredTool | undefined
  /** Its result already, from the checkpoint a turn resumed from: it does not run. */
  readonly settled?: Message.ToolResultMessage | undefined
}

/** A call ready to run: its tool, its decoded arguments, and where and how hooks saw it. */
interface PreparedCall {
  readonly call: Message.ToolCall
  readonly tool: RegisteredTool
  readonly started: number
  readonly where: HookContext
  /** The call as hooks see it, with the arguments `beforeTool` left. */
  readonly hookCall: HookToolCall
  /** What the tool's Schema decoded from those arguments. */
  readonly args: unknown
  /** When `beforeTool` hooks changed the arguments: the hooks that did, in order. */
  readonly rewrittenBy?: ReadonlyArray<string> | undefined
}

/** What a tool produced, before the result hooks. */
interface Outcome {
  readonly content: Message.Content
  readonly isError: boolean
}

/** Runs one call to its result message, in a span when the turn is traced. */
export const runCall = (engine: Engine, turn: RunningTurn.RunningTurn, planned: PlannedCall): Effect.Effect<Message.ToolResultMessage, TurnAborted, CurrentTurn> => {
  if (planned.settled !== undefined) return Effect.succeed(planned.settled)
  const run = turn.traced
    ? spanned(`execute_tool ${planned.call.name}`, () => ({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": planned.call.name,
      "gen_ai.tool.call.id": planned.call.id,
      "gen_ai.conversation.id": turn.sessionKey
    }), () => prepareAndRun(engine, turn, planned), {
      annotate: (result) => ({ "agent.tool.is_error": result.isError === true }),
      // an error result is the tool's failure, whatever the model makes of it
      failure: (result) => result.isError === true ? { type: "ToolError", message: Message.textOf(result.content).slice(0, 500) } : undefined
    })
    : prepareAndRun(engine, turn, planned)
  return recorded(turn, turn.start.checkpoint === undefined ? run : Effect.tap(run, (result) => Checkpoints.finished(engine, turn, result)))
}

/** `run`, its result noted on the turn as it finishes (a turn stopped now keeps it); one done at once stays done. */
const recorded = <E, R>(turn: RunningTurn.RunningTurn, run: Effect.Effect<Message.ToolResultMessage, E, R>): Effect.Effect<Message.ToolResultMessage, E, R> => {
  const done = doneNow(run)
  if (done === undefined) return Effect.tap(run, (result) => Effect.sync(() => RunningTurn.callFinished(turn, result)))
  if (done._tag === "Success") RunningTurn.callFinished(turn, done.value)
  return run
}

/** prepare → execute → finalize. */
const prepareAndRun = (engine: Engine, turn: RunningTurn.RunningTurn, planned: PlannedCall): Effect.Effect<Message.ToolResultMessage, TurnAborted, CurrentTurn> =>
  Effect.flatMapEager(prepare(engine, turn, planned), (prepared) => {
    if (prepared._tag === "ToolResult") return Effect.succeed(prepared.result)
    const executed = turn.start.checkpoint === undefined
      ? execute(engine, turn, prepared)
      : Effect.andThen(Checkpoints.starting(engine, turn, prepared.call, prepared.tool), Effect.suspend(() => execute(engine, turn, prepared)))
    return Effect.flatMapEager(executed, (outcome) => finalize(engine, turn, prepared, outcome))
  })

/** A call that is not run, and why. */
export const skip = (turn: RunningTurn.RunningTurn, call: Message.ToolCall, reason: string): Message.ToolResultMessage => {
  RunningTurn.publish(turn, "ToolExecSkipped", { toolCallId: call.id, toolName: call.name, reason })
  return Message.toolResult(call, reason, true)
}

type Prepared = PreparedCall & { readonly _tag: "Prepared" } | { readonly _tag: "ToolResult"; readonly result: Message.ToolResultMessage }

const resultNow = (result: Message.ToolResultMessage): Effect.Effect<Prepared> => Effect.succeed({ _tag: "ToolResult", result })

/** Checks, `beforeTool` hooks, decoding and approval: a call ready to run, or its result already. */
const prepare = (engine: Engine, turn: RunningTurn.RunningTurn, { call, tool }: PlannedCall): Effect.Effect<Prepared, TurnAborted> => {
  const started = turn.clock.currentTimeMillisUnsafe()
  if (tool === undefined) return resultNow(notRun(turn, call, started, `Tool "${call.name}" not found`))
  const args = parseArguments(call.arguments)
  if (args === TOO_DEEP) {
    return resultNow(notRun(turn, call, started, `Invalid arguments for tool "${call.name}": nested deeper than ${MAX_JSON_DEPTH} levels`))
  }
  if (args === NOT_JSON) {
    return resultNow(notRun(turn, call, started, `Invalid arguments for tool "${call.name}": not valid JSON. Received: ${call.arguments}`))
  }
  const where = RunningTurn.hookContext(turn)
  const hookCall: HookToolCall = {
    id: call.id,
    name: call.name,
    ...(tool.mcp === undefined ? {} : { mcp: tool.mcp }),
    arguments: args,
    readOnly: tool.readOnly,
    requiresApproval: tool.requiresApproval
  }
  const { hooks } = engine
  if (!hooks.handles("beforeTool")) return decodeAndApprove(engine, turn, { call, tool, started, where, hookCall, args })
  return Effect.flatMap(hooks.run("beforeTool", { context: where, call: hookCall }), (before) => {
    if (before._tag === "Deny") return resultNow(skip(turn, call, `Tool execution denied by hook: ${before.reason}`))
    if (before._tag !== "Continue") return stopFor(turn, "beforeTool", before)
    const patched = before.input.call
    const rewrittenBy = patched.arguments !== args && before.changedBy !== undefined
        && JSON.stringify(patched.arguments) !== JSON.stringify(args)
      ? before.changedBy
      : undefined
    return decodeAndApprove(engine, turn, { call, tool, started, where, hookCall: patched, args: patched.arguments, rewrittenBy })
  })
}

/** Validation against the tool's Schema, then approval when the tool asks for it. */
const decodeAndApprove = (engine: Engine, turn: RunningTurn.RunningTurn, call: PreparedCall): Effect.Effect<Prepared> =>
  Effect.matchCauseEffectEager(call.tool.decode(call.hookCall.arguments), {
    onFailure: (cause) => {
      const error = Cause.findErrorOption(cause)
      if (Option.isNone(error)) return Effect.failCause(cause as Cause.Cause<never>)
      const issues = issuesOf(error.value.message)
      if (call.rewrittenBy !== undefined) return resultNow(rewriteRejected(turn, call, issues, engine.secrets.scrub))
      const invalid = `Invalid arguments for tool "${call.call.name}": ${issues}. Received: ${JSON.stringify(call.hookCall.arguments)}`
      return resultNow(notRun(turn, call.call, call.started, invalid))
    },
    onSuccess: (args) => {
      const prepared: Prepared = { ...call, args, _tag: "Prepared" }
      if (!call.tool.needsApproval(args)) return Effect.succeed(prepared)
      // the tool's duration starts once approved: the time a person took to answer is not the tool's
      return Effect.map(engine.hooks.approveTool({ context: call.where, call: call.hookCall }), (approval): Prepared =>
        approval._tag === "Deny"
          ? { _tag: "ToolResult", result: skip(turn, call.call, `Tool execution denied by approval: ${approval.reason}`) }
          : { ...prepared, started: turn.clock.currentTimeMillisUnsafe() })
    }
  })

/**
 * A call whose arguments `beforeTool` hooks rewrote into ones the tool's Schema rejects: the
 * hook's fault, not the model's. The hook's author is told by an `Error` event naming it, and the
 * model by an error result that names the hook and does not ask it to correct its own call. What
 * the hook wrote is scrubbed of known secrets, as any hook's text is, and cut in the event.
 */
const rewriteRejected = (
  turn: RunningTurn.RunningTurn,
  prepared: PreparedCall,
  issues: string,
  scrub: (text: string) => string
): Message.ToolResultMessage => {
  const { call } = prepared
  const hooks = prepared.rewrittenBy ?? []
  const last = hooks.at(-1) ?? ""
  const after = hooks.length > 1 ? ` (after ${hooks.slice(0, -1).map((name) => `"${name}"`).join(", ")})` : ""
  RunningTurn.publish(turn, "Error", {
    stage: "beforeTool",
    hook: last,
    message: limitText(scrub(
      `hook "${last}"${after} rewrote the arguments of tool "${call.name}" (call ${call.id}) into ones its parameters reject: ${issues}. ` +
        `Rewritten: ${JSON.stringify(prepared.hookCall.arguments)}`
    ))
  })
  started(turn, prepared)
  return ended(turn, call, prepared.started, {
    content: scrub(
      `Tool "${call.name}" was not run: hook "${last}"${after} changed the call's arguments into ones the tool does not accept ` +
        `(${issues}). This is a fault of the hook, not of the call as you made it.`
    ),
    isError: true
  })
}

/** `ToolExecStart` with the arguments as hooks left them, and the model's own when hooks changed them. */
const started = (turn: RunningTurn.RunningTurn, { call, hookCall, rewrittenBy }: PreparedCall): void =>
  RunningTurn.publish(turn, "ToolExecStart", {
    toolCallId: call.id,
    toolName: call.name,
    arguments: JSON.stringify(hookCall.arguments),
    ...(rewrittenBy === undefined ? {} : { originalArguments: call.arguments })
  })

/** `ToolExecStart`, then the tool, bounded by its timeout; every failure becomes an error result, known secrets scrubbed. */
const execute = (engine: Engine, turn: RunningTurn.RunningTurn, prepared: PreparedCall): Effect.Effect<Outcome, never, CurrentTurn> => {
  const { call, tool } = prepared
  started(turn, prepared)
  const scrub = engine.secrets.scrub
  const run = Effect.matchCauseEffectEager(tool.execute(prepared.args, toolContextOf(prepared.where, call.id)), {
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

/** `afterTool` (or `onToolFailure`) hooks, `ToolExecEnd` and the result message. */
const finalize = (engine: Engine, turn: RunningTurn.RunningTurn, prepared: PreparedCall, outcome: Outcome): Effect.Effect<Message.ToolResultMessage> => {
  const { hooks } = engine
  const point = outcome.isError ? "onToolFailure" : "afterTool"
  if (!hooks.handles(point)) return Effect.succeed(ended(turn, prepared.call, prepared.started, outcome))
  return Effect.map(
    hooks.run(point, { context: prepared.where, call: prepared.hookCall, result: outcome }),
    (patched) => ended(turn, prepared.call, prepared.started, patched.input.result)
  )
}

/** A call that did not run: `ToolExecStart` with the raw arguments, then its error result. */
const notRun = (turn: RunningTurn.RunningTurn, call: Message.ToolCall, started: number, content: string): Message.ToolResultMessage => {
  RunningTurn.publish(turn, "ToolExecStart", { toolCallId: call.id, toolName: call.name, arguments: call.arguments })
  return ended(turn, call, started, { content, isError: true })
}

/** `ToolExecEnd` and the call's result message. */
const ended = (turn: RunningTurn.RunningTurn, call: Message.ToolCall, started: number, outcome: Outcome): Message.ToolResultMessage => {
  const now = turn.clock.currentTimeMillisUnsafe()
  RunningTurn.publish(turn, "ToolExecEnd", {
    toolCallId: call.id,
    toolName: call.name,
    durationMs: now - started,
    isError: outcome.isError,
    result: Message.textOf(outcome.content)
  }, now)
  return Message.toolResult(call, outcome.content, outcome.isError)
}

/** What a tool sees of its call: where it runs (as hooks see it) and the call's id. */
const toolContextOf = (where: HookContext, toolCallId: string): ToolContext => {
  const { turnId, sessionKey, iteration, depth, parentTurnId } = where
  return parentTurnId === undefined
    ? { turnId, sessionKey, iteration, depth, toolCallId }
    : ({ turnId, sessionKey, iteration, depth, parentTurnId, toolCallId } as ToolContext)
}

/** What `parseArguments` returns for text that is not JSON. */
const NOT_JSON: unique symbol = Symbol("NOT_JSON")

/** What `parseArguments` returns for JSON nested deeper than `MAX_JSON_DEPTH`. */
const TOO_DEEP: unique symbol = Symbol("TOO_DEEP")

const parseArguments = (raw: string): unknown => {
  // checked before parsing: everything after (Schema decoding, hooks, events) recurses
  if (jsonTooDeep(raw)) return TOO_DEEP
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
