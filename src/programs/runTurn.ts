/**
 * `runTurn`: one turn of the agent loop, as DESIGN §6 describes it.
 *
 * The body runs in a child fiber so that a hard abort (interrupting that fiber) still lets
 * `runTurn` return a result (`aborted`) and publish `TurnEnd`. Nothing is written before the end,
 * so rolling back to the snapshot taken at the start is simply not writing.
 */
import { Clock, Effect, Exit, Fiber, Scope } from "effect"
import * as Message from "../domain/Message.ts"
import type { ToolDefinition } from "../domain/Provider.ts"
import type { TurnResult } from "../domain/Turn.ts"
import { CurrentTurn, type CurrentTurnShape } from "../services/CurrentTurn.ts"
import type { RegisteredTool } from "../services/ToolRegistry.ts"
import type * as CallModel from "./callModel.ts"
import type { Env } from "./Env.ts"
import type * as ExecuteTools from "./executeTools.ts"
import * as TurnContext from "./TurnContext.ts"
import { drainPending, drainSteering, gracefulAsked, gracefulRequested, hookContext, releaseChildren, type TurnControl } from "./TurnControl.ts"
import type * as TurnEnd from "./turnEnd.ts"
import * as TypedOutput from "./typedOutput.ts"

/** The hint sent (never persisted) with the last, tool-less call after a graceful interrupt. */
export const INTERRUPT_HINT = "Interrupt requested. Stop scheduling tools and provide a short final summary."

/** The parts a turn is made of, built once per loop. */
export interface Parts {
  readonly model: ReturnType<typeof CallModel.make>
  readonly executeTools: ReturnType<typeof ExecuteTools.make>
  readonly end: ReturnType<typeof TurnEnd.make>
  readonly currentTurn: (control: TurnControl) => CurrentTurnShape
}

/** The tools a turn may call now, and their definitions for the request. */
interface Toolset {
  readonly from: ReadonlyArray<RegisteredTool>
  readonly byName: ReadonlyMap<string, RegisteredTool>
  readonly definitions: ReadonlyArray<ToolDefinition>
}

/** The registry's tools, narrowed to the turn's own list if it has one. */
const toolsetOf = (tools: ReadonlyArray<RegisteredTool>, names: ReadonlyArray<string> | undefined): Toolset => {
  const byName = new Map<string, RegisteredTool>()
  for (const tool of tools) if (names === undefined || names.includes(tool.name)) byName.set(tool.name, tool)
  return { from: tools, byName, definitions: [...byName.values()].map((tool) => tool.definition) }
}

