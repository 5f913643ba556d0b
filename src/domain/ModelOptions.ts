/**
 * Model options: the sampling and reasoning knobs of a model call. Set once in the config
 * (`AgentLoopConfig.modelOptions`) and per turn (`TurnOptions`, which wins field by field), carried
 * to the provider on the `ProviderRequest`, and encoded by each wire as its API spells them.
 *
 * @example
 * ```ts
 * import { AgentLoopConfig } from "effect-agent-loop"
 * const config = AgentLoopConfig.make({
 *   model: "claude-sonnet-4-5",
 *   modelOptions: { maxTokens: 16000, reasoning: { budgetTokens: 8000 } }
 * })
 * ```
 */
import * as Schema from "effect/Schema"

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

/** How hard a reasoning model thinks (OpenAI's `reasoning_effort`). */
export const ReasoningEffort = Schema.Literals(["minimal", "low", "medium", "high"])
export type ReasoningEffort = typeof ReasoningEffort.Type

/**
 * Reasoning: `effort` for OpenAI's reasoning models, `budgetTokens` for Anthropic's extended
 * thinking (the tokens it may think with, part of `maxTokens`). Anthropic derives a budget from
 * `effort` when no budget is given (`budgetForEffort`); OpenAI ignores `budgetTokens`. Gemini takes
 * `budgetTokens` as its `thinkingBudget`, and an `effort` alone as its `thinkingLevel` (Gemini 3)
 * or as a budget (Gemini 2.x).
 */
export const Reasoning = Schema.Struct({
  effort: Schema.optionalKey(ReasoningEffort.annotate({
    description: "how hard a reasoning model thinks: OpenAI's reasoning effort; on Anthropic, thinking with a budget for that level"
  })),
  budgetTokens: Schema.optionalKey(PositiveInt.annotate({
    description: "Anthropic's extended thinking: the tokens it may think with (at least 1024, under `maxTokens`)"
  }))
})
export type Reasoning = typeof Reasoning.Type

/**
 * The options of a model call; every field is optional and left to the API's default when absent.
 * Ranges are the widest any supported API accepts (temperature up to 2 is OpenAI's; Anthropic's
 * top is 1 and the API says so).
 */
export const ModelOptions = Schema.Struct({
  temperature: Schema.optionalKey(
    Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 2 })).annotate({ description: "sampling temperature (Anthropic: at most 1, and none with thinking)" })
  ),
  topP: Schema.optionalKey(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 })).annotate({ description: "nucleus sampling" })),
  stop: Schema.optionalKey(Schema.Array(Schema.NonEmptyString).annotate({ description: "sequences that end the answer where they appear (not on the Responses API)" })),
  seed: Schema.optionalKey(Schema.Int.annotate({ description: "best-effort determinism where the API supports it (OpenAI Chat Completions)" })),
  maxTokens: Schema.optionalKey(PositiveInt.annotate({ description: "the most tokens the answer may take (thinking included on Anthropic)" })),
  reasoning: Schema.optionalKey(Reasoning.annotate({ description: "reasoning: `effort` for OpenAI, `budgetTokens` for Anthropic's extended thinking" }))
})
export type ModelOptions = typeof ModelOptions.Type

/** The option names, in one list, for picking them out of larger objects (`TurnOptions`). */
const keys = Object.keys(ModelOptions.fields) as ReadonlyArray<keyof ModelOptions>

/** The model options among an object's fields (e.g. a `TurnOptions`); `undefined` fields are left out. */
export const pick = (from: ModelOptions): ModelOptions => {
  const out: Record<string, unknown> = {}
  for (const key of keys) if (from[key] !== undefined) out[key] = from[key]
  return out as ModelOptions
}

/** `over` on top of `base`, field by field; `reasoning` merges per field too. */
export const merge = (base: ModelOptions | undefined, over: ModelOptions | undefined): ModelOptions | undefined => {
  if (over === undefined || Object.keys(over).length === 0) return base
  if (base === undefined) return over
  const reasoning = base.reasoning === undefined || over.reasoning === undefined
    ? over.reasoning ?? base.reasoning
    : { ...base.reasoning, ...over.reasoning }
  return { ...base, ...over, ...(reasoning === undefined ? {} : { reasoning }) }
}

/**
 * Anthropic's thinking budget for an `effort` given without `budgetTokens` (the budgets pi-ai
 * uses for the same levels).
 */
export const budgetForEffort: Readonly<Record<ReasoningEffort, number>> = { minimal: 1024, low: 2048, medium: 8192, high: 16384 }

/** Whether options ask for reasoning at all. */
export const reasons = (options: { readonly reasoning?: Reasoning | undefined }): boolean =>
  options.reasoning?.effort !== undefined || options.reasoning?.budgetTokens !== undefined
