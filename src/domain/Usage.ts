/**
 * Token usage and its cost.
 */
import { Schema } from "effect"

/** Tokens of one provider call, or summed over a turn. */
export const Usage = Schema.Struct({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  costUsd: Schema.optionalKey(Schema.Number)
})
export type Usage = typeof Usage.Type

/** No tokens. */
export const empty: Usage = { inputTokens: 0, outputTokens: 0 }

/** Adds two usages; cost is kept only when either side has one. */
export const add = (a: Usage, b: Usage): Usage => {
  const cost = a.costUsd === undefined && b.costUsd === undefined ? undefined : (a.costUsd ?? 0) + (b.costUsd ?? 0)
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    ...(cost === undefined ? {} : { costUsd: cost })
  }
}

/** Price of a model in US dollars per million tokens. */
export const ModelPrice = Schema.Struct({
  inputPerMillion: Schema.Number,
  outputPerMillion: Schema.Number
})
export type ModelPrice = typeof ModelPrice.Type

/** The cost of a usage at a price. */
export const cost = (usage: Usage, price: ModelPrice): number =>
  (usage.inputTokens * price.inputPerMillion + usage.outputTokens * price.outputPerMillion) / 1_000_000
