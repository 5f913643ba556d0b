/**
 * The built-in model registry: what the CLI (and any host) knows about the common OpenAI,
 * Anthropic and Google models without asking anyone — the context window, the most output tokens per call,
 * the price, and whether the model accepts images.
 *
 * Prices are US dollars per million tokens as the vendors list them for standard (not batch,
 * not priority) use, taken on `PRICES_AS_OF` from the models.dev catalogue. They go stale: a host
 * can override or extend them (the CLI's settings file has `prices`).
 *
 * Names are matched exactly, then by alias, then without a dated snapshot suffix, so
 * `gpt-4o-2024-08-06` and `claude-sonnet-4-5-20250929` find their family.
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
import { Schema } from "effect"
import { ModelPrice } from "./Usage.ts"

/** The day the built-in prices and limits were taken. */
export const PRICES_AS_OF = "2026-05-08"

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

/** Who makes the model, which says which provider speaks its API natively. */
export const Vendor = Schema.Literals(["openai", "anthropic", "google"])
export type Vendor = typeof Vendor.Type

/** What the registry knows about one model. */
export const ModelInfo = Schema.Struct({
  /** The name the vendor's API takes. */
  id: Schema.NonEmptyString,
  vendor: Vendor,
  /** Tokens of input plus output the model can attend to. */
  contextWindow: PositiveInt,
  /** The most tokens one response may hold. */
  maxOutputTokens: PositiveInt,
  price: ModelPrice,
  /** Whether the model accepts images in its input. */
  images: Schema.Boolean,
  /** Other names of the same model (snapshots, `-latest`, `-0` forms). */
  aliases: Schema.optionalKey(Schema.Array(Schema.String))
})
export type ModelInfo = typeof ModelInfo.Type

const openai = (
  id: string,
  contextWindow: number,
  maxOutputTokens: number,
  [input, cached, output]: readonly [number, number, number],
  aliases?: ReadonlyArray<string>
): ModelInfo => ({
  id,
  vendor: "openai",
  contextWindow,
  maxOutputTokens,
  price: { inputPerMillion: input, outputPerMillion: output, cachedInputPerMillion: cached },
  images: true,
  ...(aliases === undefined ? {} : { aliases })
})

const anthropic = (
  id: string,
  contextWindow: number,
  maxOutputTokens: number,
  [input, output]: readonly [number, number],
  aliases?: ReadonlyArray<string>
): ModelInfo => ({
  id,
  vendor: "anthropic",
  contextWindow,
  maxOutputTokens,
  // Anthropic prices cache reads at a tenth of input and (five-minute) cache writes at 1.25 times it.
  price: { inputPerMillion: input, outputPerMillion: output, cachedInputPerMillion: input / 10, cacheWritePerMillion: input * 1.25 },
  images: true,
  ...(aliases === undefined ? {} : { aliases })
})

const google = (
  id: string,
  contextWindow: number,
  maxOutputTokens: number,
  [input, cached, output]: readonly [number, number, number]
): ModelInfo => ({
  id,
  vendor: "google",
  contextWindow,
  maxOutputTokens,
  // Google prices prompts up to 200k tokens so; the Pro models cost more above that, which is not modelled.
  price: { inputPerMillion: input, outputPerMillion: output, cachedInputPerMillion: cached },
  images: true
})

