/**
 * The pieces of the chat's prompt that need no terminal: Tab completion's candidates (commands,
 * fuzzy `@` paths, agents), Ctrl-R's search and Tab's listing on readline fed through a stream,
 * the notification's method and bytes (and that a focused terminal gets none), the permission
 * modes' cycle and policies, and the status line's text.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import { PassThrough } from "node:stream"
import { cycleOf, nextMode, policyOf, statusText } from "../../src/cli/commands/chatModes.ts"
import * as Completion from "../../src/cli/input/completion.ts"
import { parseAnswer } from "../../src/cli/output/planReview.ts"
import * as Keys from "../../src/cli/input/keys.ts"
import * as Notify from "../../src/cli/terminal/notify.ts"
import { tempDir } from "../support/cliProcess.ts"

const workspace = () => {
  const dir = tempDir()
  for (const file of ["src/parser/tokenizer.ts", "src/parser/tokens.ts", "src/app.ts", "README.md", "node_modules/x/index.js", ".git/HEAD"]) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
    fs.writeFileSync(path.join(dir, file), "")
  }
  return dir
}

describe("Tab completion", () => {
  it("completes commands at the start of the line, @paths fuzzily (closest first, hidden and node_modules skipped) and agents", () => {
    const complete = Completion.make({ commands: () => ["cost", "compact", "clear", "git:commit"], agents: () => ["reviewer"], workspace: workspace() })
    expect(complete("/co")).toEqual({ from: 0, candidates: ["/compact", "/cost"] })
    expect(complete("/git:")).toEqual({ from: 0, candidates: ["/git:commit"] })
    // not a command once a space follows, nor text without @
    expect(complete("/cost now")).toBeUndefined()
    expect(complete("hello")).toBeUndefined()
    expect(complete("read @tknz")).toEqual({ from: 5, candidates: ["@src/parser/tokenizer.ts"] })
    expect(complete("read @tok")!.candidates).toEqual(["@src/parser/tokens.ts", "@src/parser/tokenizer.ts"])
    expect(complete("ask @rev")!.candidates).toEqual(["@reviewer"])
    const all = complete("@")!.candidates
    expect(all).toContain("@src/")
    expect(all.some((c) => c.includes("node_modules") || c.includes(".git"))).toBe(false)
  })

  it("scores a substring above scattered letters, the file's own name first, and no match as undefined", () => {
    expect(Completion.fuzzyScore("app", "src/app.ts")!).toBeLessThan(Completion.fuzzyScore("app", "apps/x/readme.md")!)
    expect(Completion.fuzzyScore("tk", "src/parser/tokenizer.ts")).toBeDefined()
    expect(Completion.fuzzyScore("zz", "src/parser/tokenizer.ts")).toBeUndefined()
    expect(Keys.commonPrefix(["src/parser/tokens.ts", "src/parser/tokenizer.ts"])).toBe("src/parser/token")
  })
})

/** readline on a stream that says it is a terminal, with `Keys.install`; what it drew and the lines it gave. */
const editor = (options: Keys.KeyOptions, history: Array<string> = []) => {
  const input = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => {} })
  const output = new PassThrough()
  let drawn = ""
  output.on("data", (chunk) => (drawn += chunk.toString()))
  const rl = readline.createInterface({ input, output, terminal: true, history, prompt: "> " })
  const lines: Array<string> = []
  rl.on("line", (line) => lines.push(line))
  const installed = Keys.install(rl, (rl as unknown as { history: Array<string> }).history, output, options)
  return { input, rl, lines, installed, drawn: () => drawn, line: () => (rl as unknown as { line: string }).line }
}

describe("the chat's keys on readline", () => {
  it("Tab replaces the word with the only candidate, or lists several; Shift-Tab and focus reports never reach the line", () => {
    const focus: Array<boolean> = []
    let shifted = 0
    const complete = Completion.make({ commands: () => ["cost", "compact"], agents: () => [], workspace: workspace() })
    const e = editor({ complete, onShiftTab: () => shifted++, onFocus: (focused) => focus.push(focused) })
    e.input.write("/cos\t")
    expect(e.line()).toBe("/cost ")
    e.input.write("\u0015/co\t")
    expect(e.line()).toBe("/co")
    expect(e.drawn()).toContain("/compact  /cost")
    e.input.write("\u001b[Z\u001b[O\u001b[I")
    expect(shifted).toBe(1)
    expect(focus).toEqual([false, true])
    expect(e.line()).toBe("/co")
    // a pasted tab is text
    e.input.write("\u001b[200~\tx\u001b[201~")
    expect(e.line()).toBe("/co\tx")
    e.rl.close()
  })

  it("Ctrl-R finds the newest input holding the typed text, again goes further back, Enter runs it; Ctrl-G gives the line back", () => {
    const e = editor({}, ["fix the tokenizer", "run the tests", "read the tokenizer docs"])
    e.input.write("draft")
    e.input.write("\u0012token")
    expect(e.drawn()).toContain("(reverse-i-search)'token': fix the tokenizer")
    e.input.write("\u0012")
    expect(e.drawn()).toContain("(reverse-i-search)'token': read the tokenizer docs")
    e.input.write("\u0007")
    expect(e.line()).toBe("draft")
    e.input.write("\u0012tests\r")
    expect(e.lines).toEqual(["run the tests"])
    expect(Keys.searchHistory(["a", "b"], "z", 0)).toBe(-1)
    e.rl.close()
  })

  it("says while Ctrl-R's search is under way, to the key listeners that run before it (the chat's Esc is then the search's)", () => {
    const e = editor({}, ["run the tests"])
    // as the chat's line input listens: before readline, so it sees the state the key finds
    const seen: Array<[string | undefined, boolean]> = []
    e.input.prependListener("keypress", (_: unknown, key: { readonly name?: string } | undefined) => seen.push([key?.name, e.installed.searching()]))
    expect(e.installed.searching()).toBe(false)
    e.input.write("\u0012te")
    expect(e.installed.searching()).toBe(true)
    e.input.write("\u0007")
    expect(e.installed.searching()).toBe(false)
    expect(seen).toEqual([["r", false], ["t", true], ["e", true], ["g", true]])
    e.rl.close()
  })
})

