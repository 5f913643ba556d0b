/**
 * Telling text from what is not: the file tools show, search and change UTF-8 text only, and say
 * so instead of guessing when a file is binary or in another encoding.
 */

/** How much of the start of a file is looked at to tell a binary file apart. */
export const SNIFF_BYTES = 8192

/** Whether `bytes` hold a NUL byte, the mark of a binary file (text in any common encoding has none). */
export const hasNul = (bytes: Uint8Array): boolean => bytes.includes(0)

/**
 * The offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no overlong forms,
 * no surrogates, nothing past U+10FFFF), or -1 when all of `bytes` is. With `truncated`, a sequence
 * cut off by the end of `bytes` counts as well formed, for a window read from a longer file.
 */
export const firstInvalidUtf8 = (bytes: Uint8Array, truncated = false): number => {
  let i = 0
  while (i < bytes.length) {
    const lead = bytes[i]!
    if (lead < 0x80) {
      i++
      continue
    }
    // the number of continuation bytes, and the range the first of them must be in
    const [count, low, high] = lead >= 0xc2 && lead <= 0xdf
      ? [1, 0x80, 0xbf]
      : lead === 0xe0
      ? [2, 0xa0, 0xbf]
      : lead === 0xed
      ? [2, 0x80, 0x9f]
      : lead >= 0xe1 && lead <= 0xef
      ? [2, 0x80, 0xbf]
      : lead === 0xf0
      ? [3, 0x90, 0xbf]
      : lead >= 0xf1 && lead <= 0xf3
      ? [3, 0x80, 0xbf]
      : lead === 0xf4
      ? [3, 0x80, 0x8f]
      : [0, 0, 0]
    if (count === 0) return i
    for (let k = 1; k <= count; k++) {
      if (i + k >= bytes.length) return truncated ? -1 : i
      const byte = bytes[i + k]!
      if (k === 1 ? byte < low || byte > high : byte < 0x80 || byte > 0xbf) return i
    }
    i += count + 1
  }
  return -1
}

/**
 * Whether the line endings of `bytes` are all CRLF (at least one line break, and every LF preceded
 * by a CR), so that text given with LF endings should be written with CRLF.
 */
export const usesCrlf = (bytes: Uint8Array): boolean => {
  let breaks = 0
  for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a, at + 1)) {
    if (at === 0 || bytes[at - 1] !== 0x0d) return false
    breaks++
  }
  return breaks > 0
}

/** Checks UTF-8 validity of a byte stream chunk by chunk (a sequence may span two chunks). */
export const utf8Checker = () => {
  const decoder = new TextDecoder("utf-8", { fatal: true })
  let valid = true
  return {
    push: (chunk: Uint8Array): void => {
      if (!valid) return
      try {
        decoder.decode(chunk, { stream: true })
      } catch {
        valid = false
      }
    },
    /** Whether every byte pushed so far was well-formed UTF-8 (a sequence cut off at the end counts as such). */
    valid: (): boolean => valid
  }
}
