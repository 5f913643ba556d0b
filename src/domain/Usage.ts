/**
 * Token usage and its cost.
 */
import * as Schema from "effect/Schema"

/**
 * Tokens of one provider call, or summed over a turn. `inputTokens` is every input token the call
 * was billed for, cached ones included; `cachedInputTokens` and `cacheWriteTokens` say how many of
 * them were read from or written to the provider's prompt cache. `reasoningTokens` is the part of
 * `outputTokens` the model spent reasoning. The three details are present only when the provider
 * reports them.
 */
export const Usage = Schema.Struct({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  cachedInputTokens: Schema.optionalKey(Schema.Number),
  cacheWriteTokens: Schema.optionalKey(Schema.Number),
  reasoningTokens: Schema.optionalKey(Schema.Number),
  costUsd: Schema.optionalKey(Schema.Number)
})
export type Usage = typeof Usage.Type

/** No tokens. */
export const empty: Usage = { inputTokens: 0, outputTokens: 0 }

/** The optional fields `add` sums: each is kept only when either side has it. */
const optionalCounts = ["cachedInputTokens", "cacheWriteTokens", "reasoningTokens", "costUsd"] as const

/** Adds two usages; an optional count is kept only when either side has one. */
export const add = (a: Usage, b: Usage): Usage => {
  const sum: { -readonly [K in keyof Usage]: Usage[K] } = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens
  }
  for (const key of optionalCounts) {
    if (a[key] !== undefined || b[key] !== undefined) sum[key] = (a[key] ?? 0) + (b[key] ?? 0)
  }
  return sum
}

const NonNegative = Schema.Number.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * Price of a model in US dollars per million tokens: input and output, plus reading from and
 * writing to the vendor's prompt cache where the vendor prices them (otherwise those tokens cost
 * what input costs).
 */
export const ModelPrice = Schema.Struct({
  inputPerMillion: Schema.Number,
  outputPerMillion: Schema.Number,
  cachedInputPerMillion: Schema.optionalKey(NonNegative),
  cacheWritePerMillion: Schema.optionalKey(NonNegative)
})
export type ModelPrice = typeof ModelPrice.Type

/**
 * The cost of a usage at a price. Cached and cache-write tokens are part of `inputTokens`, so
 * they are taken out of it and charged at their own prices when the price has them.
 */
export const cost = (usage: Usage, price: ModelPrice): number => {
  const cached = usage.cachedInputTokens ?? 0
  const written = usage.cacheWriteTokens ?? 0
  const uncached = Math.max(0, usage.inputTokens - cached - written)
  return (uncached * price.inputPerMillion +
    cached * (price.cachedInputPerMillion ?? price.inputPerMillion) +
    written * (price.cacheWritePerMillion ?? price.inputPerMillion) +
    usage.outputTokens * price.outputPerMillion) / 1_000_000
}