describe("the plan's question", () => {
  it("y accepts with edits accepted, d in default mode, anything else keeps planning with the words after n", () => {
    expect(parseAnswer("y")).toEqual({ _tag: "Accept", mode: "acceptEdits" })
    expect(parseAnswer(" YES ")).toEqual({ _tag: "Accept", mode: "acceptEdits" })
    expect(parseAnswer("d")).toEqual({ _tag: "Accept", mode: "default" })
    expect(parseAnswer("n use tabs")).toEqual({ _tag: "Refine", feedback: "use tabs" })
    expect(parseAnswer("")).toEqual({ _tag: "Refine", feedback: "" })
    expect(parseAnswer(undefined)).toEqual({ _tag: "Refine", feedback: "" })
    expect(parseAnswer("split step 2")).toEqual({ _tag: "Refine", feedback: "split step 2" })
  })
})

describe("notifications", () => {
  it("OSC 9 where known, OSC 777 on VTE and foot, the bell elsewhere and inside tmux; nothing while focused", () => {
    expect(Notify.methodFor({ TERM_PROGRAM: "iTerm.app" })).toBe("osc9")
    expect(Notify.methodFor({ KITTY_WINDOW_ID: "1" })).toBe("osc9")
    expect(Notify.methodFor({ VTE_VERSION: "7600" })).toBe("osc777")
    expect(Notify.methodFor({ TERM_PROGRAM: "WezTerm", TMUX: "/tmp/x" })).toBe("bell")
    expect(Notify.methodFor({ TERM: "xterm-256color" })).toBe("bell")
    expect(Notify.sequence("osc9", "done;\u001b[31m")).toBe("\u001b]9;done  [31m\u0007")
    expect(Notify.sequence("osc777", "done")).toBe("\u001b]777;notify;agent-loop;done\u0007")
    let written = ""
    const notifier = Notify.make({ write: (text: string) => (written += text) }, {})
    notifier.notify("unknown focus")
    expect(written).toBe("\u0007")
    notifier.focused(true)
    notifier.notify("focused")
    expect(written).toBe("\u0007")
    notifier.focused(false)
    notifier.notify("away")
    expect(written).toBe("\u0007\u0007")
  })
})

describe("permission modes and the status line", () => {
  it("Shift-Tab cycles default, acceptEdits, plan (and the mode the chat started in beyond those); bypassPermissions approves", () => {
    const cycle = cycleOf("default")
    expect([nextMode(cycle, "default"), nextMode(cycle, "acceptEdits"), nextMode(cycle, "plan")]).toEqual(["acceptEdits", "plan", "default"])
    expect(cycleOf("bypassPermissions")).toEqual(["default", "acceptEdits", "plan", "bypassPermissions"])
    expect(policyOf("bypassPermissions", "ask")).toBe("approve")
    expect(policyOf("plan", "approve")).toBe("ask")
    expect(policyOf("default", "ask")).toBe("ask")
  })

  it("says the model, the mode, the context as a share of the window and the cost", () => {
    expect(statusText({ model: "m", mode: "plan", contextTokens: 64_000, contextWindow: 128_000, costUsd: 0.01234 })).toEqual([
      "m",
      "plan mode",
      "context 50%",
      "$0.0123"
    ])
    expect(statusText({ model: "m", mode: "default", contextTokens: 150, contextWindow: 128_000, costUsd: undefined })[2]).toBe("context 0.1%")
    expect(statusText({ model: "m", mode: "default", contextTokens: undefined, contextWindow: 128_000, costUsd: undefined })).toEqual([
      "m",
      "default mode",
      "context 0%",
      "cost unknown"
    ])
  })
})
