/**
 * Google's Gemini models, as the Gemini API and Vertex AI name them. Prices are those of prompts up
 * to 200k tokens; the Pro models cost more above that, which is not modelled.
 */
import { type Row, table } from "./row.ts"

const rows: ReadonlyArray<Row> = [
  ["gemini-3.1-pro-preview", 1_048_576, 65_536, [2, 12, 0.2], "ir"],
  ["gemini-3-pro-preview", 1_000_000, 64_000, [2, 12, 0.2], "ir"],
  ["gemini-3-flash-preview", 1_048_576, 65_536, [0.5, 3, 0.05], "ir"],
  ["gemini-3.1-flash-lite-preview", 1_048_576, 65_536, [0.25, 1.5, 0.025], "ir"],
  ["gemini-2.5-pro", 1_048_576, 65_536, [1.25, 10, 0.125], "ir"],
  ["gemini-2.5-flash", 1_048_576, 65_536, [0.3, 2.5, 0.03], "ir"],
  ["gemini-2.5-flash-lite", 1_048_576, 65_536, [0.1, 0.4, 0.01], "ir"],
  ["gemini-2.0-flash", 1_048_576, 8_192, [0.1, 0.4, 0.025], "i"]
]

/** Google's models. */
export const models = table("gemini", "google", rows)
