/**
 * `node bench/regex.ts` (not a test): each text routine that runs on model, tool, file or server
 * text, timed on one megabyte of the input that is worst for it (the median of 5 runs). The
 * patterns these replaced are timed beside them on 64 KiB, as a reference: they grow with the
 * square of the input, so a megabyte would take minutes to hours.
 */
import * as Format from "../src/cli/terminal/format.ts"
import { imageMentions } from "../src/cli/input/images.ts"
import { clean } from "../src/cli/terminal/safeText.ts"
import { attach } from "../src/cli/input/stdinPrompt.ts"
import { completeUtf8Length, decodeUtf8Head, joinLines } from "../src/domain/text.ts"
import { frontMatter } from "../src/layers/fileHooks/manifest.ts"
import { capOutput } from "../src/layers/mcp/content.ts"
import { expandConfig } from "../src/layers/mcp/expand.ts"
import { matchesPattern } from "../src/layers/mcp/policy.ts"
import { describeBody } from "../src/layers/providers/httpErrors.ts"
import { median } from "./workload.ts"

const MB = 1024 * 1024
const KB64 = 64 * 1024
const FFFD = "\uFFFD"

const time = (f: () => unknown): number => {
  const runs: Array<number> = []
  for (let i = 0; i < 5; i++) {
    const start = performance.now()
    f()
    runs.push(performance.now() - start)
  }
  return median(runs)
}

const row = (name: string, ms: number) => console.log(`${name.padEnd(62)} ${ms.toFixed(2).padStart(10)} ms`)

const fffd = new TextEncoder().encode(FFFD.repeat(MB / 3) + "a".repeat(MB))
const spaces = " ".repeat(MB) + "x"

console.log("1 MiB of adversarial input, current code:")
row("Format.truncate: spaces without a line break", time(() => Format.truncate(spaces, 80)))
row("Format.args: JSON holding a megabyte of spaces", time(() => Format.args(JSON.stringify({ a: spaces }), 80)))
row("joinLines (whole text): spaces, one line break at the end", time(() => joinLines(spaces + "\n")))
row("cut on a character boundary: U+FFFD before the cut", time(() => decodeUtf8Head(fffd, MB + 1)))
row("completeUtf8Length alone", time(() => completeUtf8Length(fffd.subarray(0, MB + 1))))
row("MCP result cap: U+FFFD then a cut", time(() => capOutput({ content: FFFD.repeat(MB / 3) + "a".repeat(MB) }, MB)))
row("@image mentions: punctuation after a mention", time(() => imageMentions("@a.png" + ".".repeat(MB) + "x")))
row("MCP ${VAR:- expansion: unclosed references", time(() => expandConfig({ type: "stdio", command: "${X:-".repeat(MB / 5) }, {})))
row("MCP tool-name pattern: 8 stars, a megabyte-long name", time(() => matchesPattern("*a*a*a*a*a*a*a*b", "a".repeat(MB))))
row("terminal cleaning: escape openers", time(() => clean("\u001b[0 ".repeat(MB / 4))))
row("hook front matter: many almost-closing lines", time(() => frontMatter("---\n" + "\n---   x".repeat(MB / 8))))
row("provider error body: repeated near-matches", time(() => describeBody("context ".repeat(MB / 8))))
row("stdin attachment: line breaks", time(() => attach("p", "\n".repeat(MB) + "x")))

console.log("\n64 KiB, the patterns they replaced (quadratic):")
row("/\\s*\\n\\s*/g on spaces", time(() => (" ".repeat(KB64) + "x").replace(/\s*\n\s*/g, " ")))
row("/\\uFFFD+$/ on U+FFFD then text", time(() => (FFFD.repeat(KB64 / 3) + "a").replace(/\uFFFD+$/, "")))
row("/[.,;:!?)\\]}'\"]+$/ on punctuation then text", time(() => (".".repeat(KB64) + "x").replace(/[.,;:!?)\]}'"]+$/, "")))
row("/\\$\\{…(?::-([^}]*))?\\}/g on unclosed references", time(() => "${a:-".repeat(KB64 / 5).replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, "")))
row("/\\/+$/ on slashes then text", time(() => ("/".repeat(KB64) + "x").replace(/\/+$/, "")))
