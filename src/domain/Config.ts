/**
 * `AgentLoopConfig`: every knob of the loop, as a Schema with defaults.
 *
 * Durations accept milliseconds (`5000`) or text (`"5 seconds"`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { AgentLoopConfig } from "effect-agent-loop"
 * const config = AgentLoopConfig.make({ model: "gpt-4.1-mini", maxIterations: 8 })
 * // Effect<AgentLoopConfig, InvalidConfig>: a bad value fails with the field named
 * ```
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { ContentRejected, InvalidConfig } from "./errors.ts"
import { checkContent, type Content, DEFAULT_MAX_IMAGE_BYTES, hasImages } from "./Message.ts"
import { ModelOptions } from "./ModelOptions.ts"
import * as Models from "./Models.ts"
import { ModelPrice } from "./Usage.ts"

const withDefault = <S extends Schema.Top>(schema: S, value: S["Encoded"]) =>
  schema.pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)))

/** A duration given as milliseconds or as text such as `"30 seconds"`. */
export const DurationSetting = Schema.Union([
  Schema.DurationFromMillis,
  Schema.String.pipe(Schema.decodeTo(Schema.Duration, SchemaTransformation.durationFromString))
])

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** A field's meaning, as the configuration reference (`npm run docs`) prints it. */
const describe = (description: string) => <S extends Schema.Top>(schema: S) => schema.annotate({ description })

/**
 * Retries of retryable provider failures: exponential backoff with jitter. Every delay (a
 * server's `Retry-After` included) is capped at `maxDelay`, and no retry starts more than
 * `maxElapsed` after the call's first failure.
 */
export const RetryPolicy = Schema.Struct({
  maxAttempts: withDefault(PositiveInt, 4).pipe(describe("attempts of one call in all, the first included")),
  baseDelay: withDefault(DurationSetting, 1000).pipe(describe("the delay before the first retry")),
  maxDelay: withDefault(DurationSetting, 30_000).pipe(describe("the longest delay, a server's `Retry-After` included")),
  maxElapsed: withDefault(DurationSetting, 120_000).pipe(describe("no retry starts later than this after the call's first failure")),
  factor: withDefault(Schema.Number.check(Schema.isGreaterThanOrEqualTo(1)), 2).pipe(describe("each delay is the previous one times this")),
  jitter: withDefault(Schema.Boolean, true).pipe(describe("randomise each delay a little, so that clients do not retry in step"))
})
export type RetryPolicy = typeof RetryPolicy.Type

/** Limits of sub-turns (DESIGN §7). */
export const SubTurnLimits = Schema.Struct({
  maxDepth: withDefault(NonNegativeInt, 3).pipe(describe("how deep sub-turns may nest (`DepthLimitExceeded` beyond)")),
  maxConcurrent: withDefault(PositiveInt, 5).pipe(describe("sub-turns of one parent running at once")),
  concurrencyTimeout: withDefault(DurationSetting, 30_000).pipe(
    describe("how long a sub-turn waits for a free slot before failing with `ConcurrencyTimeout`")
  ),
  timeout: withDefault(DurationSetting, 300_000).pipe(describe("a sub-turn running longer ends `aborted`")),
  maxMessages: withDefault(PositiveInt, 50).pipe(describe("messages a sub-turn's in-memory session holds")),
  pendingCapacity: withDefault(PositiveInt, 16).pipe(
    describe("results of detached sub-turns waiting for their parent's next call; more are published as `SubTurnOrphan`")
  )
})
export type SubTurnLimits = typeof SubTurnLimits.Type

/** The default of `maxResponseBytes`: 8 MiB, far above what any model writes in one response. */
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024