/** The turn runner over the loop's services and the parts built from them. */
export const make = (env: Env, parts: Parts) => {
  const { config, hooks, registry } = env
  const { callModel, applyBudget } = parts.model
  const { endTurn, endFromExit } = parts.end

  /** Runs one turn to its end and returns its result; never fails. */
  const runTurn = (spec: TurnContext.TurnSpec): Effect.Effect<TurnResult> =>
    Effect.gen(function*() {
      const control = spec.control
      const context = TurnContext.make(spec, env.bus, yield* Clock.Clock, parts.currentTurn(control), yield* TurnContext.isTraced)
      control.scope = yield* Scope.make()
      context.publish("TurnStart", { input: spec.input })
      // Provided once for the whole body rather than per tool call: every tool of the turn sees it.
      // Started at once rather than scheduled: the turn runs on to its first real wait (a sleep, the
      // provider) before its caller goes on, so a spawned child is already waiting on the Clock when
      // its parent does, and `TestClock.adjust` wakes every sleep due in the window.
      const fiber = yield* Effect.forkChild(Effect.provideService(turnBody(context), CurrentTurn, context.currentTurn), {
        startImmediately: true
      })
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
      const { control, spec } = context
      if (spec.rejected !== undefined) return yield* Effect.fail(spec.rejected)
      TurnContext.loaded(context, yield* spec.session.load)
      if (spec.firstOfSession) {
        const admitted = yield* hooks.sessionStart({ sessionKey: control.sessionKey })
        if (admitted._tag === "Block") {
          return yield* endTurn(context, "blocked", { error: `Session blocked by hook "${admitted.hook}": ${admitted.reason}` })
        }
      }
      if (hooks.handles("beforeTurn")) {
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
        TurnContext.append(context, ...opening.addMessages)
      }
      TurnContext.append(context, Message.user(spec.input))
      const typed = spec.output && TypedOutput.start(TypedOutput.make(spec.output.schema, spec.output.jsonSchema))
      let toolset: Toolset | undefined
      let definitions: ReadonlyArray<ToolDefinition> = []
      while (true) {
        control.iteration++
        if (control.steering.length > 0 || control.pending.length > 0) yield* injectQueuedInput(context)
        if (gracefulAsked(control)) return yield* finishGracefully(context, (yield* gracefulRequested(control))?.hint)
        if (control.iteration > config.maxIterations) return yield* endTurn(context, "max_iterations")
        const tools = yield* registry.list
        if (toolset?.from !== tools) {
          toolset = toolsetOf(tools, control.toolNames)
          // The model could not tell the two apart, and the tool's calls would be read as the answer.
          if (typed && toolset.byName.has(TypedOutput.RESPOND_TOOL)) {
            return yield* endTurn(context, "failed", {
              error: `OutputUnavailable: a tool is named "${TypedOutput.RESPOND_TOOL}", the name of the typed answer's tool; rename it to ask for a typed answer`
            })
          }
          definitions = typed ? [...toolset.definitions, typed.spec.definition] : toolset.definitions
        }
        yield* applyBudget(context)
        context.iterations++
        const response = yield* callModel(context, definitions, [], typed && TypedOutput.formatFor(typed))
        const reply = Message.assistant(response.content, response.toolCalls, {
          reasoning: response.reasoning,
          providerBlocks: response.providerBlocks
        })
        TurnContext.append(context, reply)
        const reading = typed && (yield* TypedOutput.read(typed, reply))
        const calls = reading === undefined ? response.toolCalls : reading._tag === "Tools" ? reading.calls : []
        if (calls.length > 0) yield* parts.executeTools(context, calls, toolset.byName)
        if (reading?._tag === "Rejected" && typed!.rejected > config.maxOutputRetries) {
          // Out of retries: the respond call is answered (the history stays valid), the feedback is not sent.
          TurnContext.append(context, ...reading.after.filter((message) => message.role === "tool"))
          return yield* endTurn(context, "failed", { finalMessage: reply, error: `OutputInvalid: ${reading.error}` })
        }
        if (reading !== undefined) TurnContext.append(context, ...reading.after)
        if (calls.length > 0 || reading?._tag === "Tools" || reading?._tag === "Rejected") continue
        const verdict = yield* decideStop(context, reply)
        if (verdict !== "continue") return yield* endTurn(context, verdict, { finalMessage: reply, output: reading?.value })
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

  /** A graceful interrupt's end: one last call without tools, with the hint; its tool calls are ignored. */
  const finishGracefully = (context: TurnContext.TurnContext, hint: string | undefined) =>
    Effect.gen(function*() {
      const prompt = hint ? `${INTERRUPT_HINT}\n${hint}` : INTERRUPT_HINT
      context.iterations++
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
  const decideStop = (
    context: TurnContext.TurnContext,
    reply: Message.AssistantMessage
  ): Effect.Effect<"continue" | "completed" | "interrupted"> => {
    const control = context.control
    if (control.steering.length > 0) return Effect.succeed(control.iteration < config.maxIterations ? "continue" : "completed")
    if (gracefulAsked(control)) return Effect.succeed("interrupted")
    if (context.stopBlocks >= config.maxStopBlocks || !hooks.handles("beforeStop")) return Effect.succeed("completed")
    return Effect.map(
      hooks.beforeStop({ context: hookContext(control), finalMessage: reply, stopHookActive: context.stopBlocks > 0 }),
      (gate) => {
        if (gate._tag === "Continue") return "completed"
        context.stopBlocks++
        TurnContext.append(context, Message.user(gate.reason))
        return "continue"
      }
    )
  }

  return runTurn
}
