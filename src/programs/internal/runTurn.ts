/**
 * `runTurn`: one turn of the agent loop, as DESIGN §6 describes it.
 *
 * The body runs in a fiber of its own, so that a hard abort (`hardAbort.ts`) still lets `runTurn`
 * return a result (`aborted`) and publish `TurnEnd`. Nothing is written before the end, so rolling
 * back to the snapshot taken at the start is simply not writing.
 */
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import { INTERRUPTED_BY_CRASH, type TurnCheckpoint } from "../../domain/Checkpoint.ts"
import { CheckpointStale, OutputInvalid, OutputUnavailable, TurnBlocked } from "../../domain/errors.ts"
import * as Message from "../../domain/Message.ts"
import type { ToolDefinition } from "../../domain/Provider.ts"
import { EXIT_PLAN_MODE } from "../../domain/Tool.ts"
import type { TurnResult } from "../../domain/Turn.ts"
import { CurrentTurn } from "../../services/CurrentTurn.ts"
import type { RegisteredTool } from "../../services/ToolRegistry.ts"
import { applyBudget, budgeted, callModel, replyOf } from "./callModel.ts"
import * as Checkpoints from "./checkpoint.ts"
import type { Engine } from "./engine.ts"
import { executeTools } from "./executeTools.ts"
import * as HardAbort from "./hardAbort.ts"
import { currentTurn } from "./subTurn.ts"
import { isTraced, type SpanFailure, spanned } from "./tracing.ts"
import * as RunningTurn from "./runningTurn.ts"
import { endTurn, settle } from "./turnEnd.ts"
import * as TypedOutput from "./typedOutput.ts"

/** The hint sent (never persisted) with the last, tool-less call after a graceful interrupt. */
export const INTERRUPT_HINT = "Interrupt requested. Stop scheduling tools and provide a short final summary."

/** Runs one turn to its end and returns its result, in an `invoke_agent` span when traced; never fails. */
export const runTurn = (engine: Engine, turn: RunningTurn.RunningTurn, start: RunningTurn.Start): Effect.Effect<TurnResult> =>
  Effect.flatMap(isTraced, (traced) => {
    const run = Effect.gen(function*() {
      RunningTurn.begin(turn, start, traced, yield* Scope.make())
      RunningTurn.publish(turn, "TurnStart", { input: Message.mapStrings(start.input, engine.secrets.scrub) })
      // Provided once for the whole body rather than per tool call: every tool of the turn sees it.
      const body = Effect.provideService(turnBody(engine, turn), CurrentTurn, currentTurn(engine, turn, runTurn))
      return yield* HardAbort.abortable(turn, body, (exit) => settle(engine, turn, exit))
    })
    // Untraced, no span: a span's stack frame would annotate every failure of the turn, a stream's end included.
    return traced ? spanned(`invoke_agent ${AGENT_NAME}`, () => turnAttributes(turn), () => run, { failure: turnFailure }) : run
  })

/** The agent's name in traces (`gen_ai.agent.name`). */
const AGENT_NAME = "agent-loop"

const turnAttributes = (turn: RunningTurn.RunningTurn) => ({
  "gen_ai.operation.name": "invoke_agent",
  "gen_ai.agent.name": AGENT_NAME,
  "gen_ai.request.model": turn.model,
  "gen_ai.conversation.id": turn.sessionKey,
  "agent.session.key": turn.sessionKey,
  "agent.turn.id": turn.turnId,
  "agent.turn.depth": turn.depth
})

/** A turn that failed or was aborted ends its span in error (an interrupted one asked to stop: not an error). */
const turnFailure = (result: TurnResult): SpanFailure | undefined =>
  result.status === "failed" || result.status === "aborted" || result.status === "blocked"
    ? { type: result.failure?._tag ?? result.status, message: result.error ?? result.status }
    : undefined

