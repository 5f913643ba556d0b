/**
 * One provider call: the reply folded into a response while its deltas are published, and the
 * retries of a call that failed with a retryable error (DESIGN §6 step 3).
 */
import type * as Cause from "effect/Cause"
import * as Channel from "effect/Channel"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Pull from "effect/Pull"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { RetryPolicy } from "../../domain/Config.ts"
import { type ContextLengthExceeded, MalformedResponse, type ProviderError, ResponseTooLarge } from "../../domain/errors.ts"
import type * as Message from "../../domain/Message.ts"
import type { FinishReason, ProviderChunk, ProviderRequest } from "../../domain/Provider.ts"
import * as Usage from "../../domain/Usage.ts"
import type { ProviderShape } from "../../services/Provider.ts"
import * as RunningTurn from "./runningTurn.ts"

/** A complete response as the loop keeps it. */
export interface ModelResponse {
  readonly content: string
  readonly reasoning: string
  /** What the provider needs back with this reply (`AssistantMessage.providerBlocks`). */
  readonly providerBlocks: ReadonlyArray<Message.ProviderBlock>
  readonly toolCalls: ReadonlyArray<Message.ToolCall>
  readonly finishReason: FinishReason
  readonly usage: Usage.Usage
  /** The response's id and the model that answered, where the provider says (for the `chat` span). */
  readonly responseId?: string | undefined
  readonly responseModel?: string | undefined
}

/** A provider call's outcome: a response, or a context overflow to recover from. */
export type Attempt =
  | { readonly _tag: "ok"; readonly response: ModelResponse }
  | { readonly _tag: "overflow"; readonly error: ContextLengthExceeded }

const retryable = (error: ProviderError): boolean => error._tag === "RateLimited" || error._tag === "ProviderUnavailable"

/** A failed attempt as the retry schedule sees it: the error, and the turn that made it. */
interface FailedAttempt {
  readonly error: ProviderError
  readonly turn: RunningTurn.RunningTurn
}

/** The retry schedule of a loop's provider calls. */
export type RetrySchedule = Schedule.Schedule<unknown, FailedAttempt>

/**
 * Exponential backoff with optional jitter, honouring `retryAfterMs`, publishing `LLMRetry`.
 * Every delay is capped at `maxDelay` (a server's `Retry-After` too: it may ask for days), and a
 * retry that would start more than `maxElapsed` after the first failure is not made, so a call
 * gives up in bounded time whatever the server says. The checks run before `LLMRetry` is
 * published, so an error that is not retried publishes none; delays are whole milliseconds, so
 * the event says exactly when the retry happens. Built once per loop: the turn to report to comes
 * with each failed attempt.
 */
export const retrySchedule = (policy: RetryPolicy): RetrySchedule => {
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
    Schedule.modifyDelay(({ attempt, duration, input: { error, turn } }) =>
      Effect.as(RunningTurn.emit(turn, "LLMRetry", { attempt, reason: `${error._tag}: ${error.message}`, delayMs: Duration.toMillis(duration) }), duration)
    )
  )
}

/** What a response is folded from, chunk by chunk; texts are kept as their deltas, joined once at the end. */
interface Accumulator {
  readonly content: Array<string>
  readonly reasoning: Array<string>
  readonly blocks: Array<Message.ProviderBlock>
  readonly calls: Map<number, { id: string | undefined; name: string | undefined; args: Array<string> }>
  finish: Omit<Extract<ProviderChunk, { readonly _tag: "Finish" }>, "_tag"> | undefined
  /**
   * At most the UTF-8 bytes of text, reasoning and tool-call arguments so far (3 per UTF-16 code
   * unit); once that bound passes `maxResponseBytes`, their exact count (`overLimit`).
   */
  bytes: number
  exact: boolean
}

/** The failure of a response past `maxResponseBytes`. */
export const tooLarge = (limitBytes: number) =>
  new ResponseTooLarge({
    message: `The response passed ${limitBytes} bytes of text, reasoning and tool-call arguments (maxResponseBytes); it was stopped and nothing of it is kept`,
    limitBytes
  })

/**
 * The calls with every id unique: a server that gives two calls one id would otherwise have the
 * history pair both results with one call, and a provider reject every later request of the
 * session. A repeated id gets the first free `_2`, `_3`… suffix.
 */
