/**
 * Short human forms of the numbers and arguments the renderer shows. Everything that came from
 * outside is cleaned of escape sequences here (`safeText.ts`), since these lines go to a terminal.
 */
import type { Usage } from "../../domain/Usage.ts"
import { joinLines, withThousands } from "../../domain/text.ts"
import { clean } from "./safeText.ts"

/** `850 ms`, `1.4 s`, `2 min 5 s`. */
export const duration = (ms: number): string =>
  ms < 1000
    ? `${Math.round(ms)} ms`
    : ms < 60_000
    ? `${(ms / 1000).toFixed(1)} s`
    : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`

const count = withThousands

/**
 * Whether a usage holds reported token counts. Every real request has input tokens, so zero in and
 * zero out means the provider reported none (many compatible servers do not).
 */
export const tokensKnown = (u: Usage): boolean => u.inputTokens > 0 || u.outputTokens > 0

const details = (parts: ReadonlyArray<readonly [number | undefined, string]>) => {
  const shown = parts.flatMap(([n, what]) => (n !== undefined && n > 0 ? [`${count(n)} ${what}`] : []))
  return shown.length === 0 ? "" : ` (${shown.join(", ")})`
}

/**
 * `1,234 in (1,000 cached) · 56 out (20 reasoning) tokens`, then the cost when it is known; or
 * `tokens unknown` when the provider reported none.
 */
export const usage = (u: Usage): string => {
  if (!tokensKnown(u)) return "tokens unknown"
  const input = `${count(u.inputTokens)} in${details([[u.cachedInputTokens, "cached"], [u.cacheWriteTokens, "cache write"]])}`
  const output = `${count(u.outputTokens)} out${details([[u.reasoningTokens, "reasoning"]])}`
  return `${input} · ${output} tokens${u.costUsd === undefined ? "" : ` · $${u.costUsd.toFixed(4)}`}`
}

/**
 * How much of a text `truncate` looks at per character shown: cleaning and joining lines only
 * shorten it, and a line of a terminal is short, so a megabyte of text costs no more than this.
 */
const WINDOW_PER_CHAR = 8

/** `text` cleaned and cut to `max` characters, with an ellipsis when cut; newlines shown as spaces. */
export const truncate = (text: string, max: number): string => {
  // cut first, then normalise: the work is bounded by `max`, not by the text
  const window = max * WINDOW_PER_CHAR + 64
  const cut = text.length > window
  const flat = joinLines(clean(cut ? text.slice(0, window) : text))
  return cut || flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

/** A tool call's JSON arguments, compacted, cleaned and truncated for one line. */
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
