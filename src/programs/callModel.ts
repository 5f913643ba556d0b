/**
 * One iteration's provider call (DESIGN §6 steps 3–4): `beforeLLMRequest` hooks, the streamed
 * response with `LLMDelta`s, retries on the Clock, recovery from context overflow and from
 * truncated answers, `afterLLMResponse` hooks and `LLMResponse`.
 */
import { Duration, Effect, Schedule, Stream } from "effect"
import { acceptsImages, type AgentLoopConfig, contextBudget, type RetryPolicy } from "../domain/Config.ts"
import { type ContextLengthExceeded, MalformedResponse, type ProviderError } from "../domain/errors.ts"
import * as Message from "../domain/Message.ts"
import type { FinishReason, OutputFormat, ProviderChunk, ProviderRequest, ToolDefinition } from "../domain/Provider.ts"
import * as Usage from "../domain/Usage.ts"
import { Provider } from "../services/Provider.ts"
import {
  type Compression,
  dropOldestHalf,
  fitToBudget,
  fitToCount,
  halveNewestToolResult,
  type Shrink,
  shrinkOversizedToolResult
} from "./compaction.ts"
import type { Env } from "./Env.ts"
import { compacted, type Emit, holdsParts, spanned, type TurnContext } from "./TurnContext.ts"
import { hookContext } from "./TurnControl.ts"
import { stopFor, TurnAborted } from "./turnEnd.ts"

/** The recovery prompt after a truncated answer. */
export const TRUNCATION_PROMPT = "Your answer was truncated because it was too long. Answer again, shorter and complete."

/** The `reason` of the `LLMRetry` published when a truncated answer is asked for again. */
export const TRUNCATION_RETRY_REASON = "Truncated: the answer hit the output token limit (finish reason length); asking for a shorter one"

/** A complete response as the loop keeps it. */
export interface ModelResponse {
  readonly content: string
  readonly reasoning: string
  /** What the provider needs back with this reply (`AssistantMessage.providerBlocks`). */
  readonly providerBlocks: ReadonlyArray<Message.ProviderBlock>
  readonly toolCalls: ReadonlyArray<Message.ToolCall>
  readonly finishReason: FinishReason
  readonly usage: Usage.Usage
}

interface CallAccumulator {
  content: string
  reasoning: string
  readonly blocks: Array<Message.ProviderBlock>
  readonly calls: Map<number, { id: string | undefined; name: string | undefined; args: string }>
  finish: { readonly reason: FinishReason; readonly usage: Usage.Usage | undefined } | undefined
}

const retryable = (error: ProviderError): boolean => error._tag === "RateLimited" || error._tag === "ProviderUnavailable"

/** A provider call's outcome: a response, or a context overflow to recover from. */
type Attempt =
  | { readonly _tag: "ok"; readonly response: ModelResponse }
  | { readonly _tag: "overflow"; readonly error: ContextLengthExceeded }

/** A failed attempt as the retry schedule sees it: the error, and the emitter of the turn that made it. */
interface FailedAttempt {
  readonly error: ProviderError
  readonly emit: Emit
}

/**
 * Exponential backoff with optional jitter, honouring `retryAfterMs`, publishing `LLMRetry`.
 * Every delay is capped at `maxDelay` (a server's `Retry-After` too: it may ask for days), and a
 * retry that would start more than `maxElapsed` after the first failure is not made, so a call
 * gives up in bounded time whatever the server says. The checks run before `LLMRetry` is
 * published, so an error that is not retried publishes none; delays are whole milliseconds, so
 * the event says exactly when the retry happens.
 * Built once per loop: the turn to report to comes with each failed attempt.
 */
const retrySchedule = (policy: RetryPolicy) => {
  const maxDelayMs = Duration.toMillis(policy.maxDelay)
  const maxElapsedMs = Duration.toMillis(policy.maxElapsed)
  const backoff = Schedule.exponential(policy.baseDelay, policy.factor)
  return Schedule.max([policy.jitter ? Schedule.jittered(backoff) : backoff, Schedule.recurs(policy.maxAttempts - 1)]).pipe(
    Schedule.setInputType<FailedAttempt>(),
    Schedule.while(({ input }) => retryable(input.error)),
    Schedule.modifyDelay(({ duration, input: { error } }) => {
      const wanted = error._tag === "RateLimited" && error.retryAfterMs !== undefined ? error.retryAfterMs : Duration.toMillis(duration)
      return Effect.succeed(Duration.millis(Math.round(Math.min(Math.max(wanted, 0), maxDelayMs))))
    }),
    Schedule.while(({ duration, elapsed }) => elapsed + Duration.toMillis(duration) <= maxElapsedMs),
    Schedule.modifyDelay(({ attempt, duration, input: { emit, error } }) =>
      Effect.as(emit("LLMRetry", { attempt, reason: `${error._tag}: ${error.message}`, delayMs: Duration.toMillis(duration) }), duration)
    )
  )
}

