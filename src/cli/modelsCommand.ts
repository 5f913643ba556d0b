/**
 * `agent-loop models [--provider NAME]`: the built-in model registry, one model per line on
 * stdout, with the date its prices were taken.
 */
import { Effect } from "effect"
import * as Models from "../domain/Models.ts"
import { fail } from "./failure.ts"
import { Screen } from "./screen.ts"

/** A token count as people write it: `128k`, `1M`, `1.05M` when it is round, else every digit (`1,047,576`). */
export const tokens = (n: number): string =>
  n >= 1_000_000 && n % 10_000 === 0
    ? `${n / 1_000_000}M`
    : n >= 1000 && n % 1000 === 0
    ? `${n / 1000}k`
    : n.toLocaleString("en-US")

const dollars = (n: number | undefined) => (n === undefined ? "-" : `$${Number(n.toPrecision(6))}`)

/** The registry as a table: columns padded for reading, one model per line. */
export const table = (models: ReadonlyArray<Models.ModelInfo> = Models.builtinModels): ReadonlyArray<string> => {
  const rows = [
    ["model", "provider", "context", "max out", "input/M", "output/M", "cache read/M", "cache write/M", "images", "reasoning"],
    ...models.map((model) => [
      model.id,
      model.provider,
      tokens(model.contextWindow),
      tokens(model.maxOutputTokens),
      dollars(model.price.inputPerMillion),
      dollars(model.price.outputPerMillion),
      dollars(model.price.cachedInputPerMillion),
      dollars(model.price.cacheWritePerMillion),
      model.images ? "yes" : "no",
      model.reasoning === true ? "yes" : "no"
    ])
  ]
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join("  ").trimEnd())
}

/**
 * The models `--provider NAME` serves: the registry's models of the CLI provider's catalogue
 * (`azure` and `openai-responses` serve OpenAI's); `undefined` lists all.
 */
export const modelsOf = (provider: string | undefined) =>
  Effect.gen(function*() {
    if (provider === undefined) return Models.builtinModels
    // the provider table (and its layers) only when a provider is named: the whole list needs none
    const Providers = yield* Effect.promise(() => import("./providers.ts"))
    const entry = Providers.find(provider)
    if (entry === undefined) return yield* fail(`unknown provider "${provider}"; providers: ${Providers.providers.map((p) => p.name).join(", ")}`)
    return entry.models === undefined ? [] : Models.forProvider(entry.models)
  })

/** Prints the registry, or one provider's part of it. */
export const list = (provider: string | undefined) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const models = yield* modelsOf(provider)
    if (models.length === 0) {
      yield* screen.line(`${provider} serves the models its server has: the registry lists none for it`)
      return
    }
    for (const line of table(models)) yield* screen.text(`${line}\n`)
    yield* screen.line(
      `prices in US dollars per million tokens, as of ${Models.PRICES_AS_OF}; other models work too, with a ` +
        `128k context window assumed and no cost shown (a settings file's "prices" can add one)`
    )
  })