/** Steps 1–7 of a turn: the loop. */
const turnBody = Effect.fnUntraced(function*(engine: Engine, turn: RunningTurn.RunningTurn) {
  const { config } = engine
  const blocked = yield* openTurn(engine, turn)
  if (blocked !== undefined) return yield* endTurn(engine, turn, "blocked", { failure: blocked })
  const typed = turn.start.output && TypedOutput.start(TypedOutput.make(turn.start.output.schema, turn.start.output.jsonSchema))
  const tools = toolsetCache(turn, typed)
  const limited = budgeted(engine, turn)
  const resume = turn.start.checkpoint?.resume
  if (resume !== undefined) {
    const refused = yield* resumeFrom(engine, turn, resume, tools)
    if (refused !== undefined) return yield* endTurn(engine, turn, refused instanceof CheckpointStale ? "aborted" : "failed", { failure: refused })
  }
  while (true) {
    injectQueuedInput(turn)
    if (RunningTurn.gracefulAsked(turn)) return yield* finishGracefully(engine, turn)
    if (turn.iteration >= config.maxIterations) return yield* endTurn(engine, turn, "max_iterations")
    const toolset = tools.of(yield* engine.registry.list)
    if (toolset instanceof OutputUnavailable) return yield* endTurn(engine, turn, "failed", { failure: toolset })
    if (limited) yield* applyBudget(engine, turn)
    RunningTurn.nextIteration(turn)
    const reply = replyOf(yield* callModel(engine, turn, { tools: toolset.definitions, output: typed && TypedOutput.formatFor(typed) }))
    RunningTurn.append(turn, reply)
    const next = typed ? yield* TypedOutput.next(typed, reply, config.maxOutputRetries) : TypedOutput.untyped(reply)
    if (next._tag === "Tools") {
      if (turn.start.checkpoint !== undefined) yield* Checkpoints.replied(engine, turn)
      yield* executeTools(engine, turn, next.calls, toolset.byName)
      // plan mode with no one to accept the plan: the plan is the turn's answer
      if (turn.planEnd !== undefined) return yield* endWithPlan(engine, turn, turn.planEnd)
    }
    RunningTurn.append(turn, ...next.after)
    if (next._tag === "Failed") return yield* endTurn(engine, turn, "failed", { finalMessage: reply, failure: new OutputInvalid({ message: next.error }) })
    if (next._tag !== "Final") continue
    const verdict = yield* decideStop(engine, turn, reply)
    if (verdict !== "continue") return yield* endTurn(engine, turn, verdict, { finalMessage: reply, output: next.output })
  }
})

/** The end of a turn whose plan nobody could accept: the plan, as its answer. */
const endWithPlan = (engine: Engine, turn: RunningTurn.RunningTurn, plan: string) => {
  const answer = Message.assistant(plan)
  RunningTurn.append(turn, answer)
  return endTurn(engine, turn, "completed", { finalMessage: answer })
}

/** Step 1: the history, `sessionStart` and `beforeTurn` hooks, the input. Why the turn is blocked, if it is. */
const openTurn = Effect.fnUntraced(function*(engine: Engine, turn: RunningTurn.RunningTurn) {
  const { hooks } = engine
  const start = turn.start
  if (start.rejected !== undefined) return yield* Effect.fail(start.rejected)
  RunningTurn.loaded(turn, yield* start.session.load)
  if (start.firstOfSession) {
    const admitted = yield* hooks.run("sessionStart", { sessionKey: turn.sessionKey })
    if (admitted._tag === "Block") return new TurnBlocked({ stage: "sessionStart", hook: admitted.hook, reason: admitted.reason })
  }
  // a resumed turn's input and `beforeTurn` changes are in its checkpoint (`resumeFrom`)
  if (start.checkpoint?.resume !== undefined) return undefined
  if (hooks.handles("beforeTurn")) {
    const messages = turn.conversation
    const opening = yield* hooks.run("beforeTurn", { context: RunningTurn.hookContext(turn), input: start.input, messages, systemPrompt: turn.systemPrompt })
    if (opening._tag === "Block") return new TurnBlocked({ stage: "beforeTurn", hook: opening.hook, reason: opening.reason })
    RunningTurn.setSystemPrompt(turn, opening.input.systemPrompt)
    RunningTurn.append(turn, ...opening.input.messages.slice(messages.length))
  }
  RunningTurn.append(turn, Message.user(start.input))
  return undefined
})

/**
 * A turn resuming from its checkpoint (`checkpoint.ts`), on the history it was taken on:
 * restored, `Resumed` published, then the calls of its last reply finished (those with results
 * keep them, those cut short get theirs). Why it cannot resume, if it cannot.
 */
const resumeFrom = Effect.fnUntraced(function*(
  engine: Engine,
  turn: RunningTurn.RunningTurn,
  checkpoint: TurnCheckpoint,
  tools: ReturnType<typeof toolsetCache>
) {
  if (checkpoint.historyLength !== turn.historyLength) {
    return new CheckpointStale({
      turnId: turn.turnId,
      message: `the session's history changed since the turn's last checkpoint (${checkpoint.historyLength} messages then, ${turn.historyLength} now), so it was not resumed`
    })
  }
  const toolset = tools.of(yield* engine.registry.list)
  if (toolset instanceof OutputUnavailable) return toolset
  const resumption = Checkpoints.restore(turn, checkpoint, toolset.byName)
  const runner = turn.start.checkpoint?.runner
  RunningTurn.publish(turn, "Resumed", {
    fromIteration: checkpoint.iteration,
    ...(runner === undefined ? {} : { runner }),
    rerun: resumption?.rerun ?? [],
    interrupted: resumption?.interrupted ?? []
  })
  if (resumption === undefined) return undefined
  for (const id of resumption.interrupted) {
    RunningTurn.publish(turn, "ToolExecSkipped", { toolCallId: id, toolName: resumption.settled.get(id)!.toolName, reason: INTERRUPTED_BY_CRASH })
  }
  yield* executeTools(engine, turn, resumption.calls, toolset.byName, resumption.settled)
  return undefined
})

