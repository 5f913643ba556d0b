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
 * // Effect<AgentLoopConfig, ConfigError>: a bad value fails with the field named
 * ```
 */
import { Effect, Result, Schema, SchemaTransformation } from "effect"
import { ConfigError, ContentRejected } from "./errors.ts"
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

/**
 * Retries of retryable provider failures: exponential backoff with jitter. Every delay (a
 * server's `Retry-After` included) is capped at `maxDelay`, and no retry starts more than
 * `maxElapsed` after the call's first failure.
 */
export const RetryPolicy = Schema.Struct({
  maxAttempts: withDefault(PositiveInt, 4),
  baseDelay: withDefault(DurationSetting, 1000),
  maxDelay: withDefault(DurationSetting, 30_000),
  maxElapsed: withDefault(DurationSetting, 120_000),
  factor: withDefault(Schema.Number.check(Schema.isGreaterThanOrEqualTo(1)), 2),
  jitter: withDefault(Schema.Boolean, true)
})
export type RetryPolicy = typeof RetryPolicy.Type

/** Limits of sub-turns (DESIGN §7). */
export const SubTurnLimits = Schema.Struct({
  maxDepth: withDefault(NonNegativeInt, 3),
  maxConcurrent: withDefault(PositiveInt, 5),
  concurrencyTimeout: withDefault(DurationSetting, 30_000),
  timeout: withDefault(DurationSetting, 300_000),
  maxMessages: withDefault(PositiveInt, 50),
  pendingCapacity: withDefault(PositiveInt, 16)
})
export type SubTurnLimits = typeof SubTurnLimits.Type

/** The loop's configuration. Only `model` is required. */
export const AgentLoopConfigSchema = Schema.Struct({
  model: Schema.NonEmptyString,
  systemPrompt: Schema.optionalKey(Schema.String),
  maxIterations: withDefault(PositiveInt, 20),
  maxParallelTurns: withDefault(PositiveInt, 4),
  /** Tool calls of one response running at once (a model may ask for thousands). */
  toolConcurrency: withDefault(PositiveInt, 16),
  /** How long a session stays idle before it ends (`sessionEnd`) and the loop lets its state go. */
  sessionIdleTimeout: withDefault(DurationSetting, 600_000),
  /** The output limit; `modelOptions.maxTokens` wins when both are set. */
  maxTokens: Schema.optionalKey(PositiveInt),
  /** Sampling and reasoning for every call; a turn's own options win field by field. */
  modelOptions: Schema.optionalKey(ModelOptions),
  hookTimeout: withDefault(DurationSetting, 5000),
  approvalTimeout: withDefault(DurationSetting, 60_000),
  autoApprove: withDefault(Schema.Boolean, false),
  eventBufferCapacity: withDefault(PositiveInt, 16),
  steeringMode: withDefault(Schema.Literals(["skip-remaining", "after-batch"]), "skip-remaining"),
  maxSteering: withDefault(PositiveInt, 10),
  maxStopBlocks: withDefault(NonNegativeInt, 8),
  contextWindow: withDefault(PositiveInt, 128_000),
  maxContextRunes: withDefault(Schema.Int.check(Schema.isGreaterThanOrEqualTo(-1)), -1),
  maxCompressRetries: withDefault(NonNegativeInt, 2),
  maxTruncationRetries: withDefault(NonNegativeInt, 2),
  /** Typed answers (`TurnOptions.output`) that failed to decode sent back to the model before the turn fails. */
  maxOutputRetries: withDefault(NonNegativeInt, 2),
  summarizeThreshold: withDefault(Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 1 })), 0),
  summarizeKeepMessages: withDefault(PositiveInt, 8),
  retry: withDefault(RetryPolicy, {}),
  subTurn: withDefault(SubTurnLimits, {}),
  prices: Schema.optionalKey(Schema.Record(Schema.String, ModelPrice)),
  /** The largest image (decoded bytes) a turn's input may hold inline; larger input is rejected. */
  maxImageBytes: withDefault(PositiveInt, DEFAULT_MAX_IMAGE_BYTES),
  /**
   * Which models accept images, over the built-in registry (`Models`): `true` or `false` for every
   * model, or by model name. A model neither names is asked of the registry; one unknown to it is
   * taken not to accept images (see `acceptsImages`).
   */
  acceptsImages: Schema.optionalKey(Schema.Union([Schema.Boolean, Schema.Record(Schema.String, Schema.Boolean)]))
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

/** Decodes a configuration; a bad value fails with `ConfigError` naming the field. */
export const make = (input: unknown): Effect.Effect<AgentLoopConfig, ConfigError> =>
  Schema.decodeUnknownEffect(AgentLoopConfigSchema)(input).pipe(
    Effect.mapError((e) => new ConfigError({ field: fieldOf(e.message), message: e.message }))
  )

const decodeModelOptions = Schema.decodeUnknownResult(ModelOptions)

/** Checks model options given at run time (a turn's); a bad value is a `ConfigError` naming the field in one line. */
export const checkModelOptions = (input: unknown): Result.Result<ModelOptions, ConfigError> =>
  Result.mapError(decodeModelOptions(input), (e) => {
    const field = fieldOf(e.message)
    return new ConfigError({ field, message: `Invalid model option ${field}: ${e.message.split("\n")[0]}` })
  })

/** Decodes a configuration synchronously; throws `ConfigError`. For tests and scripts. */
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
