/**
 * Answers rendered as Markdown on a terminal while they stream: what each construct looks like,
 * that any split of the stream leaves the same screen as the whole answer (the line in progress is
 * redrawn in place, wrapped or not), that a delta costs bytes in proportion to its line whatever
 * the transcript above, and that plain output stays plain.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeMarkdown } from "../../src/cli/output/markdown.ts"
import { markdownStyle } from "../../src/cli/output/markdownInline.ts"
import { makeRenderer } from "../../src/cli/output/render.ts"
import * as Screen from "../../src/cli/terminal/screen.ts"
import { styleFor } from "../../src/cli/terminal/style.ts"
import { makeVt } from "../support/vt.ts"

const styled = markdownStyle(styleFor(true, {}))
const size = (columns: number, rows = 50) => ({ columns: () => columns, rows: () => rows })

/** The bytes for `answer` pushed in `pieces`, then ended. */
const render = (pieces: ReadonlyArray<string>, columns = 80, rows = 50) => {
  const md = makeMarkdown(styled, size(columns, rows))
  return pieces.map((piece) => md.push(piece)).join("") + md.end()
}

/** What the screen shows after `bytes`. */
const screenOf = (bytes: string, columns = 80) => {
  const vt = makeVt(columns)
  vt.write(bytes)
  return vt.lines()
}

const ANSWER = [
  "# Lighthouse",
  "",
  "The **keeper** lit the *lamp* with `matches`, see [the log](https://example.com/log).",
  "",
  "- first item",
  "- [x] done item",
  "1. numbered",
  "> a quote",
  "",
  "| name | size |",
  "|------|-----:|",
  "| a | 1 |",
  "| longer name | 22 |",
  "",
  "```ts",
  "const x = \"hi\" // greet",
  "```",
  "---",
  "After snake_case_name and 2 * 3 * 4, a literal \\*star\\*."
].join("\n")

describe("Markdown on a terminal", () => {
  it("draws headings, emphasis, code, links, lists, quotes, tables, code blocks and rules", () => {
    const bytes = render([ANSWER])
    expect(bytes).toContain("\u001b[1m\u001b[4mLighthouse\u001b[24m\u001b[22m")
    expect(bytes).toContain("\u001b[1mkeeper\u001b[22m")
    expect(bytes).toContain("\u001b[3mlamp\u001b[23m")
    expect(bytes).toContain("\u001b[36mmatches\u001b[39m")
    expect(bytes).toContain("\u001b[35mconst\u001b[39m")
    expect(bytes).toContain("\u001b[32m\"hi\"\u001b[39m")
    expect(bytes).toContain("\u001b[2m// greet\u001b[22m")
    expect(screenOf(bytes)).toEqual([
      "Lighthouse",
      "",
      "The keeper lit the lamp with matches, see the log (https://example.com/log).",
      "",
      "• first item",
      "☑ done item",
      "1. numbered",
      "│ a quote",
      "",
      "name        │ size",
      "────────────┼─────",
      "a           │ 1",
      "longer name │ 22",
      "",
      "```ts",
      "const x = \"hi\" // greet",
      "```",
      "─".repeat(80),
      "After snake_case_name and 2 * 3 * 4, a literal *star*."
    ])
  })

  it("leaves the answer's rendering on screen whatever the stream's pieces, at any width (lines in progress wrap and are redrawn)", () => {
    const long = `${ANSWER.replace("---\n", "")}\n${"A long paragraph with **bold words** that wraps over several rows of a narrow terminal. ".repeat(4)}`
    // the rendering on a screen too wide to wrap, then cut into rows as a terminal wraps it
    const unwrapped = screenOf(render([long], 10_000), 10_000)
    for (const columns of [80, 23, 7]) {
      const expected = unwrapped.flatMap((line) => line === "" ? [""] : line.match(new RegExp(`.{1,${columns}}`, "g"))!.map((row) => row.trimEnd()))
      const check = (pieces: ReadonlyArray<string>, what: string) =>
        expect(screenOf(render(pieces, columns), columns), `width ${columns}, ${what}`).toEqual(expected)
      check([long], "whole")
      for (const step of [1, 2, 3, 5, 8, 13, 40]) {
        const pieces: Array<string> = []
        for (let i = 0; i < long.length; i += step) pieces.push(long.slice(i, i + step))
        check(pieces, `pieces of ${step}`)
      }
      // and random cut points (seeded)
      let seed = 7
      const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
      for (let run = 0; run < 20; run++) {
        const pieces: Array<string> = []
        for (let i = 0; i < long.length;) {
          const n = 1 + Math.floor(random() * 30)
          pieces.push(long.slice(i, i + n))
          i += n
        }
        check(pieces, `run ${run}`)
      }
    }
  })

  it("writes a delta's own bytes only, however long the transcript above it", () => {
    const md = makeMarkdown(styled, size(80))
    for (let i = 0; i < 10_000; i++) md.push(`line ${i} with **bold**\n`)
    expect(md.push("abc")).toBe("abc")
    // completing the line redraws that line alone: one erase, one rendered line
    const closing = md.push(" **def**\n")
    expect(closing).toBe(" **def**\r\u001b[Jabc \u001b[1mdef\u001b[22m\n")
  })

  it("keeps a table taller than the screen plain (it is out of the cursor's reach)", () => {
    const rows = ["| a | b |", "|---|---|", ...Array.from({ length: 30 }, (_, i) => `| ${i} | x |`)]
    const bytes = render([`${rows.join("\n")}\nafter`], 80, 24)
    expect(screenOf(bytes)).toEqual([...rows, "after"])
  })

  it("removes escape sequences a model writes before styling", () => {
    const bytes = render(["**bold**\u001b]0;title\u0007 \u001b[31mred\u001b[0m\r\n"])
    expect(bytes).not.toContain("]0;")
    expect(bytes).not.toContain("\u001b[31m")
    expect(screenOf(bytes)).toEqual(["bold red"])
  })
})

