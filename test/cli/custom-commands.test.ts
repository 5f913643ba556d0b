/** Custom slash commands: parsing command files, substituting arguments, reading a chat line, narrowing tools. */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as CustomCommands from "../../src/cli/config/customCommands.ts"
import * as Slash from "../../src/cli/commands/slashCommands.ts"

const parsed = (path: string, text: string) => {
  const result = CustomCommands.parse(path, text)
  if (Result.isFailure(result)) throw new Error(result.failure)
  return result.success
}

describe("custom command files", () => {
  it("reads the front matter and the body; Claude Code's tool names are mapped", () => {
    const command = parsed(
      "/x/review.md",
      "---\ndescription: Review a file\nargument-hint: FILE\nmodel: big-model\nallowed-tools: Read, Grep\n---\nReview $1 carefully.\n"
    )
    expect(command).toEqual({
      name: "review",
      path: "/x/review.md",
      body: "Review $1 carefully.",
      description: "Review a file",
      argumentHint: "FILE",
      model: "big-model",
      allowedTools: ["Read", "Grep"]
    })
  })

  it("argument-hint in every form Claude Code accepts: bare `[a] [b]`, a YAML list, a string", () => {
    const hint = (line: string) => parsed("/x/h.md", `---\n${line}\n---\nbody\n`).argumentHint
    expect(hint("argument-hint: [file] [focus]")).toBe("[file] [focus]")
    expect(hint("argument-hint: [file]")).toBe("[file]")
    expect(hint("argument-hint: add [tagId] | remove [tagId] | list")).toBe("add [tagId] | remove [tagId] | list")
    expect(hint(`argument-hint: "[pr-number] [priority]"`)).toBe("[pr-number] [priority]")
    expect(hint("argument-hint:\n  - file\n  - focus")).toBe("file focus")
    expect(parsed("/x/d.md", "---\ndescription: Review: the file\n---\nbody").description).toBe("Review: the file")
  })

  it("allowed-tools are rules as written (pre-approvals), never narrowing; `tools` narrows; disable-model-invocation is kept", () => {
    const command = parsed(
      "/x/commit.md",
      "---\nallowed-tools: Bash(git add:*), Bash(git status:*) Read\ntools: [Bash, Read]\ndisable-model-invocation: true\n---\nCommit"
    )
    expect(command.allowedTools).toEqual(["Bash(git add:*)", "Bash(git status:*)", "Read"])
    expect(command.tools).toEqual(["exec", "read_file"])
    expect(command.disableModelInvocation).toBe(true)
  })

  it("a file in a subdirectory is namespaced; /LAST finds it while unambiguous", () => {
    const commit = CustomCommands.parse("/x/git/commit.md", "Commit", "git/commit.md")
    expect(Result.isSuccess(commit) && commit.success.name).toBe("git:commit")
    const bad = CustomCommands.parse("/x/a b/c.md", "body", "a b/c.md")
    expect(Result.isFailure(bad) && bad.failure).toMatch(/name "a b"/)
    const customs = [parsed("/x/c.md", "one"), { ...parsed("/x/d.md", "two"), name: "git:commit" }, { ...parsed("/x/e.md", "3"), name: "hg:commit" }]
    expect(CustomCommands.find(customs, "git:commit")?.path).toBe("/x/d.md")
    expect(CustomCommands.find(customs, "commit")).toBeUndefined()
    expect(CustomCommands.find(customs.slice(0, 2), "commit")?.path).toBe("/x/d.md")
    expect(Slash.parse("/git:commit now", customs)).toMatchObject({ _tag: "Custom", prompt: "two" })
  })

  it("a file without front matter is all body; an empty body or a bad field is refused, saying why", () => {
    expect(parsed("/x/hi.md", "Say hi to $ARGUMENTS\n")).toEqual({ name: "hi", path: "/x/hi.md", body: "Say hi to $ARGUMENTS" })
    expect(CustomCommands.parse("/x/e.md", "---\ndescription: d\n---\n  \n")).toEqual(Result.fail("the body (the command's prompt) is empty"))
    const bad = CustomCommands.parse("/x/b.md", "---\ndisable-model-invocation: maybe\n---\nbody\n")
    expect(Result.isFailure(bad) && bad.failure).toMatch(/^disable-model-invocation: /)
    const yaml = CustomCommands.parse("/x/y.md", "---\nmodel: [unclosed\n---\nbody\n")
    expect(Result.isFailure(yaml) && yaml.failure).toMatch(/^invalid YAML: /)
    const badName = CustomCommands.parse("/x/bad name.md", "body")
    expect(Result.isFailure(badName) && badName.failure).toMatch(/name "bad name"/)
  })
})