/** The tools a turn may call now, and their definitions for the request. */
interface Toolset {
  readonly byName: ReadonlyMap<string, RegisteredTool>
  readonly definitions: ReadonlyArray<ToolDefinition>
}

/**
 * The turn's tools as of each iteration (the registry may change during a turn), narrowed to the
 * turn's own list if it has one, with the typed answer's tool; rebuilt only when the registry's
 * list changed. `OutputUnavailable` when a registered tool has the answer tool's name: the model
 * could not tell the two apart.
 */
const toolsetCache = (turn: RunningTurn.RunningTurn, typed: TypedOutput.OutputState | undefined) => {
  let from: ReadonlyArray<RegisteredTool> | undefined
  let planning: boolean | undefined
  let toolset: Toolset | OutputUnavailable = { byName: new Map(), definitions: [] }
  const rebuild = (tools: ReadonlyArray<RegisteredTool>): Toolset | OutputUnavailable => {
    from = tools
    planning = turn.planning === true
    const byName = new Map<string, RegisteredTool>()
    for (const tool of tools) {
      if (turn.toolNames !== undefined && !turn.toolNames.includes(tool.name)) continue
      if (offeredInMode(tool, planning, turn.depth)) byName.set(tool.name, tool)
    }
    if (typed && byName.has(TypedOutput.RESPOND_TOOL)) {
      return new OutputUnavailable({
        message: `a tool is named "${TypedOutput.RESPOND_TOOL}", the name of the typed answer's tool; rename it to ask for a typed answer`
      })
    }
    const definitions = [...byName.values()].map((tool) => tool.definition)
    return { byName, definitions: typed ? [...definitions, typed.spec.definition] : definitions }
  }
  return {
    of: (tools: ReadonlyArray<RegisteredTool>) => from === tools && planning === (turn.planning === true) ? toolset : (toolset = rebuild(tools))
  }
}

/**
 * Whether a tool is offered in the turn's mode: planning, the read-only ones and (to a root turn)
 * `exit_plan_mode`; otherwise all but `exit_plan_mode`, which only ends plan mode.
 */
const offeredInMode = (tool: RegisteredTool, planning: boolean, depth: number): boolean => {
  if (tool.name === EXIT_PLAN_MODE) return planning && depth === 0
  return !planning || tool.readOnly
}

/** Step 2: queued steering, then pending sub-turn results, join the conversation. */
const injectQueuedInput = (turn: RunningTurn.RunningTurn): void => {
  if (turn.steering.length === 0 && turn.pending.length === 0) return
  const steering = RunningTurn.drainSteering(turn)
  if (steering.length > 0) {
    RunningTurn.append(turn, ...steering.map(Message.user))
    RunningTurn.publish(turn, "SteeringInjected", { count: steering.length })
  }
  for (const result of RunningTurn.drainPending(turn)) {
    RunningTurn.append(turn, Message.user(`[SubTurn Result] ${result.content}`))
    RunningTurn.publish(turn, "SubTurnResultDelivered", { childTurnId: result.childTurnId })
  }
}

/** A graceful interrupt's end: one last call without tools, with the hint; its tool calls are ignored. */
const finishGracefully = Effect.fnUntraced(function*(engine: Engine, turn: RunningTurn.RunningTurn) {
  const hint = (yield* RunningTurn.gracefulRequested(turn))?.hint
  RunningTurn.nextIteration(turn)
  const response = yield* callModel(engine, turn, { tools: [], extra: [Message.user(hint ? `${INTERRUPT_HINT}\n${hint}` : INTERRUPT_HINT)] })
  const reply = Message.assistant(response.content)
  RunningTurn.append(turn, reply)
  return yield* endTurn(engine, turn, "interrupted", { finalMessage: reply })
})

/**
 * Step 6: a final answer. Pending steering keeps the turn going while iterations remain; a
 * pending graceful interrupt ends it `interrupted` (the answer is the summary); otherwise the
 * `beforeStop` quality gate may send feedback and go on, at most `maxStopBlocks` times.
 */
const decideStop = (engine: Engine, turn: RunningTurn.RunningTurn, reply: Message.AssistantMessage): Effect.Effect<"continue" | "completed" | "interrupted"> => {
  const { config, hooks } = engine
  if (turn.steering.length > 0) return Effect.succeed(turn.iteration < config.maxIterations ? "continue" : "completed")
  if (RunningTurn.gracefulAsked(turn)) return Effect.succeed("interrupted")
  if (turn.stopBlocks >= config.maxStopBlocks || !hooks.handles("beforeStop")) return Effect.succeed("completed")
  return Effect.map(
    hooks.run("beforeStop", { context: RunningTurn.hookContext(turn), finalMessage: reply, stopHookActive: turn.stopBlocks > 0 }),
    (gate) => {
      if (gate._tag === "Continue") return "completed"
      RunningTurn.stopBlocked(turn)
      RunningTurn.append(turn, Message.user(gate.reason))
      return "continue"
    }
  )
}
