/**
 * `runTurn`: one turn of the agent loop, as DESIGN §6 describes it.
 *
 * The body runs in a child fiber so that a hard abort (interrupting that fiber) still lets
 * `runTurn` return a result (`aborted`) and publish `TurnEnd`. Nothing is written before the end,
 * so rolling back to the snapshot taken at the start is simply not writing.
 */
import { Effect, Exit, Fiber, Scope } from "effect"
import { SessionStoreError } from "../domain/errors.ts"
import * as Message from "../domain/Message.ts"
import type { TurnResult } from "../domain/Turn.ts"
import type { RegisteredTool } from "../services/ToolRegistry.ts"
import { applyBudget, callModel } from "./callModel.ts"
import { executeTools } from "./executeTools.ts"
import * as TurnContext from "./TurnContext.ts"
import { drainPending, drainSteering, gracefulRequested, hookContext, releaseChildren } from "./TurnControl.ts"
import { endFromExit, endTurn } from "./turnEnd.ts"

/** The hint sent (never persisted) with the last, tool-less call after a graceful interrupt. */
export const INTERRUPT_HINT = "Interrupt requested. Stop scheduling tools and provide a short final summary."

/** Runs one turn to its end and returns its result; never fails. */
export const runTurn = (spec: TurnContext.TurnSpec) =>
  Effect.gen(function*() {
    const context = yield* TurnContext.make(spec)
    const control = spec.control
    control.scope = yield* Scope.make()
    yield* context.emit("TurnStart", { input: spec.input })
    const fiber = yield* Effect.forkChild(turnBody(context))
    control.fiber = fiber
    if (control.hardAbortAnnounced) yield* Fiber.interrupt(fiber)
    const settle = (exit: Exit.Exit<TurnResult, unknown>) =>
      Effect.tap(endFromExit(context, exit), (result) => releaseChildren(control, result.status === "aborted"))
    return yield* Fiber.await(fiber).pipe(
      Effect.onInterrupt(() => Effect.flatMap(Effect.andThen(Fiber.interrupt(fiber), Fiber.await(fiber)), settle)),
      Effect.flatMap(settle)
    )
  }).pipe(Effect.withSpan("agent.turn", {
    attributes: {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.request.model": spec.control.model,
      "agent.session.key": spec.control.sessionKey,
      "agent.turn.id": spec.control.turnId,
      "agent.turn.depth": spec.control.depth
    }
  }, TurnContext.noStackTrace))

/** Steps 1–7 for one turn. */
const turnBody = (context: TurnContext.TurnContext) =>
  Effect.gen(function*() {
    const { config, control, hooks, spec } = context
    if (spec.history instanceof SessionStoreError) return yield* Effect.fail(spec.history)
    if (spec.firstOfSession) {
      const admitted = yield* hooks.sessionStart({ sessionKey: control.sessionKey })
      if (admitted._tag === "Block") {
        return yield* endTurn(context, "blocked", { error: `Session blocked by hook "${admitted.hook}": ${admitted.reason}` })
      }
    }
    const opening = yield* hooks.beforeTurn({
      context: hookContext(control),
      input: spec.input,
      messages: context.conversation,
      systemPrompt: context.systemPrompt
    })
    if (opening._tag === "Block") {
      return yield* endTurn(context, "blocked", { error: `Blocked by hook "${opening.hook}": ${opening.reason}` })
    }
    context.systemPrompt = opening.systemPrompt
    TurnContext.append(context, ...opening.addMessages, Message.user(spec.input))
    while (true) {
      control.iteration++
      yield* injectQueuedInput(context)
      const graceful = yield* gracefulRequested(control)
      if (graceful) return yield* finishGracefully(context, graceful.hint)
      if (control.iteration > config.maxIterations) return yield* endTurn(context, "max_iterations")
      const tools = yield* availableTools(context)
      yield* applyBudget(context)
      const response = yield* callModel(context, [...tools.values()].map((tool) => tool.definition))
      const reply = Message.assistant(response.content, response.toolCalls, { reasoning: response.reasoning })
      TurnContext.append(context, reply)
      if (response.toolCalls.length > 0) {
        yield* executeTools(context, response.toolCalls, tools)
        continue
      }
      const verdict = yield* decideStop(context, reply)
      if (verdict !== "continue") return yield* endTurn(context, verdict, { finalMessage: reply })
    }
  })

/** Step 2: queued steering, then pending sub-turn results, join the conversation. */
const injectQueuedInput = (context: TurnContext.TurnContext) =>
  Effect.gen(function*() {
    const steering = yield* drainSteering(context.control)
    if (steering.length > 0) {
      TurnContext.append(context, ...steering.map(Message.user))
      yield* context.emit("SteeringInjected", { count: steering.length })
    }
    for (const result of yield* drainPending(context.control)) {
      TurnContext.append(context, Message.user(`[SubTurn Result] ${result.content}`))
      yield* context.emit("SubTurnResultDelivered", { childTurnId: result.childTurnId })
    }
  })

/** The tools this turn may call now: the registry's, narrowed to the turn's own list if it has one. */
const availableTools = (context: TurnContext.TurnContext) =>
  Effect.map(context.registry.list, (tools) => {
    const names = context.control.toolNames
    const available = new Map<string, RegisteredTool>()
    for (const tool of tools) if (names === undefined || names.includes(tool.name)) available.set(tool.name, tool)
    return available
  })

/** A graceful interrupt's end: one last call without tools, with the hint; its tool calls are ignored. */
const finishGracefully = (context: TurnContext.TurnContext, hint: string | undefined) =>
  Effect.gen(function*() {
    const prompt = hint ? `${INTERRUPT_HINT}\n${hint}` : INTERRUPT_HINT
    const response = yield* callModel(context, [], [Message.user(prompt)])
    const reply = Message.assistant(response.content)
    TurnContext.append(context, reply)
    return yield* endTurn(context, "interrupted", { finalMessage: reply })
  })

/**
 * Step 6: a final answer. Pending steering keeps the turn going while iterations remain; a
 * pending graceful interrupt ends it `interrupted` (the answer is the summary); otherwise the
 * `beforeStop` quality gate may send feedback and go on, at most `maxStopBlocks` times.
 */
const decideStop = (context: TurnContext.TurnContext, reply: Message.AssistantMessage) =>
  Effect.gen(function*() {
    const { config, control } = context
    if (control.steering.length > 0) return control.iteration < config.maxIterations ? "continue" : "completed"
    if (yield* gracefulRequested(control)) return "interrupted"
    if (context.stopBlocks >= config.maxStopBlocks) return "completed"
    const gate = yield* context.hooks.beforeStop({
      context: hookContext(control),
      finalMessage: reply,
      stopHookActive: context.stopBlocks > 0
    })
    if (gate._tag === "Continue") return "completed"
    context.stopBlocks++
    TurnContext.append(context, Message.user(gate.reason))
    return "continue"
  }) as Effect.Effect<"continue" | "completed" | "interrupted">
