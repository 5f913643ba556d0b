/**
 * `agent-loop models`: the built-in model registry, one model per line on stdout, with the date its
 * prices were taken.
 */
import { Effect } from "effect"
import * as Models from "../domain/Models.ts"
import { Screen } from "./screen.ts"

const tokens = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${Math.round(n / 1000)}k`)
const dollars = (n: number | undefined) => (n === undefined ? "-" : `$${n}`)

/** The registry as a table: columns padded for reading, one model per line. */
export const table = (models: ReadonlyArray<Models.ModelInfo> = Models.builtinModels): ReadonlyArray<string> => {
  const rows = [
    ["model", "vendor", "context", "max out", "input/M", "cached/M", "output/M", "images"],
    ...models.map((model) => [
      model.id,
      model.vendor,
      tokens(model.contextWindow),
      tokens(model.maxOutputTokens),
      dollars(model.price.inputPerMillion),
      dollars(model.price.cachedInputPerMillion),
      dollars(model.price.outputPerMillion),
      model.images ? "yes" : "no"
    ])
  ]
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join("  ").trimEnd())
}

/** Prints the registry. */
export const list = Effect.gen(function*() {
  const screen = yield* Screen
  for (const line of table()) yield* screen.text(`${line}\n`)
  yield* screen.line(
    `prices in US dollars per million tokens, as of ${Models.PRICES_AS_OF}; other models work too, with a ` +
      `128k context window assumed and no cost shown (a settings file's "prices" can add one)`
  )
})
