/**
 * One iteration's model call (DESIGN §6 steps 3–4): the request under the context's soft limits,
 * `beforeLLMRequest` hooks, the provider call with its retries (`providerCall.ts`), recovery from
 * context overflow and from truncated answers, `afterLLMResponse` hooks and `LLMResponse`.
 */
import * as Effect from "effect/Effect"
import { acceptsImages, type AgentLoopConfig, contextBudget } from "../../domain/Config.ts"
import { type ProviderError, TurnAborted } from "../../domain/errors.ts"
import * as Message from "../../domain/Message.ts"
import * as ModelOptions from "../../domain/ModelOptions.ts"
import type { OutputFormat, ProviderRequest, ToolDefinition } from "../../domain/Provider.ts"
import * as Usage from "../../domain/Usage.ts"
import {
  type Compression,
  dropOldestHalf,
  fitToBudget,
  fitToCount,
  halveNewestToolResult,
  type Shrink,
  shrinkOversizedToolResult
} from "./compaction.ts"
import type { Engine } from "./engine.ts"
import * as Scrub from "./scrub.ts"
import { attempt, type ModelResponse } from "./providerCall.ts"
import { spanned } from "./tracing.ts"
import * as RunningTurn from "./runningTurn.ts"
import { stopFor } from "./turnEnd.ts"

export type { ModelResponse } from "./providerCall.ts"

/** The recovery prompt after a truncated answer. */
export const TRUNCATION_PROMPT = "Your answer was truncated because it was too long. Answer again, shorter and complete."

/** The `reason` of the `LLMRetry` published when a truncated answer is asked for again. */
export const TRUNCATION_RETRY_REASON = "Truncated: the answer hit the output token limit (finish reason length); asking for a shorter one"

/** What one model call asks for. */
export interface Ask {
  /** The tools offered; none for the graceful-interrupt summary. */
  readonly tools: ReadonlyArray<ToolDefinition>
  /** Messages sent after the conversation but never kept (the graceful-interrupt hint). */
  readonly extra?: ReadonlyArray<Message.Message> | undefined
  /** The typed answer asked for (`typedOutput.ts`). */
  readonly output?: OutputFormat | undefined
}

/**
 * Calls the model once for this iteration, with every recovery of DESIGN §6 step 3, and returns
 * the response after `afterLLMResponse`.
 */
export const callModel = Effect.fnUntraced(function*(engine: Engine, turn: RunningTurn.RunningTurn, ask: Ask) {
  const { config, hooks } = engine
  const extra = ask.extra ?? []
  let overflowRetries = 0
  let truncationRetries = 0
  let transient: ReadonlyArray<Message.Message> = extra
  while (true) {
    const built = buildRequest(turn, ask, transient)
    let request = built
    if (hooks.handles("beforeLLMRequest")) {
      const planned = yield* hooks.run("beforeLLMRequest", { context: RunningTurn.hookContext(turn), request })
      if (planned._tag !== "Continue") return yield* stopFor(turn, "beforeLLMRequest", planned)
      request = planned.input.request
    }
    RunningTurn.setPhase(turn, "llm")
    const started = turn.clock.currentTimeMillisUnsafe()
    RunningTurn.publish(turn, "LLMRequest", requestEvent(request), started)
    // A hook's request may hold anything; the loop's own holds parts only if its messages may.
    const sent = request !== built || turn.partsSeen || (transient.length > 0 && RunningTurn.holdsParts(transient)) ? forModel(config, request) : request
    const outcome = yield* (turn.traced ? tracedAttempt(engine, turn, sent) : attempt(turn, engine.provider, engine.retry, sent, config.maxResponseBytes))
    if (outcome._tag === "overflow") {
      if (overflowRetries >= config.maxCompressRetries || !(yield* recoverFromOverflow(engine, turn))) {
        return yield* Effect.fail<ProviderError>(outcome.error)
      }
      overflowRetries++
      continue
    }
    // What the model said, with any known secret replaced, before hooks, events, tools or the history see it.
    const scrubbed = Scrub.reply(engine.secrets, outcome.response)
    const response = config.prices === undefined ? scrubbed : yield* priced(engine, turn, request.model, scrubbed)
    RunningTurn.setPartial(turn, [])
    RunningTurn.addUsage(turn, response.usage)
    if (response.finishReason === "length" && response.toolCalls.length === 0 && truncationRetries < config.maxTruncationRetries) {
      truncationRetries++
      transient = [...extra, Message.assistant(response.content), Message.user(TRUNCATION_PROMPT)]
      // Announced like any retry, so a renderer knows the text it streamed is superseded.
      RunningTurn.publish(turn, "LLMRetry", { attempt: truncationRetries, reason: TRUNCATION_RETRY_REASON, delayMs: 0 })
      continue
    }
    let final = response
    if (hooks.handles("afterLLMResponse")) {
      const reviewed = yield* hooks.run("afterLLMResponse", {
        context: RunningTurn.hookContext(turn),
        response: { content: response.content, toolCalls: response.toolCalls, finishReason: response.finishReason }
      })
      if (reviewed._tag !== "Continue") return yield* stopFor(turn, "afterLLMResponse", reviewed)
      final = { ...response, content: reviewed.input.response.content, toolCalls: reviewed.input.response.toolCalls }
    }
    const now = turn.clock.currentTimeMillisUnsafe()
    RunningTurn.publish(turn, "LLMResponse", {
      model: request.model,
      content: final.content,
      toolCalls: final.toolCalls,
      finishReason: final.finishReason,
      usage: final.usage,
      durationMs: now - started
    }, now)
    return final
  }
})

