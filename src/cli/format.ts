/**
 * Short human forms of the numbers and arguments the renderer shows.
 */
import type { Usage } from "../domain/Usage.ts"

/** `850 ms`, `1.4 s`, `2 min 5 s`. */
export const duration = (ms: number): string =>
  ms < 1000
    ? `${Math.round(ms)} ms`
    : ms < 60_000
    ? `${(ms / 1000).toFixed(1)} s`
    : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`

const count = (n: number): string => n.toLocaleString("en-US")

/** `1,234 in · 56 out tokens`, then the cost when it is known. */
export const usage = (u: Usage): string =>
  `${count(u.inputTokens)} in · ${count(u.outputTokens)} out tokens${u.costUsd === undefined ? "" : ` · $${u.costUsd.toFixed(4)}`}`

/** `text` cut to `max` characters, with an ellipsis when cut; newlines shown as spaces. */
export const truncate = (text: string, max: number): string => {
  const flat = text.replace(/\s*\n\s*/g, " ")
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

/** A tool call's JSON arguments, compacted and truncated for one line. */
export const args = (json: string, max = 80): string => {
  let compact = json
  try {
    compact = JSON.stringify(JSON.parse(json))
  } catch {
    compact = json
  }
  return truncate(compact, max)
}

/** `1 iteration`, `3 iterations`. */
export const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`
