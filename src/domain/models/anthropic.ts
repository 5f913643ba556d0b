/** Anthropic's models on its own API. Cache reads cost a tenth of input, (five-minute) cache writes 1.25 times it. */
import { type Prices, type Row, table } from "./row.ts"

const priced = (input: number, output: number): Prices => [input, output, input / 10, input * 1.25]

const rows: ReadonlyArray<Row> = [
  ["claude-opus-4-7", 1_000_000, 128_000, priced(5, 25), "ir"],
  ["claude-opus-4-6", 1_000_000, 128_000, priced(5, 25), "ir"],
  ["claude-opus-4-5", 200_000, 64_000, priced(5, 25), "ir"],
  ["claude-opus-4-1", 200_000, 32_000, priced(15, 75), "ir"],
  ["claude-sonnet-4-6", 1_000_000, 64_000, priced(3, 15), "ir"],
  ["claude-sonnet-4-5", 200_000, 64_000, priced(3, 15), "ir"],
  ["claude-sonnet-4-0", 200_000, 64_000, priced(3, 15), "ir", ["claude-sonnet-4"]],
  ["claude-haiku-4-5", 200_000, 64_000, priced(1, 5), "ir"]
]

/** Anthropic's models. */
export const models = table("anthropic", "anthropic", rows)
