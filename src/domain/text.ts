/**
 * Linear-time text helpers for text that came from outside (a model, a tool, a file, a server):
 * such text can be crafted to make a backtracking regular expression take quadratic time, so the
 * cuts and trims that run on it are plain loops with a bounded amount of work.
 */

/**
 * How many of `bytes` (the head of a longer UTF-8 text) hold whole characters: a sequence cut off
 * at the end is left out instead of becoming U+FFFD. Looks back at most three bytes, so the work is
 * constant whatever the bytes hold; a U+FFFD that is really in the text stays.
 */
export const completeUtf8Length = (bytes: Uint8Array): number => {
  let at = bytes.length - 1
  while (at >= 0 && bytes.length - at <= 3 && (bytes[at]! & 0xc0) === 0x80) at--
  if (at < 0) return bytes.length
  const lead = bytes[at]!
  const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1
  return at + length > bytes.length ? at : bytes.length
}

const decoder = new TextDecoder()

/** The text of the first `maxBytes` bytes of `bytes`, without a character cut in half (see `completeUtf8Length`). */
export const decodeUtf8Head = (bytes: Uint8Array, maxBytes: number): string => {
  const head = bytes.length <= maxBytes ? bytes : bytes.subarray(0, maxBytes)
  return decoder.decode(head.subarray(0, completeUtf8Length(head)))
}

/** `text` without the trailing characters `drop` accepts, scanning each character once. */
export const trimEndWhile = (text: string, drop: (char: string) => boolean): string => {
  let end = text.length
  while (end > 0 && drop(text[end - 1]!)) end--
  return end === text.length ? text : text.slice(0, end)
}

/**
 * `text` with each run of whitespace that holds a line break replaced by one space; runs without a
 * line break are kept, in one pass: the obvious `\s*\n\s*` pattern takes quadratic time on a
 * long run of spaces with no line break.
 */
export const joinLines = (text: string): string =>
  text.includes("\n") ? text.replace(/\s+/g, (run) => run.includes("\n") ? " " : run) : text

/**
 * How deeply the JSON a model writes (tool arguments, a typed answer) may nest. Far beyond any
 * real arguments, and far below what the recursive code that handles parsed JSON (Schema decoding,
 * `JSON.stringify`, the hooks) can take before the stack overflows.
 */
export const MAX_JSON_DEPTH = 256

/**
 * Whether the JSON `text` nests arrays and objects deeper than `max`, found by one scan of its
 * brackets (strings skipped) before anything parses it. Text that is not JSON may give any answer;
 * parsing it fails anyway.
 */
export const jsonTooDeep = (text: string, max: number = MAX_JSON_DEPTH): boolean => {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      // a string: skip to its closing quote, over escapes
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i)
        if (d === 0x5c) i++
        else if (d === 0x22) break
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

/**
 * An integer with a comma between thousands (`1,047,576`), as `toLocaleString("en-US")` writes
 * it, without loading the locale's number data, which costs about 15 ms on the first call of a
 * process (the CLI prints token counts after each turn). Other numbers go to `toLocaleString`.
 */
export const withThousands = (n: number): string =>
  Number.isSafeInteger(n) ? (n < 0 ? "-" : "") + String(Math.abs(n)).replace(/\B(?=(\d{3})+$)/g, ",") : n.toLocaleString("en-US")
