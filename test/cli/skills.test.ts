/**
 * Agent Skills end to end through the CLI process against the scripted server on 127.0.0.1: the
 * `skill` tool's description lists the user's (`~/.claude/skills`) and a trusted workspace's
 * skills by name and description; a call loads one's instructions, then a bundled file from
 * outside the workspace; a loaded skill's `allowed-tools` approve what it needs; a malformed skill
 * is skipped with one line saying why. Unit checks of `SKILL.md` parsing first.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as Skills from "../../src/cli/config/skills.ts"
import { isolatedEnv, runCli, tempDir } from "../support/cliProcess.ts"
import { start } from "../support/openaiServer.ts"

const SLOW = 120_000

describe("SKILL.md", () => {
  it("needs a name (lowercase, digits, -) and a description; allowed-tools are kept as rules", () => {
    const skill = Skills.parse("/s/pdf", "---\nname: pdf\ndescription: Fill PDF forms. Use when: a form is given\nallowed-tools: Bash(python3:*), Read\n---\nRun scripts/fill.py.\n", ["scripts/fill.py"])
    expect(Result.isSuccess(skill) && skill.success).toEqual({
      name: "pdf",
      description: "Fill PDF forms. Use when: a form is given",
      body: "Run scripts/fill.py.",
      dir: "/s/pdf",
      files: ["scripts/fill.py"],
      path: "/s/pdf/SKILL.md",
      allowedTools: ["Bash(python3:*)", "Read"]
    })
    const failure = (text: string) => {
      const result = Skills.parse("/s/x", text)
      return Result.isFailure(result) ? result.failure : "parsed"
    }
    expect(failure("just text")).toMatch(/must start with a `---` YAML front matter block/)
    expect(failure("---\nname: x\n---\nbody")).toMatch(/^description: /)
    expect(failure("---\nname: Bad Name\ndescription: d\n---\nbody")).toMatch(/name "Bad Name": lowercase/)
    expect(failure("---\nname: x\ndescription: d\n---\n")).toMatch(/instructions\) is empty/)
  })
})

describe("skills in a run", () => {
  it("offered by name and description, loaded on demand with their bundled files; allowed-tools apply once loaded; a bad one is skipped saying why", async (context) => {
    const server = await start([
      { toolCalls: [{ name: "skill", arguments: { skill: "greeting" } }] },
      { toolCalls: [{ name: "skill", arguments: { skill: "greeting", file: "templates/hello.txt" } }] },
      { toolCalls: [{ name: "exec", arguments: { command: "echo greeted" } }] },
      { text: "Done." }
    ])
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const write = (file: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(home, file)), { recursive: true })
      fs.writeFileSync(path.join(home, file), text)
    }
    write(".claude/skills/greeting/SKILL.md", "---\nname: greeting\ndescription: Greets people. Use for any greeting\nallowed-tools: Bash(echo:*)\n---\nUse templates/hello.txt, then run echo.\n")
    write(".claude/skills/greeting/templates/hello.txt", "Hello, friend!\n")
    write("ws/.claude/skills/review/SKILL.md", "---\nname: review\ndescription: Reviews code\n---\nReview carefully.\n")
    write("ws/.claude/skills/broken/SKILL.md", "---\ndescription: no name\n---\nx\n")
    const workspace = path.join(home, "ws")
    const env = isolatedEnv(home, { HOME: home })
    expect((await runCli(["trust", workspace], { env })).code).toBe(0)
    const result = await runCli(["run", "--base-url", server.url, "--model", "fake-model", "--workspace", workspace, "--tools", "read_file,exec", "greet me"], { env })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain(`skipped skill ${path.join(workspace, ".claude", "skills", "broken", "SKILL.md")}: name: `)

    const tool = server.requests[0]!.body.tools.find((t: any) => t.function.name === "skill").function
    expect(tool.description).toContain("- greeting: Greets people. Use for any greeting")
    expect(tool.description).toContain("- review: Reviews code")
    expect(tool.description).not.toContain("Use templates/hello.txt")
    const results = server.requests.slice(1).map((r) => r.body.messages.at(-1))
    expect(results[0].content).toContain("Use templates/hello.txt, then run echo.")
    expect(results[0].content).toContain("- templates/hello.txt")
    expect(results[1].content).toBe("Hello, friend!\n")
    // approved by the loaded skill's Bash(echo:*), with no terminal to ask
    expect(results[2].content).toContain("greeted")
  }, SLOW)
})
