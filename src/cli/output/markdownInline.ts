/**
 * Markdown inside a line: `**strong**`, `*emphasis*` / `_emphasis_`, `~~struck~~`, `` `code` ``,
 * `[text](url)` and `<url>`; a backslash escapes a marker. Unclosed markers stay as typed.
 */
import type { Style } from "../terminal/style.ts"

/** The styles Markdown needs: the terminal's own, plus a few more. */
export interface MarkdownStyle extends Style {
  readonly italic: (text: string) => string
  readonly underline: (text: string) => string
  readonly strike: (text: string) => string
  readonly magenta: (text: string) => string
  readonly blue: (text: string) => string
}

const ansi = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`
const plain = (text: string) => text

/** `style` with the extra Markdown styles (plain when `style` is). */
export const markdownStyle = (style: Style): MarkdownStyle =>
  style.enabled
    ? { ...style, italic: ansi(3, 23), underline: ansi(4, 24), strike: ansi(9, 29), magenta: ansi(35, 39), blue: ansi(34, 39) }
    : { ...style, italic: plain, underline: plain, strike: plain, magenta: plain, blue: plain }

/** SGR sequences (the only ones this renderer writes), for measuring what is visible. */
const SGR = /\u001b\[[0-9;]*m/g

/** Whether a code point takes two terminal columns (CJK, fullwidth forms, most emoji). */
const isWide = (code: number): boolean =>
  (code >= 0x1100 && code <= 0x115f) || (code >= 0x2e80 && code <= 0xa4cf) || (code >= 0xac00 && code <= 0xd7a3) ||
  (code >= 0xf900 && code <= 0xfaff) || (code >= 0xfe30 && code <= 0xfe4f) || (code >= 0xff00 && code <= 0xff60) ||
  (code >= 0xffe0 && code <= 0xffe6) || (code >= 0x1f300 && code <= 0x1faff) || (code >= 0x20000 && code <= 0x3fffd)

/** The terminal columns `text` takes (styles not counted; combining marks count as zero). */
export const visibleWidth = (text: string): number => {
  let width = 0
  for (const char of text.replace(SGR, "")) {
    const code = char.codePointAt(0)!
    if (code === 0x9) width += 8 - (width % 8)
    else if ((code >= 0x300 && code <= 0x36f) || code === 0x200d || (code >= 0xfe00 && code <= 0xfe0f)) continue
    else width += isWide(code) ? 2 : 1
  }
  return width
}

/** Inline spans, tried in this order at each position. */
const SPANS: ReadonlyArray<{ readonly pattern: RegExp; readonly draw: (match: RegExpExecArray, style: MarkdownStyle) => string }> = [
  { pattern: /^(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/, draw: (m, style) => style.cyan(m[2]!) },
  { pattern: /^\*\*(?=\S)([\s\S]*?\S)\*\*/, draw: (m, style) => style.bold(inline(m[1]!, style)) },
  { pattern: /^__(?=\S)([\s\S]*?\S)__(?!\w)/, draw: (m, style) => style.bold(inline(m[1]!, style)) },
  { pattern: /^~~(?=\S)([\s\S]*?\S)~~/, draw: (m, style) => style.strike(inline(m[1]!, style)) },
  { pattern: /^\*(?=[^\s*])([\s\S]*?[^\s*])\*(?!\*)/, draw: (m, style) => style.italic(inline(m[1]!, style)) },
  { pattern: /^_(?=[^\s_])([\s\S]*?[^\s_])_(?!\w)/, draw: (m, style) => style.italic(inline(m[1]!, style)) },
  {
    pattern: /^!?\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/,
    draw: (m, style) => m[1] === "" || m[1] === m[2] ? style.blue(style.underline(m[2]!)) : `${style.blue(inline(m[1]!, style))} ${style.dim(`(${m[2]})`)}`
  },
  { pattern: /^<(https?:\/\/[^>\s]+)>/, draw: (m, style) => style.blue(style.underline(m[1]!)) }
]

/** Characters where a span may start; everything else is copied as it is. */
const MARKERS = new Set(["`", "*", "_", "~", "[", "!", "<", "\\"])

/** `text` (one line, cleaned) with its inline Markdown drawn. */
export const inline = (text: string, style: MarkdownStyle): string => {
  let out = ""
  let i = 0
  while (i < text.length) {
    const char = text[i]!
    if (!MARKERS.has(char)) {
      out += char
      i++
      continue
    }
    if (char === "\\" && i + 1 < text.length && /[\\`*_{}[\]()#+\-.!~<>|]/.test(text[i + 1]!)) {
      out += text[i + 1]
      i += 2
      continue
    }
    // `_` inside a word (snake_case) is not emphasis
    if (char === "_" && i > 0 && /\w/.test(text[i - 1]!)) {
      out += char
      i++
      continue
    }
    const rest = text.slice(i)
    let matched = false
    for (const span of SPANS) {
      const match = span.pattern.exec(rest)
      if (match === null) continue
      out += span.draw(match, style)
      i += match[0].length
      matched = true
      break
    }
    if (!matched) {
      out += char
      i++
    }
  }
  return out
}