/**
 * Consumes a provider stream into a response, publishing one `LLMDelta` per delta. Each batch of
 * chunks the stream hands over is folded in one synchronous step; a whole reply
 * (`Provider.whole`) is one batch, taken without running a stream. Provider blocks are stamped
 * with the `model` that made them: they go back to that model only.
 */
const streamResponse = (
  context: TurnContext,
  model: string,
  stream: Stream.Stream<ProviderChunk, ProviderError>
): Effect.Effect<ModelResponse, ProviderError> => {
  const acc: CallAccumulator = { content: "", reasoning: "", blocks: [], calls: new Map(), finish: undefined }
  const partial = context.partial
  const publishDelta = context.publishDelta
  partial.content = ""
  const onChunks = (chunks: ReadonlyArray<ProviderChunk>): void => {
    // The deltas of one batch are published in one synchronous step: one reading of the Clock.
    const at = context.clock.currentTimeMillisUnsafe()
    for (let i = 0; i < chunks.length; i++) {
      const chunk = chunks[i]!
      switch (chunk._tag) {
        case "TextDelta":
          acc.content += chunk.text
          partial.content = acc.content
          publishDelta("text", chunk.text, at)
          break
        case "ReasoningDelta":
          acc.reasoning += chunk.text
          publishDelta("reasoning", chunk.text, at)
          break
        case "ToolCallDelta": {
          const call = acc.calls.get(chunk.index) ?? { id: undefined, name: undefined, args: "" }
          if (chunk.id) call.id = chunk.id
          if (chunk.name) call.name = chunk.name
          call.args += chunk.argumentsDelta
          acc.calls.set(chunk.index, call)
          publishDelta("tool_call", chunk.argumentsDelta, at, chunk.index)
          break
        }
        case "ProviderBlock":
          acc.blocks.push(chunk.block.model === undefined ? { ...chunk.block, model } : chunk.block)
          break
        case "Finish":
          acc.finish = { reason: chunk.reason, usage: chunk.usage }
      }
    }
  }
  const finish = (): Effect.Effect<ModelResponse, MalformedResponse> => {
    if (acc.finish === undefined) {
      return Effect.fail(new MalformedResponse({ message: "The stream ended without a finish reason" }))
    }
    const toolCalls: Array<Message.ToolCall> = []
    const indices = acc.calls.size === 1 ? acc.calls.keys() : [...acc.calls.keys()].sort((a, b) => a - b)
    for (const index of indices) {
      const call = acc.calls.get(index)!
      if (!call.name) return Effect.fail(new MalformedResponse({ message: `Tool call ${index} has no name` }))
      toolCalls.push({ id: call.id ?? `call_${context.control.turnId}_${context.calls}_${index}`, name: call.name, arguments: call.args || "{}" })
    }
    return Effect.succeed({
      content: acc.content,
      reasoning: acc.reasoning,
      providerBlocks: acc.blocks,
      toolCalls,
      finishReason: acc.finish.reason,
      usage: acc.finish.usage ?? Usage.empty
    })
  }
  const run = (stream: Stream.Stream<ProviderChunk, ProviderError>) =>
    Effect.flatMap(Stream.runForEachArray(stream, (chunks) => Effect.sync(() => onChunks(chunks))), finish)
  const whole = Provider.wholeOf(stream)
  if (whole === undefined) return run(stream)
  return Effect.flatMap(whole, (reply) => {
    if (Stream.isStream(reply)) return run(reply)
    onChunks(reply)
    return finish()
  })
}

/** The messages of this iteration's request: the system prompt, the conversation, then `extra` — one copy. */
const requestMessages = (context: TurnContext, extra: ReadonlyArray<Message.Message>): Array<Message.Message> =>
  context.systemPrompt
    ? ([Message.system(context.systemPrompt)] as Array<Message.Message>).concat(context.conversation, extra)
    : extra.length > 0
    ? context.conversation.concat(extra)
    : context.conversation.slice()

/**
 * The request as the model may see it: for a model that does not accept images (see
 * `acceptsImages`), every image becomes its text placeholder, as MCP images were before parts.
 * `mayHoldParts` false says no message can hold parts, sparing a scan of the whole request.
 */
const forModel = (config: AgentLoopConfig, request: ProviderRequest, mayHoldParts: boolean): ProviderRequest =>
  !mayHoldParts || !holdsParts(request.messages) || acceptsImages(config, request.model) ? request : {
    ...request,
    messages: request.messages.map((m) => m.role === "user" || m.role === "tool" ? { ...m, content: Message.withoutImages(m.content) } : m)
  }

