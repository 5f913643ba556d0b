/**
 * Tool calls a user can review on a terminal: an edit as a numbered diff, a written file's first
 * lines, a command's last lines and whole command, a failure's cause in one line; long previews
 * folded with the number of hidden lines.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { diffLines } from "../../src/cli/output/lineDiff.ts"
import { makeRenderer } from "../../src/cli/output/render.ts"
import { causeLine, preview } from "../../src/cli/output/toolPreview.ts"
import * as Screen from "../../src/cli/terminal/screen.ts"
import { styleFor } from "../../src/cli/terminal/style.ts"

const plain = styleFor(false, {})
const colour = styleFor(true, {})

describe("the line diff", () => {
  it("keeps, removes and adds lines, numbered in both files", () => {
    expect(diffLines("a\nb\nc", "a\nB\nc\nd", 10)).toEqual([
      { kind: "same", oldLine: 10, newLine: 10, text: "a" },
      { kind: "removed", oldLine: 11, text: "b" },
      { kind: "added", newLine: 11, text: "B" },
      { kind: "same", oldLine: 12, newLine: 12, text: "c" },
      { kind: "added", newLine: 13, text: "d" }
    ])
  })

  it("gives back both texts from its rows, for random edits (seeded)", () => {
    let seed = 3
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n
    const text = () => Array.from({ length: random(12) }, () => "abcde"[random(5)]).join("\n")
    for (let run = 0; run < 300; run++) {
      const before = text()
      const after = text()
      const rows = diffLines(before, after)
      expect(rows.filter((r) => r.kind !== "added").map((r) => r.text).join("\n")).toBe(before)
      expect(rows.filter((r) => r.kind !== "removed").map((r) => r.text).join("\n")).toBe(after)
      // a longest common subsequence: never fewer kept lines than a greedy match would keep
      const kept = rows.filter((r) => r.kind === "same").length
      const b = after === "" ? [] : after.split("\n")
      let greedy = 0
      let k = 0
      for (const line of before === "" ? [] : before.split("\n")) {
        const at = b.indexOf(line, k)
        if (at !== -1) {
          greedy++
          k = at + 1
        }
      }
      expect(kept).toBeGreaterThanOrEqual(greedy)
    }
  })
})

describe("previews", () => {
  it("shows an edit as a diff numbered from the line the tool reports, coloured", () => {
    const call = { toolName: "edit_file", arguments: JSON.stringify({ path: "a.ts", old_text: "let x = 1\nkeep()", new_text: "let x = 2\nkeep()" }) }
    const end = { isError: false, result: "Edited \"a.ts\": replaced 1 occurrence at line 41" }
    expect(preview(call, end, plain, "  ", 80)).toEqual(["  41 - let x = 1", "  41 + let x = 2", "  42   keep()"])
    const styled = preview(call, end, colour, "", 80)
    expect(styled[0]).toContain("\u001b[31m- let x = 1\u001b[39m")
    expect(styled[1]).toContain("\u001b[32m+ let x = 2\u001b[39m")
  })

  it("folds a long written file after its first lines, saying how many are hidden", () => {
    const content = Array.from({ length: 45 }, (_, i) => `line ${i + 1}`).join("\n") + "\n"
    const lines = preview({ toolName: "write_file", arguments: JSON.stringify({ path: "f", content }) }, { isError: false, result: "Created" }, plain, "", 80)
    expect(lines).toHaveLength(21)
    expect(lines[0]).toBe(" 1 + line 1")
    expect(lines[20]).toBe("… 25 more lines")
  })

  it("shows a command's last lines and how many came before", () => {
    const output = Array.from({ length: 12 }, (_, i) => `out ${i + 1}`).join("\n")
    const lines = preview({ toolName: "exec", arguments: JSON.stringify({ command: "make" }) }, { isError: false, result: `exit code: 0\n${output}\n` }, plain, "", 80)
    expect(lines).toEqual(["… 7 earlier lines", "out 8", "out 9", "out 10", "out 11", "out 12"])
  })

  it("whole (chat's Ctrl-O): a written file unfolded, a command's every line, another tool's or a failure's whole result", () => {
    const content = Array.from({ length: 45 }, (_, i) => `line ${i + 1}`).join("\n") + "\n"
    const written = preview({ toolName: "write_file", arguments: JSON.stringify({ path: "f", content }) }, { isError: false, result: "Created" }, plain, "", 80, true)
    expect(written).toHaveLength(45)
    expect(written[44]).toBe("45 + line 45")
    const output = Array.from({ length: 12 }, (_, i) => `out ${i + 1}`).join("\n")
    expect(preview({ toolName: "exec", arguments: JSON.stringify({ command: "make" }) }, { isError: false, result: `exit code: 0\n${output}\n` }, plain, "", 80, true))
      .toEqual(Array.from({ length: 12 }, (_, i) => `out ${i + 1}`))
    expect(preview({ toolName: "read_file", arguments: JSON.stringify({ path: "a" }) }, { isError: false, result: "one\ntwo\n" }, plain, "  ", 80, true)).toEqual(["  one", "  two"])
    // a result holding escape sequences is shown as text, never run by the terminal
    expect(preview({ toolName: "exec", arguments: "{}" }, { isError: true, result: "exit code: 1\nboom \u001b]0;title\u0007" }, plain, "", 80, true).join("\n")).not.toContain("\u001b")
  })

  it("says a failure's cause in one line, past a bare exit code", () => {
    expect(causeLine("exit code: 2\n\nmake: *** No rule to make target 'x'.\nmore")).toBe("make: *** No rule to make target 'x'.")
    expect(causeLine("File not found: a.txt")).toBe("File not found: a.txt")
  })

  it("cleans escape sequences out of what it shows", () => {
    const lines = preview({ toolName: "exec", arguments: "{}" }, { isError: false, result: "exit code: 0\n\u001b]0;pwned\u0007ok\u001b[2J" }, plain, "", 80)
    expect(lines).toEqual(["ok"])
  })
})

describe("the renderer's tool lines", () => {
  const stderrOf = (events: ReadonlyArray<unknown>, verbose = false) => {
    let written = ""
    const screen = Screen.make({
      stdout: { write: () => true, isTTY: false, columns: 100 },
      stderr: { write: (text: string) => (written += text), isTTY: false },
      stdinIsTTY: false,
      env: {}
    })
    const draw = makeRenderer(screen, { verbose })
    Effect.runSync(Effect.forEach(events as ReadonlyArray<never>, draw, { discard: true }))
    return written
  }
  const start = (id: string, toolName: string, args: unknown) => ({ _tag: "ToolExecStart", depth: 0, toolCallId: id, toolName, arguments: JSON.stringify(args) })
  const end = (id: string, toolName: string, result: string, isError = false) => ({ _tag: "ToolExecEnd", depth: 0, toolCallId: id, toolName, durationMs: 12, isError, result })

  it("draws the diff under an edit's line, and the whole command when its line cut it", () => {
    const command = `npm run build -- --filter ${"x".repeat(90)} && echo done`
    const out = stderrOf([
      start("1", "edit_file", { path: "a.ts", old_text: "a", new_text: "b" }),
      end("1", "edit_file", "Edited \"a.ts\": replaced 1 occurrence at line 3"),
      start("2", "exec", { command }),
      end("2", "exec", "exit code: 0\ndone\n")
    ])
    expect(out).toContain("✓ edit_file 12 ms\n    3 - a\n    3 + b\n")
    expect(out).toContain(`    $ ${command}\n`)
    expect(out).toContain("✓ exec 12 ms\n    done\n")
  })

  it("gives a failed call's cause on its line, not the bare exit code", () => {
    const out = stderrOf([start("1", "exec", { command: "false" }), end("1", "exec", "exit code: 1\nboom: it failed\n", true)])
    expect(out).toContain("✗ exec 12 ms boom: it failed\n")
  })
})