/** The loop's configuration. Only `model` is required. */
export const AgentLoopConfigSchema = Schema.Struct({
  model: Schema.NonEmptyString.pipe(describe("the model name sent to the provider")),
  systemPrompt: Schema.optionalKey(Schema.String.pipe(describe("sent first on every call (never stored in the session)"))),
  maxIterations: withDefault(PositiveInt, 20).pipe(
    describe("iterations per turn (each one model call, plus its repeats after a truncated answer or an overflow) before the turn ends `max_iterations`")
  ),
  maxParallelTurns: withDefault(PositiveInt, 4).pipe(describe("router workers running turns at once (`send`)")),
  // A model may ask for thousands of calls in one response.
  toolConcurrency: withDefault(PositiveInt, 16).pipe(describe("read-only tool calls of one response running at once")),
  sessionIdleTimeout: withDefault(DurationSetting, 600_000).pipe(
    describe("a session idle this long ends (`sessionEnd` hooks) and the loop lets its in-memory state go")
  ),
  modelOptions: Schema.optionalKey(ModelOptions.pipe(
    describe("the output limit, sampling and reasoning for every call; a turn's own options win field by field")
  )),
  hookTimeout: withDefault(DurationSetting, 5000).pipe(describe("per hook handler; a handler that takes longer counts as \"continue\"")),
  approvalTimeout: withDefault(DurationSetting, 60_000).pipe(describe("per approver; an approver that takes longer denies")),
  autoApprove: withDefault(Schema.Boolean, false).pipe(describe("approve calls that require approval when no approver is registered")),
  eventBufferCapacity: withDefault(PositiveInt, 16).pipe(describe("the default buffer of a bounded event subscriber")),
  steeringMode: withDefault(Schema.Literals(["skip-remaining", "after-batch"]), "skip-remaining").pipe(
    describe("steering that arrives while tools run skips the remaining calls, or joins after the batch")
  ),
  maxSteering: withDefault(PositiveInt, 10).pipe(describe("steering messages waiting for a turn (`SteeringQueueFull` beyond)")),
  maxStopBlocks: withDefault(NonNegativeInt, 8).pipe(describe("consecutive `beforeStop` blocks before the turn ends anyway")),
  contextWindow: withDefault(PositiveInt, 128_000).pipe(describe("the model's context window, in tokens")),
  maxContextRunes: withDefault(Schema.Int.check(Schema.isGreaterThanOrEqualTo(-1)), -1).pipe(
    describe("a soft limit on the context before each call, in characters: -1 none, 0 three quarters of the window (4 characters per token), more than 0 that many")
  ),
  maxCompressRetries: withDefault(NonNegativeInt, 2).pipe(describe("recoveries from a context overflow per call (compress, then call again)")),
  maxTruncationRetries: withDefault(NonNegativeInt, 2).pipe(describe("recoveries from an answer truncated at the output limit per call")),
  maxOutputRetries: withDefault(NonNegativeInt, 2).pipe(
    describe("typed answers (`turn(…, { output })`) that failed to decode sent back to the model before the turn fails")
  ),
  summarizeThreshold: withDefault(Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 1 })), 0).pipe(
    describe("after a turn, summarise the older messages when the session passes this fraction of the window; 0 never")
  ),
  summarizeKeepMessages: withDefault(PositiveInt, 8).pipe(describe("the newest messages a summary keeps verbatim")),
  retry: withDefault(RetryPolicy, {}).pipe(
    describe("retries of `RateLimited` and `ProviderUnavailable`: exponential backoff with jitter; a server's `Retry-After` replaces the computed delay")
  ),
  subTurn: withDefault(SubTurnLimits, {}).pipe(describe("limits of sub-turns (DESIGN §7)")),
  prices: Schema.optionalKey(Schema.Record(Schema.String, ModelPrice).pipe(
    describe(
      "US dollars per million tokens by model name, `{ inputPerMillion, outputPerMillion, cachedInputPerMillion?, cacheWritePerMillion? }`, for `costUsd`; cached and cache-write tokens at their own prices when given, else at the input price"
    )
  )),
  maxResponseBytes: withDefault(PositiveInt, DEFAULT_MAX_RESPONSE_BYTES).pipe(
    describe("the most bytes (UTF-8) of text, reasoning, tool-call arguments and provider blocks (signed or encrypted reasoning, as JSON) one model response may hold together (default 8 MiB); past it the call fails with `ResponseTooLarge` and nothing of the response is kept")
  ),
  maxImageBytes: withDefault(PositiveInt, DEFAULT_MAX_IMAGE_BYTES).pipe(
    describe("the largest image of a turn's input, decoded (default 5 MiB); a larger one fails the turn with `ContentRejected` before anything is stored or sent")
  ),
  acceptsImages: Schema.optionalKey(Schema.Union([Schema.Boolean, Schema.Record(Schema.String, Schema.Boolean)]).pipe(
    describe("which models take images, over the built-in registry: `true` or `false` for every model, or by model name; a model unknown to both takes none")
  ))
})

