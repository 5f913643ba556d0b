/**
 * What `agent-loop models [--provider NAME]` prints: the registry as a table, one model per line,
 * and the line saying what the prices are. Plain functions over plain data, so the installed
 * command prints it without loading Effect (`quick.ts`); `commands/models.ts` prints it in the CLI.
 */
import type { ModelInfo } from "../../domain/Models.ts"
import { builtinModels, forProvider, PRICES_AS_OF } from "../../domain/models/builtin.ts"
import { withThousands } from "../../domain/text.ts"
import { providerSummaries } from "./providerList.ts"

/** A token count as people write it: `128k`, `1M`, `1.05M` when it is round, else every digit (`1,047,576`). */
export const tokens = (n: number): string =>
  n >= 1_000_000 && n % 10_000 === 0
    ? `${n / 1_000_000}M`
    : n >= 1000 && n % 1000 === 0
    ? `${n / 1000}k`
    : withThousands(n)

const dollars = (n: number | undefined) => (n === undefined ? "-" : `$${Number(n.toPrecision(6))}`)

/** The registry as a table: columns padded for reading, one model per line. */
export const table = (models: ReadonlyArray<ModelInfo> = builtinModels): ReadonlyArray<string> => {
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

/** The line (to stderr) under the table. */
export const footer = (): string =>
  `prices in US dollars per million tokens, as of ${PRICES_AS_OF}; other models work too, with a ` +
  `128k context window assumed and no cost shown (a settings file's "prices" can add one)`

/** What `models` prints: the table's lines (stdout) and one line under them (stderr). */
export interface Listing {
  readonly lines: ReadonlyArray<string>
  readonly note: string
}

/**
 * The listing of `agent-loop models`, or of one provider's models (`--provider NAME`: the
 * registry's models of its catalogue; `azure` serves OpenAI's); `undefined` when `--provider` has
 * no such name.
 */
export const listing = (provider?: string): Listing | undefined => {
  if (provider === undefined) return { lines: table(), note: footer() }
  const summary = providerSummaries.find((p) => p.name === provider)
  if (summary === undefined) return undefined
  const models = summary.models === undefined ? [] : forProvider(summary.models)
  return models.length === 0
    ? { lines: [], note: `${provider} serves the models its server has: the registry lists none for it` }
    : { lines: table(models), note: footer() }
}