export const uniqueCallIds = (calls: ReadonlyArray<Message.ToolCall>): ReadonlyArray<Message.ToolCall> => {
  if (calls.length < 2) return calls
  const ids = new Set(calls.map((call) => call.id))
  if (ids.size === calls.length) return calls
  const seen = new Set<string>()
  return calls.map((call) => {
    if (!seen.has(call.id)) {
      seen.add(call.id)
      return call
    }
    let n = 2
    while (ids.has(`${call.id}_${n}`)) n++
    const id = `${call.id}_${n}`
    ids.add(id)
    seen.add(id)
    return { ...call, id }
  })
}

const utf8 = (text: string): number => Buffer.byteLength(text, "utf8")

/** What a provider block (signed or encrypted reasoning) weighs toward the cap: its data as JSON. */
const blockText = (block: Message.ProviderBlock): string => JSON.stringify(block.data) ?? ""

/** Whether `text`, coming next, takes the response past `maxBytes` UTF-8 bytes; counts it. */
const overLimit = (acc: Accumulator, text: string, maxBytes: number): boolean => {
  if (!acc.exact) {
    if ((acc.bytes += text.length * 3) <= maxBytes) return false
    acc.exact = true
    acc.bytes = 0
    for (const piece of acc.content) acc.bytes += utf8(piece)
    for (const piece of acc.reasoning) acc.bytes += utf8(piece)
    for (const call of acc.calls.values()) for (const piece of call.args) acc.bytes += utf8(piece)
    for (const block of acc.blocks) acc.bytes += utf8(blockText(block))
  }
  return (acc.bytes += utf8(text)) > maxBytes
}

/**
 * Folds a batch of chunks into `acc`, publishing one `LLMDelta` per delta in one synchronous step
 * (one reading of the Clock). Provider blocks are stamped with the `model` that made them: they go
 * back to that model only. False once the response is over `maxBytes`: the batch is dropped, and
 * so is the partial answer, since nothing of such a response may be kept.
 */
const fold = (turn: RunningTurn.RunningTurn, model: string, acc: Accumulator, chunks: ReadonlyArray<ProviderChunk>, maxBytes: number): boolean => {
  const at = turn.clock.currentTimeMillisUnsafe()
  for (let i = 0; i < chunks.length; i++) {
    const chunk = chunks[i]!
    const text = chunk._tag === "ToolCallDelta"
      ? chunk.argumentsDelta
      : chunk._tag === "TextDelta" || chunk._tag === "ReasoningDelta"
      ? chunk.text
      : chunk._tag === "ProviderBlock"
      ? blockText(chunk.block)
      : ""
    if (text !== "" && overLimit(acc, text, maxBytes)) {
      RunningTurn.setPartial(turn, [])
      return false
    }
    switch (chunk._tag) {
      case "TextDelta":
        acc.content.push(chunk.text)
        RunningTurn.publishDelta(turn, "text", chunk.text, at)
        break
      case "ReasoningDelta":
        acc.reasoning.push(chunk.text)
        RunningTurn.publishDelta(turn, "reasoning", chunk.text, at)
        break
      case "ToolCallDelta": {
        let call = acc.calls.get(chunk.index)
        if (call === undefined) {
          call = { id: undefined, name: undefined, args: [] }
          acc.calls.set(chunk.index, call)
        }
        if (chunk.id) call.id = chunk.id
        if (chunk.name) call.name = chunk.name
        call.args.push(chunk.argumentsDelta)
        RunningTurn.publishDelta(turn, "tool_call", chunk.argumentsDelta, at, chunk.index)
        break
      }
      case "ProviderBlock":
        acc.blocks.push(chunk.block.model === undefined ? { ...chunk.block, model } : chunk.block)
        break
      case "Finish":
        acc.finish = chunk
    }
  }
  return true
}

/** Deltas as one flat string. */
const joined = (pieces: ReadonlyArray<string>): string => pieces.length === 1 ? pieces[0]! : pieces.join("")

/** The response `acc` holds once the reply is over; a tool call without an id gets one unique in the turn. */
const responseOf = (turn: RunningTurn.RunningTurn, acc: Accumulator): Effect.Effect<ModelResponse, MalformedResponse> => {
  if (acc.finish === undefined) return Effect.fail(new MalformedResponse({ message: "The stream ended without a finish reason" }))
  const toolCalls: Array<Message.ToolCall> = []
  const indices = acc.calls.size === 1 ? acc.calls.keys() : [...acc.calls.keys()].sort((a, b) => a - b)
  for (const index of indices) {
    const call = acc.calls.get(index)!
    if (!call.name) return Effect.fail(new MalformedResponse({ message: `Tool call ${index} has no name` }))
    toolCalls.push({ id: call.id ?? `call_${turn.turnId}_${turn.iteration}_${index}`, name: call.name, arguments: joined(call.args) || "{}" })
  }
  return Effect.succeed({
    content: joined(acc.content),
    reasoning: joined(acc.reasoning),
    providerBlocks: acc.blocks,
    toolCalls: uniqueCallIds(toolCalls),
    finishReason: acc.finish.reason,
    usage: acc.finish.usage ?? Usage.empty,
    ...(acc.finish.responseId === undefined ? {} : { responseId: acc.finish.responseId }),
    ...(acc.finish.responseModel === undefined ? {} : { responseModel: acc.finish.responseModel })
  })
}

