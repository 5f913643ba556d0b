/**
 * Tool names between agent-loop and Claude Code go both ways: every Claude Code name a rule or a
 * matcher may use leads to one of our tools, and a hook script is told that tool by a Claude Code
 * name which leads back to it (a matcher on `Glob` fires, and the payload says `Glob`).
 */
import { describe, expect, it } from "@effect/vitest"
import { BuiltinToolName } from "effect-agent-loop"
import { claudeName, fromClaudeInput, toClaudeInput } from "../../src/layers/claudeHooks/io.ts"
import { CLAUDE_ALIASES } from "../../src/layers/claudeHooks/names.ts"

describe("Claude Code's tool names", () => {
  it("name every tool an alias leads to by a name that leads back to it", () => {
    for (const ours of new Set(Object.values(CLAUDE_ALIASES))) {
      expect(CLAUDE_ALIASES[claudeName({ name: ours })], ours).toBe(ours)
    }
  })

  it("cover the built-in tools Claude Code has", () => {
    expect(claudeName({ name: "glob" })).toBe("Glob")
    expect(claudeName({ name: "grep" })).toBe("Grep")
    expect(BuiltinToolName.literals).toContain("glob")
  })

  it("the sub-agent tool is Task, with Claude Code's input shape both ways", () => {
    expect(claudeName({ name: "subagent" })).toBe("Task")
    expect(CLAUDE_ALIASES["Task"]).toBe("subagent")
    const args = { agent: "reviewer", task: "Review main.ts", description: "Review the change" }
    expect(toClaudeInput("subagent", args, "/ws")).toEqual({ subagent_type: "reviewer", prompt: "Review main.ts", description: "Review the change" })
    expect(fromClaudeInput("subagent", args, { prompt: "Review app.ts" }, "/ws")).toEqual({
      agent: "reviewer",
      task: "Review app.ts",
      description: "Review the change"
    })
  })
})