/** A decoded configuration: every default filled in. */
export type AgentLoopConfig = typeof AgentLoopConfigSchema.Type
/** What a user writes: only `model` is required. */
export type AgentLoopConfigInput = typeof AgentLoopConfigSchema.Encoded

/** The path of the first issue in a decoding error's message (`at ["a"]["b"][0]` → `a.b.0`). */
const fieldOf = (message: string): string => {
  const at = /at ((?:\["[^"]*"\]|\[\d+\])+)/.exec(message)
  return at ? [...at[1]!.matchAll(/\["([^"]*)"\]|\[(\d+)\]/g)].map((m) => m[1] ?? m[2]).join(".") : "config"
}

/**
 * Decodes a configuration; a bad value fails with `InvalidConfig` naming the field. The output
 * limit is a model option (`modelOptions.maxTokens`): a top-level `maxTokens`, where it once was,
 * is refused rather than ignored, since a limit silently dropped lets every answer run long.
 */
export const make = (input: unknown): Effect.Effect<AgentLoopConfig, InvalidConfig> =>
  typeof input === "object" && input !== null && "maxTokens" in input
    ? Effect.fail(new InvalidConfig({ field: "maxTokens", message: "maxTokens: the output limit is modelOptions.maxTokens" }))
    : Schema.decodeUnknownEffect(AgentLoopConfigSchema)(input).pipe(
      Effect.mapError((e) => new InvalidConfig({ field: fieldOf(e.message), message: e.message }))
    )

const decodeModelOptions = Schema.decodeUnknownResult(ModelOptions)

/** Checks model options given at run time (a turn's); a bad value is an `InvalidConfig` naming the field in one line. */
export const checkModelOptions = (input: unknown): Result.Result<ModelOptions, InvalidConfig> =>
  Result.mapError(decodeModelOptions(input), (e) => {
    const field = fieldOf(e.message)
    return new InvalidConfig({ field, message: `Invalid model option ${field}: ${e.message.split("\n")[0]}` })
  })

/** Decodes a configuration synchronously; throws `InvalidConfig`. For tests and scripts. */
export const makeUnsafe = (input: AgentLoopConfigInput): AgentLoopConfig => Effect.runSync(make(input))

/**
 * Whether `model` is sent images. A turn whose input holds images for a model that is not fails
 * with `ContentRejected` (nothing is stored or sent); images already in the history (earlier
 * turns, tool results) reach such a model as their text placeholders.
 */
export const acceptsImages = (config: Pick<AgentLoopConfig, "acceptsImages">, model: string): boolean => {
  const setting = config.acceptsImages
  if (typeof setting === "boolean") return setting
  return setting?.[model] ?? Models.lookup(model)?.images ?? false
}

/**
 * Why a turn's input cannot be taken for `model`, or `undefined` when it can: the checks of
 * `Message.checkContent` under `maxImageBytes`, then images only for a model that accepts them.
 */
export const checkInput = (
  config: Pick<AgentLoopConfig, "acceptsImages" | "maxImageBytes">,
  model: string,
  input: Content
): ContentRejected | undefined => {
  if (typeof input === "string") return undefined
  const rejected = checkContent(input, config.maxImageBytes)
  if (rejected !== undefined || !hasImages(input) || acceptsImages(config, model)) return rejected
  const known = config.acceptsImages !== undefined || Models.lookup(model) !== undefined
  return new ContentRejected({
    reason: "unsupported",
    message: known
      ? `Model "${model}" does not accept images`
      : `Model "${model}" is not known to accept images; if it does, say so with acceptsImages in the configuration`
  })
}

/** The context budget in runes: `maxContextRunes` resolved against the window (tokens ≈ runes / 4); `undefined` means no limit. */
export const contextBudget = (maxContextRunes: number, contextWindow: number): number | undefined =>
  maxContextRunes < 0 ? undefined : maxContextRunes === 0 ? Math.floor(contextWindow * 4 * 0.75) : maxContextRunes