/** The provider call of each iteration and the soft context limits, over the loop's services. */
export const make = (env: Env) => {
  const { config, hooks, provider } = env
  const schedule = retrySchedule(config.retry)

  /**
   * Adds `costUsd` for the model actually called when the config has a price table. A model
   * missing from the table costs 0 with a warning (once per model and turn), never a failed turn.
   */
  const priced = (context: TurnContext, model: string, usage: Usage.Usage): Effect.Effect<Usage.Usage> => {
    const prices = config.prices
    if (prices === undefined) return Effect.succeed(usage)
    const price = prices[model]
    if (price !== undefined) return Effect.succeed({ ...usage, costUsd: Usage.cost(usage, price) })
    const free = { ...usage, costUsd: 0 }
    if (context.unpriced.has(model)) return Effect.succeed(free)
    context.unpriced.add(model)
    return Effect.as(Effect.logWarning(`No price for model "${model}"; its cost counts as 0`), free)
  }

  /** A provider error as the turn sees it: an overflow is recovered from (see `callModel`), anything else fails the call. */
  const overflowOrFail = (error: ProviderError): Effect.Effect<Attempt, ProviderError> =>
    error._tag === "ContextLengthExceeded" ? Effect.succeed({ _tag: "overflow", error }) : Effect.fail(error)

  /**
   * One provider call, and only when it fails with a retryable error the schedule's retries: the
   * schedule sees that first failure again, so its steps are what `Effect.retry` would take.
   * Called when the effect runs: the first attempt starts at once.
   */
  const attemptCall = (context: TurnContext, request: ProviderRequest): Effect.Effect<Attempt, ProviderError> => {
    const call = () => streamResponse(context, request.model, provider.stream(request))
    return Effect.matchEffect(call(), {
      onSuccess: (response) => Effect.succeed({ _tag: "ok", response }),
      onFailure: (first) => {
        if (!retryable(first)) return overflowOrFail(first)
        let pending: ProviderError | undefined = first
        const again: Effect.Effect<ModelResponse, ProviderError> = Effect.suspend(() => {
          const failed = pending
          pending = undefined
          return failed ? Effect.fail(failed) : call()
        })
        return again.pipe(
          Effect.mapError((error): FailedAttempt => ({ error, emit: context.emit })),
          Effect.retry(schedule),
          Effect.matchEffect({
            onSuccess: (response) => Effect.succeed({ _tag: "ok", response }),
            onFailure: (failed) => overflowOrFail(failed.error)
          })
        )
      }
    })
  }

  /** Makes the request of this iteration: the conversation, under the budget, with the tools (and the typed answer asked for). */
  const buildRequest = (
    context: TurnContext,
    tools: ReadonlyArray<ToolDefinition>,
    extra: ReadonlyArray<Message.Message>,
    output: OutputFormat | undefined
  ): ProviderRequest => {
    const options = context.control.modelOptions
    const maxTokens = context.spec.maxTokens ?? options?.maxTokens ?? config.maxTokens
    return {
      ...options,
      model: context.control.model,
      messages: requestMessages(context, extra),
      tools,
      ...(maxTokens === undefined ? {} : { maxTokens }),
      ...(output === undefined ? {} : { output })
    }
  }

  /** Shortens the conversation; the turn's compaction record follows it. */
  const compress = (
    context: TurnContext,
    reason: "overflow" | "budget",
    compression: Compression
  ) =>
    Effect.gen(function*() {
      if (compression.dropped === 0) return false
      const verdict = yield* hooks.beforeCompact({ context: hookContext(context.control), reason, messages: context.conversation })
      if (verdict._tag === "AbortTurn") return yield* new TurnAborted({ stage: "beforeCompact", reason: verdict.reason, hook: verdict.hook })
      compacted(context, reason, compression)
      yield* context.emit("ContextCompress", { reason, dropped: compression.dropped, remaining: compression.kept.length })
      yield* hooks.afterCompact({
        context: hookContext(context.control),
        reason,
        dropped: compression.dropped,
        remaining: compression.kept.length
      })
      return true
    })

  /**
   * Cuts the newest tool result in the context as `shrink` says (a `ContextCompress` that dropped no
   * message). Only the context: the session stores the result in full (recovery never destroys
   * history), so a later turn that overflows on it again cuts it again.
   */
  const shrinkToolResult = (context: TurnContext, shrink: Shrink | undefined) =>
    Effect.gen(function*() {
      if (shrink === undefined) return false
      context.conversation = [...shrink.kept]
      yield* context.emit("ContextCompress", { reason: "overflow", dropped: 0, remaining: shrink.kept.length })
      return true
    })

  /**
   * The soft limits, before each call: drop the oldest messages beyond `maxContextRunes` (and,
   * for sub-turns, beyond their message cap).
   */
  const applyBudget = (context: TurnContext): Effect.Effect<void, TurnAborted> => {
    const maxMessages = context.spec.maxMessages
    const budget = context.spec.contextBudget ?? contextBudget(config.maxContextRunes, config.contextWindow)
    if (budget === undefined && (maxMessages === undefined || context.conversation.length <= maxMessages)) return Effect.void
    return Effect.gen(function*() {
      if (maxMessages !== undefined) yield* compress(context, "budget", fitToCount(context.conversation, maxMessages))
      if (budget !== undefined) yield* compress(context, "budget", fitToBudget(context.conversation, budget))
    })
  }

  /**
   * Calls the model once for this iteration, with every recovery of DESIGN §6 step 3, and returns
   * the response after `afterLLMResponse`. `tools` is empty for the graceful-interrupt summary;
   * `output` asks for a typed answer (`typedOutput.ts`).
   */
  const callModel = (
    context: TurnContext,
    tools: ReadonlyArray<ToolDefinition>,
    extraMessages: ReadonlyArray<Message.Message> = [],
    output?: OutputFormat
  ) =>
    Effect.gen(function*() {
      let overflowRetries = 0
      let truncationRetries = 0
      let transient: ReadonlyArray<Message.Message> = extraMessages
      while (true) {
        const built = buildRequest(context, tools, transient, output)
        let request = built
        if (hooks.handles("beforeLLMRequest")) {
          const planned = yield* hooks.beforeLLMRequest({ context: hookContext(context.control), request })
          if (planned._tag !== "Continue") return yield* stopFor(context, "beforeLLMRequest", planned)
          request = planned.request
        }
        context.control.phase = "llm"
        const started = context.clock.currentTimeMillisUnsafe()
        context.publish("LLMRequest", { model: request.model, messageCount: request.messages.length, toolCount: request.tools.length }, started)
        context.calls++
        // A hook's request may hold anything; the loop's own holds parts only if its messages may.
        const sent = forModel(config, request, request !== built || context.partsSeen || holdsParts(transient))
        const attempt = yield* spanned(
          context,
          "gen_ai.chat",
          () => ({ "gen_ai.request.model": sent.model, "gen_ai.operation.name": "chat" }),
          () => attemptCall(context, sent),
          (attempt) =>
            attempt._tag === "ok"
              ? {
                "gen_ai.usage.input_tokens": attempt.response.usage.inputTokens,
                "gen_ai.usage.output_tokens": attempt.response.usage.outputTokens,
                "gen_ai.response.finish_reasons": [attempt.response.finishReason]
              }
              : undefined
        )
        if (attempt._tag === "overflow") {
          if (overflowRetries >= config.maxCompressRetries) return yield* Effect.fail(attempt.error)
          overflowRetries++
          const recovered = (yield* shrinkToolResult(context, shrinkOversizedToolResult(context.conversation, config.contextWindow))) ||
            (yield* compress(context, "overflow", dropOldestHalf(context.conversation))) ||
            (yield* shrinkToolResult(context, halveNewestToolResult(context.conversation)))
          if (!recovered) return yield* Effect.fail(attempt.error)
          continue
        }
        const usage = config.prices === undefined ? attempt.response.usage : yield* priced(context, request.model, attempt.response.usage)
        const response = usage === attempt.response.usage ? attempt.response : { ...attempt.response, usage }
        context.partial.content = ""
        context.usage = Usage.add(context.usage, response.usage)
        if (response.finishReason === "length" && response.toolCalls.length === 0 && truncationRetries < config.maxTruncationRetries) {
          truncationRetries++
          transient = [...extraMessages, Message.assistant(response.content), Message.user(TRUNCATION_PROMPT)]
          // Announced like any retry, so a renderer knows the text it streamed is superseded.
          context.publish("LLMRetry", { attempt: truncationRetries, reason: TRUNCATION_RETRY_REASON, delayMs: 0 })
          continue
        }
        let final = response
        if (hooks.handles("afterLLMResponse")) {
          const reviewed = yield* hooks.afterLLMResponse({
            context: hookContext(context.control),
            response: { content: response.content, toolCalls: response.toolCalls, finishReason: response.finishReason }
          })
          if (reviewed._tag !== "Continue") return yield* stopFor(context, "afterLLMResponse", reviewed)
          final = { ...response, content: reviewed.response.content, toolCalls: reviewed.response.toolCalls }
        }
        const now = context.clock.currentTimeMillisUnsafe()
        context.publish("LLMResponse", {
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

  return { callModel, applyBudget }
}
