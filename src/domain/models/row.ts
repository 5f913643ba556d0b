/**
 * The shorthand the registry's tables are written in: one array per model, so each provider's
 * table reads as a list and a provider adds its models as one more file (see `Models.ts`).
 */
import type { ModelInfo } from "../Models.ts"

/** Prices per million tokens: input, output, then cache read and cache write where the provider prices them. */
export type Prices = readonly [input: number, output: number, cacheRead?: number, cacheWrite?: number]

/**
 * One model: its id, context window, output limit, prices, and flags — `i` when it accepts
 * images, `r` when it reasons (thinks before answering) — then other names of it.
 */
export type Row = readonly [id: string, contextWindow: number, maxOutputTokens: number, prices: Prices, flags: string, aliases?: ReadonlyArray<string>]

/**
 * The models of one provider. `vendor` says who makes a model: a string for all of them, or read
 * from the id (`anthropic.claude-…` on Bedrock, `openai/gpt-5` on OpenRouter).
 */
export const table = (provider: string, vendor: string | ((id: string) => string), rows: ReadonlyArray<Row>): ReadonlyArray<ModelInfo> =>
  rows.map(([id, contextWindow, maxOutputTokens, [input, output, cacheRead, cacheWrite], flags, aliases]) => ({
    id,
    provider,
    vendor: typeof vendor === "string" ? vendor : vendor(id),
    contextWindow,
    maxOutputTokens,
    price: {
      inputPerMillion: input,
      outputPerMillion: output,
      ...(cacheRead === undefined ? {} : { cachedInputPerMillion: cacheRead }),
      ...(cacheWrite === undefined ? {} : { cacheWritePerMillion: cacheWrite })
    },
    images: flags.includes("i"),
    reasoning: flags.includes("r"),
    ...(aliases === undefined || aliases.length === 0 ? {} : { aliases })
  }))

/** The vendor of an id that names it first: `meta.llama…` and `meta-llama/…` give `meta`. */
export const vendorPrefix = (id: string): string => {
  const name = id.replace(/^(?:us|eu|apac|global|au|jp)\./, "").split(/[./]/)[0]!
  return name === "meta-llama" ? "meta" : name === "x-ai" ? "xai" : name === "mistralai" ? "mistral" : name === "moonshotai" ? "moonshot" : name
}