/**
 * The provider call in a `chat {model}` CLIENT span (the GenAI conventions' name and kind),
 * annotated with the usage and finish reason of its response; a call that failed (an error the
 * retries did not get past, or a context overflow) ends the span in error.
 */
const tracedAttempt = (engine: Engine, turn: RunningTurn.RunningTurn, sent: ProviderRequest) =>
  spanned(
    `chat ${sent.model}`,
    () => ({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": sent.model,
      "gen_ai.conversation.id": turn.sessionKey,
      ...(engine.provider.name === undefined ? {} : { "gen_ai.provider.name": engine.provider.name })
    }),
    () => attempt(turn, engine.provider, engine.retry, sent, engine.config.maxResponseBytes),
    {
      kind: "client",
      annotate: (outcome) =>
        outcome._tag === "ok"
          ? {
            "gen_ai.usage.input_tokens": outcome.response.usage.inputTokens,
            "gen_ai.usage.output_tokens": outcome.response.usage.outputTokens,
            "gen_ai.response.finish_reasons": [outcome.response.finishReason],
            ...(outcome.response.responseId === undefined ? {} : { "gen_ai.response.id": outcome.response.responseId }),
            ...(outcome.response.responseModel === undefined ? {} : { "gen_ai.response.model": outcome.response.responseModel })
          }
          : undefined,
      failure: (outcome) => outcome._tag === "overflow" ? { type: outcome.error._tag, message: outcome.error.message } : undefined
    }
  )

/** The assistant message of a response. */
export const replyOf = (response: ModelResponse): Message.AssistantMessage =>
  Message.assistant(response.content, response.toolCalls, { reasoning: response.reasoning, providerBlocks: response.providerBlocks })

/** The messages of this iteration's request: the system prompt, the conversation, then `extra` — one copy. */
const requestMessages = (turn: RunningTurn.RunningTurn, extra: ReadonlyArray<Message.Message>): Array<Message.Message> =>
  turn.systemMessage
    ? ([turn.systemMessage] as Array<Message.Message>).concat(turn.conversation, extra)
    : extra.length > 0
    ? turn.conversation.concat(extra)
    : turn.conversation.slice()

/**
 * Makes the request of this iteration: the conversation, with the tools (and the typed answer
 * asked for), under the turn's model options (its output limit among them: the config's, under
 * the turn's own, under a sub-turn's, merged once when the turn is made).
 */
const buildRequest = (turn: RunningTurn.RunningTurn, ask: Ask, extra: ReadonlyArray<Message.Message>): ProviderRequest => ({
  ...turn.modelOptions,
  model: turn.model,
  messages: requestMessages(turn, extra),
  tools: ask.tools,
  ...(ask.output === undefined ? {} : { output: ask.output })
})

/**
 * The request as the model may see it: for a model that does not accept images (see
 * `acceptsImages`), every image becomes its text placeholder, as MCP images were before parts.
 * Called only when a message may hold parts, sparing a scan of the whole request otherwise.
 */
const forModel = (config: AgentLoopConfig, request: ProviderRequest): ProviderRequest =>
  !RunningTurn.holdsParts(request.messages) || acceptsImages(config, request.model) ? request : {
    ...request,
    messages: request.messages.map((m) => m.role === "user" || m.role === "tool" ? { ...m, content: Message.withoutImages(m.content) } : m)
  }

/**
 * Adds `costUsd` for the model actually called when the config has a price table. A model
 * missing from the table costs 0 with a warning (once per model and turn), never a failed turn.
 */
