/**
 * Memory as Claude Code keeps it, through the CLI against a scripted server on 127.0.0.1: the
 * user's `~/.claude/CLAUDE.md` (HOME is a temporary directory), a repository's `CLAUDE.md` and
 * `CLAUDE.local.md`, and `@path` imports (relative, `~/`, five hops deep), each read with the
 * confinement of the file importing it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, runCli, tempDir } from "../support/cliProcess.ts"
import { start } from "../support/openaiServer.ts"

const write = (file: string, text: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text)
}

describe("memory files", () => {
  it("reads ~/.claude/CLAUDE.md, CLAUDE.local.md and @imports five hops deep; an import leaving the repository is skipped with a warning", async (context) => {
    const server = await start([{ text: "ok" }])
    context.onTestFinished(() => server.close())
    const home = fs.realpathSync(tempDir())
    const repo = path.join(home, "repo")
    fs.mkdirSync(path.join(repo, ".git"), { recursive: true })
    write(path.join(home, ".claude", "CLAUDE.md"), "USER-MEMORY. My style: @~/notes/style.md\n")
    write(path.join(home, "notes", "style.md"), "USER-STYLE: short answers.\n")
    write(path.join(home, "outside.md"), "OUTSIDE-TEXT\n")
    write(path.join(repo, "CLAUDE.md"), [
      "PROJECT-MEMORY. Conventions: @docs/conventions.md.",
      "Not an import: `@docs/ignored.md`, nor mail to someone@example.com.",
      "```",
      "@docs/ignored.md",
      "```",
      "Outside: @../outside.md and @~/notes/style.md"
    ].join("\n"))
    write(path.join(repo, "docs", "ignored.md"), "IGNORED-TEXT\n")
    write(path.join(repo, "docs", "conventions.md"), "HOP-1 @h2.md\n")
    for (let hop = 2; hop <= 6; hop++) write(path.join(repo, "docs", `h${hop}.md`), `HOP-${hop} @h${hop + 1}.md\n`)
    write(path.join(repo, "CLAUDE.local.md"), "LOCAL-MEMORY: my port is 3000.\n")
    const env = isolatedEnv(home, { HOME: home, OPENAI_API_KEY: "sk-test-key-0123456789abcdef" })
    const result = await runCli(["run", "--base-url", server.url, "--model", "m", "--workspace", repo, "--ephemeral", "hi"], { env })
    expect(result.code, result.stderr).toBe(0)
    const system: string = server.requests[0]!.body.messages[0].content
    const order = ["USER-MEMORY", "USER-STYLE", "PROJECT-MEMORY", "HOP-1", "HOP-2", "HOP-3", "HOP-4", "HOP-5", "LOCAL-MEMORY"].map((mark) => system.indexOf(mark))
    expect(order.every((at) => at >= 0)).toBe(true)
    expect([...order].sort((a, b) => a - b)).toEqual(order)
    expect(system).toContain("## docs/conventions.md (imported by CLAUDE.md)")
    expect(system).toContain("## ~/notes/style.md (imported by (user) ~/.claude/CLAUDE.md)")
    // six hops is past the bound; code spans, code blocks and addresses are text
    expect(system).not.toContain("HOP-6")
    expect(system).not.toContain("IGNORED-TEXT")
    // a repository's file cannot import outside the repository, whether by .. or by ~/
    expect(system).not.toContain("OUTSIDE-TEXT")
    expect(system.match(/USER-STYLE/g)).toHaveLength(1)
    expect(result.stderr).toContain(path.join(home, "outside.md"))
    expect(result.stderr.split("\n").filter((line) => line.includes("outside.md"))).toHaveLength(1)
  })
})