/** The built-in models, newest families first. Every one of them accepts images but `o3-mini`. */
export const builtinModels: ReadonlyArray<ModelInfo> = [
  openai("gpt-5.5", 272_000, 128_000, [5, 0.5, 30]),
  openai("gpt-5.4", 272_000, 128_000, [2.5, 0.25, 15]),
  openai("gpt-5.4-mini", 400_000, 128_000, [0.75, 0.075, 4.5]),
  openai("gpt-5.4-nano", 400_000, 128_000, [0.2, 0.02, 1.25]),
  openai("gpt-5.2", 400_000, 128_000, [1.75, 0.175, 14]),
  openai("gpt-5.1", 400_000, 128_000, [1.25, 0.125, 10]),
  openai("gpt-5", 400_000, 128_000, [1.25, 0.125, 10]),
  openai("gpt-5-mini", 400_000, 128_000, [0.25, 0.025, 2]),
  openai("gpt-5-nano", 400_000, 128_000, [0.05, 0.005, 0.4]),
  openai("gpt-4.1", 1_047_576, 32_768, [2, 0.5, 8]),
  openai("gpt-4.1-mini", 1_047_576, 32_768, [0.4, 0.1, 1.6]),
  openai("gpt-4.1-nano", 1_047_576, 32_768, [0.1, 0.025, 0.4]),
  openai("gpt-4o", 128_000, 16_384, [2.5, 1.25, 10], ["chatgpt-4o-latest"]),
  openai("gpt-4o-mini", 128_000, 16_384, [0.15, 0.075, 0.6]),
  openai("o3", 200_000, 100_000, [2, 0.5, 8]),
  openai("o4-mini", 200_000, 100_000, [1.1, 0.275, 4.4]),
  { ...openai("o3-mini", 200_000, 100_000, [1.1, 0.55, 4.4]), images: false },
  anthropic("claude-opus-4-7", 1_000_000, 128_000, [5, 25]),
  anthropic("claude-opus-4-6", 1_000_000, 128_000, [5, 25]),
  anthropic("claude-opus-4-5", 200_000, 64_000, [5, 25]),
  anthropic("claude-opus-4-1", 200_000, 32_000, [15, 75]),
  anthropic("claude-sonnet-4-6", 1_000_000, 64_000, [3, 15]),
  anthropic("claude-sonnet-4-5", 200_000, 64_000, [3, 15]),
  anthropic("claude-sonnet-4-0", 200_000, 64_000, [3, 15], ["claude-sonnet-4"]),
  anthropic("claude-haiku-4-5", 200_000, 64_000, [1, 5]),
  google("gemini-3.1-pro-preview", 1_048_576, 65_536, [2, 0.2, 12]),
  google("gemini-3-pro-preview", 1_000_000, 64_000, [2, 0.2, 12]),
  google("gemini-3-flash-preview", 1_048_576, 65_536, [0.5, 0.05, 3]),
  google("gemini-3.1-flash-lite-preview", 1_048_576, 65_536, [0.25, 0.025, 1.5]),
  google("gemini-2.5-pro", 1_048_576, 65_536, [1.25, 0.125, 10]),
  google("gemini-2.5-flash", 1_048_576, 65_536, [0.3, 0.03, 2.5]),
  google("gemini-2.5-flash-lite", 1_048_576, 65_536, [0.1, 0.01, 0.4]),
  google("gemini-2.0-flash", 1_048_576, 8_192, [0.1, 0.025, 0.4])
]

/** A dated snapshot suffix: `-2024-08-06` (OpenAI), `-20250929` (Anthropic) or `@20250929` (Claude on Vertex AI). */
const SNAPSHOT = /(?:-\d{4}-\d{2}-\d{2}|[-@]\d{8})$/

/** The model `name` refers to: by id, by alias, then without a snapshot date. */
export const lookup = (name: string, models: ReadonlyArray<ModelInfo> = builtinModels): ModelInfo | undefined => {
  const find = (candidate: string) => models.find((model) => model.id === candidate || model.aliases?.includes(candidate) === true)
  return find(name) ?? (SNAPSHOT.test(name) ? find(name.replace(SNAPSHOT, "")) : undefined)
}

/**
 * The prices of `models` by id and alias, in the shape of `AgentLoopConfig`'s `prices`. The loop
 * prices the name it sent, so a snapshot name is priced only when it is looked up first (`lookup`).
 */
export const priceTable = (models: ReadonlyArray<ModelInfo> = builtinModels): Record<string, ModelPrice> => {
  const table: Record<string, ModelPrice> = {}
  for (const model of models) {
    for (const name of [model.id, ...(model.aliases ?? [])]) table[name] = model.price
  }
  return table
}
