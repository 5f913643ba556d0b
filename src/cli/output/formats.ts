/** The formats of `run`'s `--output-format` and `--input-format`, apart from the code that writes and reads them, for the flag definitions. */

/** The output formats of `run`. */
export const outputFormats = ["text", "json", "stream-json"] as const
export type OutputFormat = (typeof outputFormats)[number]

/** The input formats of `run`. */
export const inputFormats = ["text", "stream-json"] as const
export type InputFormat = (typeof inputFormats)[number]
