/**
 * The runnable examples (`examples/*.ts`) run, offline, and print what they are about. Each runs
 * as `npm run example FILE` runs it: this Node with `scripts/sources.ts`, so `effect-agent-loop`
 * is the sources. They run all at once, each a process of its own (a second or two each).
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { promisify } from "node:util"
import { describe, expect, it } from "@effect/vitest"
import { root } from "../support/cliProcess.ts"

const run = promisify(execFile)

/** What each example must print, line by line in order (each a part of a line). */
const expected: Readonly<Record<string, ReadonlyArray<string | RegExp>>> = {
  "library.ts": ["[hook] celsius_to_fahrenheit is about to run", "[answer] (completed, 2 iterations) -1.5 °C is 29.3 °F"],
  "hooks.ts": [
    "[audit] transfer",
    "[cap] 80000 cents is over the limit",
    "[gate] \"Done.\" says no amount",
    `[ran] transfer {"from":"savings","to":"rent","cents":50000} (the model asked {"from":"savings","to":"rent","cents":80000})`,
    "[result] transfer: moved 500.00 EUR from savings to rent (reference savings-rent)",
    "[result] close_account: Tool execution denied by hook: accounts are closed by a person",
    "[answer] (completed, 3 iterations) Moved 500.00 EUR"
  ],
  "steering.ts": [
    "[steering] completed: Booked Porto and Lisbon",
    "[steering] skipped: Skipped due to queued user message.",
    "[graceful] interrupted: Booked Madrid",
    "[hard] aborted; messages kept in the session: 0"
  ],
  "sub-turns.ts": [
    "[spawn] sub-turn on small-model from depth 0",
    "[spawn] sub-turn on small-model from depth 0",
    "[end] a sub-turn ended completed",
    "[end] a sub-turn ended completed",
    "[answer] (completed) Two findings.",
    "security: The query is built by string concatenation",
    "style: `q` could be named `query`."
  ],
  "typed-answer.ts": [
    /\[sent back\] The answer does not match the output schema: Expected number .*population/,
    "[answer] (completed, 2 iterations) Tokyo, Japan: 14,094,034 people"
  ],
  "order-tool.ts": [
    "[tool] lookup_order: order A-17: kettle, paid",
    "[tool] cancel_order: order A-17 cancelled",
    "[tool] cancel_order: order B-2 is shipped: it cannot be cancelled (error)",
    "[answer] A-17 (a kettle) is cancelled"
  ],
  "effect-ai.ts": [
    "[a toolkit in the loop] get_weather gave {\"sky\":\"rain\",\"celsius\":11}; answer: Rain, 11 °C.",
    "[a loop tool in generateText] generateText ran add: 42",
    "[LanguageModel] model canned-1 answered: Hello from an effect/ai model."
  ]
}

/** Runs one example to its end: its output, or its failure with what it printed. */
const runExample = (file: string) =>
  run(process.execPath, ["--import", "./scripts/sources.ts", path.join("examples", file)], {
    cwd: root,
    timeout: 60_000,
    env: { ...process.env, NO_COLOR: "1" }
  }).then(({ stdout }) => stdout, (error: { readonly stdout?: string; readonly stderr?: string }) => `FAILED\n${error.stdout}\n${error.stderr}`)

describe("the examples", () => {
  it("every runnable example is checked here", () => {
    const runnable = fs.readdirSync(path.join(root, "examples")).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts") && f !== "record-demo.ts")
    expect(runnable.sort()).toEqual(Object.keys(expected).sort())
  })

  it("run offline and print what they show", async () => {
    const outputs = await Promise.all(Object.keys(expected).map(runExample))
    Object.keys(expected).forEach((file, i) => {
      const lines = outputs[i]!.split("\n")
      let at = 0
      for (const want of expected[file]!) {
        const found = lines.findIndex((line, j) => j >= at && (typeof want === "string" ? line.includes(want) : want.test(line)))
        expect(found, `${file} printed, in order, a line with ${String(want)}:\n${outputs[i]}`).toBeGreaterThanOrEqual(0)
        at = found + 1
      }
    })
  }, 120_000)
})