describe("the renderer's text modes", () => {
  const capture = (env: Record<string, string>, isTTY: boolean) => {
    let written = ""
    const screen = Screen.make({
      stdout: { write: (text: string) => (written += text), isTTY, columns: 80, rows: 24 },
      stderr: { write: () => true, isTTY },
      stdinIsTTY: false,
      env
    })
    const draw = makeRenderer(screen, { verbose: false })
    const text = (t: string) => ({ _tag: "LLMDelta", kind: "text", text: t, depth: 0 }) as never
    const response = { _tag: "LLMResponse", depth: 0, content: "**hi** `x`", toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 } } as never
    Effect.runSync(Effect.forEach([{ _tag: "LLMRequest", depth: 0 } as never, text("**hi** "), text("`x`"), response], draw, { discard: true }))
    return written
  }

  it("renders Markdown on a terminal with colours", () => {
    expect(capture({ TERM: "xterm-256color" }, true)).toContain("\u001b[1mhi\u001b[22m \u001b[36mx\u001b[39m")
  })

  it("writes the Markdown as it is with NO_COLOR, TERM=dumb, or stdout not a terminal", () => {
    expect(capture({ NO_COLOR: "1", TERM: "xterm" }, true)).toBe("**hi** `x`")
    expect(capture({ TERM: "dumb" }, true)).toBe("**hi** `x`")
    expect(capture({ TERM: "xterm" }, false)).toBe("**hi** `x`")
  })
})

describe("reasoning on the terminal", () => {
  const capture = (verbose: boolean, reasoning: ReadonlyArray<string>) => {
    let out = ""
    let err = ""
    const screen = Screen.make({
      stdout: { write: (text: string) => (out += text), isTTY: true, columns: 80, rows: 24 },
      stderr: { write: (text: string) => (err += text, true), isTTY: true },
      stdinIsTTY: false,
      env: { NO_COLOR: "1", TERM: "xterm" }
    })
    const draw = makeRenderer(screen, { verbose })
    const delta = (kind: string, text: string) => ({ _tag: "LLMDelta", kind, text, depth: 0 }) as never
    Effect.runSync(Effect.forEach([{ _tag: "LLMRequest", depth: 0 } as never, ...reasoning.map((r) => delta("reasoning", r)), delta("text", "Answer.")], draw, { discard: true }))
    return { out, err }
  }

  it("is folded to one dimmed line (its start and its length) before the answer; --verbose shows it whole", () => {
    const long = Array.from({ length: 300 }, (_, i) => `step ${i}`)
    const folded = capture(false, long.map((word) => `${word} `))
    expect(folded.out).toBe("Answer.")
    expect(folded.err.trim().split("\n")).toHaveLength(1)
    const length = long.map((word) => `${word} `).join("").length.toLocaleString("en-US")
    expect(folded.err).toMatch(new RegExp(`^\\(thinking\\) step 0 step 1 step 2 .*… \\(${length} characters; --verbose shows it whole\\)\\n$`))
    // a short one is shown as it is, folded or not
    expect(capture(false, ["Just ", "a thought."]).err).toBe("(thinking) Just a thought.\n")
    const whole = capture(true, long.map((word) => `${word} `))
    expect(whole.err).toContain("step 299")
  })
})