const priced = (engine: Engine, turn: RunningTurn.RunningTurn, model: string, response: ModelResponse): Effect.Effect<ModelResponse> => {
  const prices = engine.config.prices
  if (prices === undefined) return Effect.succeed(response)
  const price = prices[model]
  if (price !== undefined) return Effect.succeed({ ...response, usage: { ...response.usage, costUsd: Usage.cost(response.usage, price) } })
  const free = { ...response, usage: { ...response.usage, costUsd: 0 } }
  if (!RunningTurn.firstUnpriced(turn, model)) return Effect.succeed(free)
  return Effect.as(Effect.logWarning(`No price for model "${model}"; its cost counts as 0`), free)
}

/**
 * After a context overflow, the first of these that changes the context: an oversized newest tool
 * result cut, the oldest half dropped, the newest tool result halved. False when none could.
 */
const recoverFromOverflow = Effect.fnUntraced(function*(engine: Engine, turn: RunningTurn.RunningTurn) {
  const window = engine.config.contextWindow
  return (yield* shrinkToolResult(turn, shrinkOversizedToolResult(turn.conversation, window))) ||
    (yield* compress(engine, turn, "overflow", dropOldestHalf(turn.conversation))) ||
    (yield* shrinkToolResult(turn, halveNewestToolResult(turn.conversation)))
})

/** Shortens the conversation, `beforeCompact` hooks permitting; the turn's compaction record follows it. */
const compress = Effect.fnUntraced(function*(engine: Engine, turn: RunningTurn.RunningTurn, reason: "overflow" | "budget", compression: Compression) {
  if (compression.dropped === 0) return false
  const { hooks } = engine
  const verdict = yield* hooks.run("beforeCompact", { context: RunningTurn.hookContext(turn), reason, messages: turn.conversation })
  if (verdict._tag === "AbortTurn") return yield* new TurnAborted({ stage: "beforeCompact", reason: verdict.reason, hook: verdict.hook })
  RunningTurn.compacted(turn, reason, compression)
  RunningTurn.publish(turn, "ContextCompress", { reason, dropped: compression.dropped, remaining: compression.kept.length })
  yield* hooks.run("afterCompact", { context: RunningTurn.hookContext(turn), reason, dropped: compression.dropped, remaining: compression.kept.length })
  return true
})

/**
 * Cuts the newest tool result in the context as `shrink` says (a `ContextCompress` that dropped no
 * message). Only the context: the session stores the result in full (recovery never destroys
 * history), so a later turn that overflows on it again cuts it again.
 */
const shrinkToolResult = (turn: RunningTurn.RunningTurn, shrink: Shrink | undefined): Effect.Effect<boolean> =>
  Effect.sync(() => {
    if (shrink === undefined) return false
    RunningTurn.replaceContext(turn, shrink.kept)
    RunningTurn.publish(turn, "ContextCompress", { reason: "overflow", dropped: 0, remaining: shrink.kept.length })
    return true
  })

const budgetOf = (engine: Engine, turn: RunningTurn.RunningTurn): number | undefined =>
  turn.start.contextBudget ?? contextBudget(engine.config.maxContextRunes, engine.config.contextWindow)

/** Whether the turn has soft limits (`applyBudget`) at all: the same for all its calls. */
export const budgeted = (engine: Engine, turn: RunningTurn.RunningTurn): boolean =>
  budgetOf(engine, turn) !== undefined || turn.start.maxMessages !== undefined

/**
 * The soft limits, before each call: drop the oldest messages beyond `maxContextRunes` (and, for
 * sub-turns, beyond their message cap).
 */
export const applyBudget = Effect.fnUntraced(function*(engine: Engine, turn: RunningTurn.RunningTurn) {
  const maxMessages = turn.start.maxMessages
  const budget = budgetOf(engine, turn)
  if (maxMessages !== undefined) yield* compress(engine, turn, "budget", fitToCount(turn.conversation, maxMessages))
  if (budget !== undefined) yield* compress(engine, turn, "budget", fitToBudget(turn.conversation, budget))
})

/** What the `LLMRequest` event tells of a request: its model, sizes, the tools' names and the options set. */
const requestEvent = (request: ProviderRequest) => {
  // the named options only: a hook's request may carry fields of its own, which are not the event's
  const options = ModelOptions.pick(request)
  const base = { model: request.model, messageCount: request.messages.length, toolCount: request.tools.length, tools: request.tools.map((tool) => tool.name) }
  return Object.keys(options).length === 0 ? base : { ...base, options }
}
