/**
 * `npm run bench:render` (not a test): what the terminal's Markdown renderer (`cli/output/markdown.ts`)
 * costs per streamed delta as the transcript grows. An answer of 10,000 lines (headings, lists,
 * quotes, emphasis and inline code, fenced code blocks, a table) streams in deltas of about 24
 * characters, as a model sends them; after 100, 1,000 and 10,000 lines on screen, the time per
 * delta (median and p99 over the next 2,000 deltas) and the bytes written per delta against the
 * delta's own size are printed. The renderer draws each line once it is complete and redraws only
 * the line still arriving, so both stay flat however long the transcript is; a full repaint would
 * grow with it.
 */
import * as os from "node:os"
import { makeMarkdown } from "../src/cli/output/markdown.ts"
import { markdownStyle } from "../src/cli/output/markdownInline.ts"
import { styleFor } from "../src/cli/terminal/style.ts"

const LINES = 10_000
const DELTA = 24
const WINDOW = 2_000

/** One block of a long answer; repeated (numbered) to make the transcript. */
const block = (n: number): ReadonlyArray<string> => [
  `## Step ${n}: what changes`,
  "",
  `The **parser** now reads \`config.${n}.json\` and keeps _every_ key; see [the docs](https://example.com/${n}).`,
  "- first, load the file",
  "- then *validate* it against the schema",
  "  - nested: report each `error` with its path",
  "> Note: a ~~deprecated~~ key is read once and renamed.",
  "```ts",
  `export const load${n} = (path: string): Config => {`,
  "  const text = readFileSync(path, \"utf8\") // the raw file",
  "  return decode(JSON.parse(text))",
  "}",
  "```",
  "| key | type | default |",
  "| --- | --- | --- |",
  `| retries | number | ${n % 7} |`,
  ""
]

const text = (() => {
  const lines: Array<string> = []
  for (let n = 1; lines.length < LINES; n++) lines.push(...block(n))
  return lines.slice(0, LINES).join("\n") + "\n"
})()

const deltas: Array<string> = []
for (let i = 0; i < text.length; i += DELTA) deltas.push(text.slice(i, i + DELTA))

const md = makeMarkdown(markdownStyle(styleFor(true, {})), { columns: () => 120, rows: () => 40 })
const percentile = (values: Array<number>, p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(p * values.length))]!

// warm up on a separate renderer, so the first window does not pay for compilation
{
  const warm = makeMarkdown(markdownStyle(styleFor(true, {})), { columns: () => 120, rows: () => 40 })
  for (const delta of deltas.slice(0, 20_000)) warm.push(delta)
}

console.log(`${LINES} lines in ${deltas.length} deltas of ${DELTA} characters; ${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(2)}`)
console.log("lines on screen   µs per delta (p50, p99)   bytes written per delta   per character of delta")
let linesSeen = 0
let next = 0
for (const mark of [100, 1_000, LINES - 1_000]) {
  // stream up to the mark, then time a window of deltas
  while (linesSeen < mark && next < deltas.length) {
    const delta = deltas[next++]!
    md.push(delta)
    for (const char of delta) if (char === "\n") linesSeen++
  }
  const times: Array<number> = []
  let bytes = 0
  let chars = 0
  for (let i = 0; i < WINDOW && next < deltas.length; i++) {
    const delta = deltas[next++]!
    const start = process.hrtime.bigint()
    const out = md.push(delta)
    times.push(Number(process.hrtime.bigint() - start) / 1_000)
    bytes += Buffer.byteLength(out)
    chars += delta.length
    for (const char of delta) if (char === "\n") linesSeen++
  }
  console.log(
    `${String(mark).padStart(15)}   ${percentile(times, 0.5).toFixed(1).padStart(8)} ${percentile(times, 0.99).toFixed(1).padStart(8)}` +
      `   ${(bytes / times.length).toFixed(0).padStart(23)}   ${(bytes / chars).toFixed(2).padStart(22)}`
  )
}
md.end()