describe("a command's model", () => {
  it("Claude Code's aliases resolve for the provider in use, as agents' do; one the provider lacks skips the command saying so", () => {
    const commands = [parsed("/x/fast.md", "---\nmodel: haiku\n---\nQuick"), parsed("/x/own.md", "---\nmodel: my-model\n---\nMine"), parsed("/x/none.md", "Plain")]
    expect(CustomCommands.withModels(commands, { name: "anthropic", registry: "anthropic" }).commands.map((c) => c.model)).toEqual([
      "claude-haiku-4-5",
      "my-model",
      undefined
    ])
    const openai = CustomCommands.withModels(commands, { name: "openai", registry: "openai" })
    expect(openai.commands.map((c) => c.name)).toEqual(["own", "none"])
    expect(openai.problems).toEqual([{ path: "/x/fast.md", message: expect.stringMatching(/^model "haiku" is a Claude Code alias, and provider openai has no haiku model/) }])
  })
})

describe("argument substitution", () => {
  it("$ARGUMENTS is all of them as typed, $1…$9 each (quotes keep one whole), missing ones empty", () => {
    expect(CustomCommands.expand("Fix $ARGUMENTS now", "  issue 12 in src  ")).toBe("Fix issue 12 in src now")
    expect(CustomCommands.expand("[$1] [$2] [$3]", `one "two words" 'three'`)).toBe("[one] [two words] [three]")
    expect(CustomCommands.expand("[$1] [$9]", "")).toBe("[] []")
  })

  it("an argument that looks like a placeholder is not substituted again", () => {
    expect(CustomCommands.expand("$1 and $2", "$2 x")).toBe("$2 and x")
  })
})

describe("a chat line", () => {
  const customs = [parsed("/x/hi.md", "Hello $ARGUMENTS"), parsed("/x/model.md", "shadowed")]

  it("is a built-in (which wins over a custom of the same name), a custom command, unknown, or text", () => {
    expect(Slash.parse("/model  gpt-x ", customs)).toEqual({ _tag: "Builtin", name: "model", args: "gpt-x" })
    expect(Slash.parse("/quit", customs)).toEqual({ _tag: "Builtin", name: "exit", args: "" })
    expect(Slash.parse("/hi big world", customs)).toMatchObject({ _tag: "Custom", prompt: "Hello big world" })
    expect(Slash.parse("/nope", customs)).toEqual({ _tag: "Unknown", name: "nope" })
    expect(Slash.parse("/etc/hosts: what is it?", customs)).toEqual({ _tag: "Text", text: "/etc/hosts: what is it?" })
    expect(Slash.parse("plain", customs)).toEqual({ _tag: "Text", text: "plain" })
  })

  it("/help lists every built-in and the custom commands with their hints", () => {
    const lines = Slash.helpLines([parsed("/x/fix.md", "---\ndescription: Fix it\nargument-hint: ISSUE\n---\nFix $1")])
    for (const builtin of Slash.builtins) expect(lines.some((line) => line.startsWith(builtin.usage))).toBe(true)
    expect(lines.at(-1)).toMatch(/^\/fix ISSUE\s+Fix it {2}\[\/x\/fix\.md\]$/)
  })

  it("/cost says the tokens, and the cost only when known", () => {
    expect(Slash.costLine({ inputTokens: 10, outputTokens: 2 }, 1)).toBe("1 turn: 10 input tokens, 2 output tokens, cost unknown (no price for the model)")
    expect(Slash.costLine({ inputTokens: 10, outputTokens: 2, costUsd: 0.5 }, 2)).toBe("2 turns: 10 input tokens, 2 output tokens, $0.5000")
  })
})

describe("narrowing", () => {
  const registered = [
    { name: "read_file" },
    { name: "exec" },
    { name: "grep" },
    { name: "q", mcp: { server: "srv", tool: "q" } },
    { name: "other__r", mcp: { server: "other", tool: "r" } }
  ]

  it("tools keeps only registered tools, never adds one; an MCP tool by any of its names; none named: all", () => {
    const command = parsed("/x/c.md", "---\nmodel: other\ntools: [Read, write_file, srv__q, mcp__other__r]\n---\nbody")
    expect(CustomCommands.turnTools(command, registered)).toEqual(["read_file", "q", "other__r"])
    expect(CustomCommands.turnTools(command, [{ name: "exec" }])).toEqual([])
    expect(CustomCommands.turnTools(parsed("/x/d.md", "body"), registered)).toBeUndefined()
  })
})