/**
 * Folds a streamed reply into `acc` a batch at a time, with one pull loop over the stream's channel
 * (see the design doc's "Performance"), into the response once the stream ends. Its scope closes
 * however the loop ends, which closes the connection: when the stream ends, fails or is
 * interrupted, and when the fold stops it because the response is over `maxBytes`.
 */
const foldStream = (
  turn: RunningTurn.RunningTurn,
  model: string,
  acc: Accumulator,
  stream: Stream.Stream<ProviderChunk, ProviderError>,
  maxBytes: number
): Effect.Effect<ModelResponse, ProviderError> =>
  Effect.suspend(() => {
    const scope = Scope.makeUnsafe()
    const folded = Effect.flatMap(Channel.toPullScoped(stream.channel, scope), (pull) => {
      const next: Effect.Effect<ModelResponse, ProviderError> = Effect.matchCauseEffect(pull, {
        onSuccess: (chunks) => fold(turn, model, acc, chunks, maxBytes) ? next : Effect.fail(tooLarge(maxBytes)),
        onFailure: (cause) => Pull.isDoneCause(cause) ? responseOf(turn, acc) : Effect.failCause(cause as Cause.Cause<ProviderError>)
      })
      return next
    })
    return Effect.onExit(folded, (exit) => Scope.close(scope, exit))
  })

/** Receives one reply: whole when the provider can give it so (`ProviderShape.whole`), else streamed. */
const receive = (
  turn: RunningTurn.RunningTurn,
  provider: ProviderShape,
  request: ProviderRequest,
  maxBytes: number
): Effect.Effect<ModelResponse, ProviderError> => {
  const acc: Accumulator = { content: [], reasoning: [], blocks: [], calls: new Map(), finish: undefined, bytes: 0, exact: false }
  RunningTurn.setPartial(turn, acc.content)
  if (provider.whole === undefined) return foldStream(turn, request.model, acc, provider.stream(request), maxBytes)
  return Effect.flatMap(provider.whole(request), (reply) => {
    if (Stream.isStream(reply)) return foldStream(turn, request.model, acc, reply, maxBytes)
    return fold(turn, request.model, acc, reply, maxBytes) ? responseOf(turn, acc) : Effect.fail(tooLarge(maxBytes))
  })
}

/** A provider error as the turn sees it: an overflow is recovered from, anything else fails the call. */
const overflowOrFail = (error: ProviderError): Effect.Effect<Attempt, ProviderError> =>
  error._tag === "ContextLengthExceeded" ? Effect.succeed({ _tag: "overflow", error }) : Effect.fail(error)

const ok = (response: ModelResponse): Effect.Effect<Attempt> => Effect.succeed({ _tag: "ok", response })

/**
 * One provider call, and only when it fails with a retryable error the schedule's retries: the
 * schedule sees that first failure again, so its steps are what `Effect.retry` would take, and a
 * call that succeeds costs no schedule. Called when the effect runs: the first attempt starts at once.
 */
export const attempt = (
  turn: RunningTurn.RunningTurn,
  provider: ProviderShape,
  schedule: RetrySchedule,
  request: ProviderRequest,
  maxBytes: number
): Effect.Effect<Attempt, ProviderError> =>
  Effect.matchEffect(receive(turn, provider, request, maxBytes), {
    onSuccess: ok,
    onFailure: (first) => {
      if (!retryable(first)) return overflowOrFail(first)
      let pending: ProviderError | undefined = first
      const again: Effect.Effect<ModelResponse, ProviderError> = Effect.suspend(() => {
        const failed = pending
        pending = undefined
        return failed ? Effect.fail(failed) : receive(turn, provider, request, maxBytes)
      })
      return again.pipe(
        Effect.mapError((error): FailedAttempt => ({ error, turn })),
        Effect.retry(schedule),
        Effect.matchEffect({ onSuccess: ok, onFailure: (failed) => overflowOrFail(failed.error) })
      )
    }
  })
