/**
 * Command lines typed as for Claude Code, read as the loop's (`claudeArgs.ts`), the rules of its
 * list flags (`permissionSources.splitToolList`), and the closest known flag of a typo
 * (`invocation.ts`): pure functions, no process.
 */
import { describe, expect, it } from "@effect/vitest"
import { rewrite } from "../../src/cli/settings/claudeArgs.ts"
import { splitToolList } from "../../src/cli/settings/permissionSources.ts"
import { closest } from "../../src/cli/terminal/invocation.ts"

const commands = ["run", "chat", "sessions", "hooks"]

describe("Claude Code's command lines", () => {
  it("-p or --print with no command named is run; a command named keeps its own", () => {
    expect(rewrite(["-p", "hi"], commands)).toEqual(["run", "-p", "hi"])
    expect(rewrite(["--model", "m", "--print", "hi"], commands)).toEqual(["run", "--model", "m", "--print", "hi"])
    expect(rewrite(["run", "-p", "hi"], commands)).toEqual(["run", "-p", "hi"])
    expect(rewrite(["chat"], commands)).toEqual(["chat"])
    expect(rewrite(["--", "-p"], commands)).toEqual(["--", "-p"])
  })

  it("-r KEY and --resume KEY are --resume=KEY; a bare --resume stays", () => {
    expect(rewrite(["run", "-r", "s-1", "go"], commands)).toEqual(["run", "--resume=s-1", "go"])
    expect(rewrite(["chat", "--resume"], commands)).toEqual(["chat", "--resume"])
    expect(rewrite(["chat", "--resume", "--verbose"], commands)).toEqual(["chat", "--resume", "--verbose"])
  })

  it("a list flag takes the rule words after it, and stops at the prompt", () => {
    expect(rewrite(["run", "--allowedTools", "Bash(git log:*)", "Read", "mcp__gh__search", "what changed?"], commands))
      .toEqual(["run", "--allowedTools", "Bash(git log:*),Read,mcp__gh__search", "what changed?"])
    expect(rewrite(["run", "--disallowedTools", "WebFetch", "--yes", "go"], commands)).toEqual(["run", "--disallowedTools", "WebFetch", "--yes", "go"])
  })

  it("splits the rules of a list at commas and spaces outside parentheses", () => {
    expect(splitToolList(["Bash(git log:*),Read Edit", "Bash(npm run test, lint:*)"])).toEqual(["Bash(git log:*)", "Read", "Edit", "Bash(npm run test, lint:*)"])
    expect(splitToolList([" , "])).toEqual([])
  })

  it("names the closest known flag of a typo, and none when nothing is near", () => {
    const flags = ["--permission-mode", "--model", "--max-turns", "--allowedTools", "-p"]
    expect(closest("--permision-mode", flags)).toBe("--permission-mode")
    expect(closest("--allowed-tools", flags)).toBe("--allowedTools")
    expect(closest("--modle", flags)).toBe("--model")
    expect(closest("--frobnicate", flags)).toBeUndefined()
  })
})
