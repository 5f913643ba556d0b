/**
 * The built-in model registry: what the CLI (and any host) knows about the models of the
 * providers it speaks to without asking anyone — the context window, the most output tokens per
 * call, the price, whether the model accepts images and whether it reasons. Each provider's
 * models are a table of their own (`models/*.ts`), by the ids that provider's API takes.
 *
 * Prices are US dollars per million tokens as the vendors list them for standard (not batch,
 * not priority) use, taken on `PRICES_AS_OF` from the models.dev catalogue. They go stale: a host
 * can override or extend them (the CLI's settings file has `prices`).
 *
 * Names are matched exactly, then by alias, then without a dated snapshot suffix, so
 * `gpt-4o-2024-08-06` and `claude-sonnet-4-5-20250929` find their family. One id can be served by
 * several providers at different prices (`openai/gpt-oss-120b` on OpenRouter, Groq and Together):
 * look it up among one provider's models (`forProvider`) to get that provider's.
 *
 * @example
 * ```ts
 * import { Models } from "effect-agent-loop"
 *
 * const info = Models.lookup("gpt-4.1-mini")
 * // info?.contextWindow === 1_047_576, info?.price.inputPerMillion === 0.4
 * const prices = Models.priceTable() // for AgentLoopConfig's `prices`
 * ```
 */
import * as Schema from "effect/Schema"
import { builtinModels } from "./models/builtin.ts"
import { ModelPrice } from "./Usage.ts"

export { builtinModels, forProvider, PRICES_AS_OF } from "./models/builtin.ts"

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

/** Who makes the model (`openai`, `anthropic`, `meta`, `mistral`, …), whichever provider serves it. */
export const Vendor = Schema.NonEmptyString.annotate({ description: "who makes the model" })
export type Vendor = typeof Vendor.Type

/** What the registry knows about one model. */
export const ModelInfo = Schema.Struct({
  /** The name the provider's API takes. */
  id: Schema.NonEmptyString,
  /** The provider whose API serves it under this id: `openai`, `anthropic`, `bedrock`, `groq`, … */
  provider: Schema.NonEmptyString,
  vendor: Vendor,
  /** Tokens of input plus output the model can attend to. */
  contextWindow: PositiveInt,
  /** The most tokens one response may hold. */
  maxOutputTokens: PositiveInt,
  price: ModelPrice,
  /** Whether the model accepts images in its input. */
  images: Schema.Boolean,
  /** Whether the model reasons before it answers (thinking, reasoning effort). */
  reasoning: Schema.optionalKey(Schema.Boolean),
  /** Other names of the same model (snapshots, `-latest`, `-0` forms, cross-region profiles). */
  aliases: Schema.optionalKey(Schema.Array(Schema.String))
})
export type ModelInfo = typeof ModelInfo.Type


/** The providers the registry has models of, in its order. */
export const providers = (models: ReadonlyArray<ModelInfo> = builtinModels): ReadonlyArray<string> => [...new Set(models.map((model) => model.provider))]

/** A dated snapshot suffix: `-2024-08-06` (OpenAI), `-20250929` (Anthropic) or `@20250929` (Claude on Vertex AI). */
const SNAPSHOT = /(?:-\d{4}-\d{2}-\d{2}|[-@]\d{8})$/

/** The model `name` refers to: by id, by alias, then without a snapshot date. `models` is indexed on its first lookup, so change a list by making a new one. */
export const lookup = (name: string, models: ReadonlyArray<ModelInfo> = builtinModels): ModelInfo | undefined => {
  const byName = indexOf(models)
  return byName.get(name) ?? (SNAPSHOT.test(name) ? byName.get(name.replace(SNAPSHOT, "")) : undefined)
}

/** The models of a list by id and alias, the first one of a name winning; built once per list (the loop looks up per call). */
const indexes = new WeakMap<ReadonlyArray<ModelInfo>, ReadonlyMap<string, ModelInfo>>()
const indexOf = (models: ReadonlyArray<ModelInfo>): ReadonlyMap<string, ModelInfo> => {
  let index = indexes.get(models)
  if (index === undefined) {
    const byName = new Map<string, ModelInfo>()
    // ids before aliases, as a search by id then alias found them
    for (const model of models) if (!byName.has(model.id)) byName.set(model.id, model)
    for (const model of models) for (const alias of model.aliases ?? []) if (!byName.has(alias)) byName.set(alias, model)
    index = byName
    indexes.set(models, index)
  }
  return index
}

/**
 * The prices of `models` by id and alias, in the shape of `AgentLoopConfig`'s `prices`. The loop
 * prices the name it sent, so a snapshot name is priced only when it is looked up first (`lookup`).
 * A name several providers serve keeps its first price, as `lookup` finds it: pass one provider's
 * models (`forProvider`) for that provider's prices.
 */
export const priceTable = (models: ReadonlyArray<ModelInfo> = builtinModels): Record<string, ModelPrice> => {
  const table: Record<string, ModelPrice> = {}
  for (const model of models) {
    for (const name of [model.id, ...(model.aliases ?? [])]) table[name] ??= model.price
  }
  return table
}
