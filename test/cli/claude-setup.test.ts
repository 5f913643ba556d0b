/**
 * A whole Claude Code setup, as a daily user has one, run by the `agent-loop` bin against a
 * scripted model on 127.0.0.1: user-level settings (a deny rule, hooks on every event that read
 * `transcript_path`, memory), a trusted repository's settings (an allow rule, a hook), CLAUDE.md
 * with an `@` import, a skill with a bundled script, a plugin with a skill, a namespaced command
 * with `` !`cmd` `` and `@file` lines, and an agent file with `model: inherit` called as `Task`.
 * Each part has its own tests elsewhere; this one checks they work together, in one run.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, runCli, tempDir } from "../support/cliProcess.ts"
import { start } from "../support/openaiServer.ts"

// several CLI starts one after another: slow on a loaded machine
const SLOW = 300_000

const writeAll = (dir: string, files: Record<string, string>) => {
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
    fs.writeFileSync(path.join(dir, file), text)
  }
}

/** A hook that logs its event, its tool and whether its transcript is a readable JSON Lines file. */
const LOG_HOOK = `
import { appendFileSync, existsSync, readFileSync } from "node:fs"
const input = JSON.parse(readFileSync(0, "utf8"))
let transcript = "missing"
if (input.transcript_path && existsSync(input.transcript_path)) {
  const lines = readFileSync(input.transcript_path, "utf8").split("\\n").filter((line) => line !== "")
  transcript = lines.every((line) => { try { JSON.parse(line); return true } catch { return false } }) ? "jsonl" : "bad"
}
appendFileSync(process.env.HOOK_LOG, JSON.stringify({ event: input.hook_event_name, tool: input.tool_name ?? null, transcript }) + "\\n")
`

const EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "SubagentStart", "SubagentStop", "Stop", "SessionEnd"]

describe("a whole Claude Code setup", () => {
  it("user and project settings, memory with an import, a skill with its script, a plugin, a namespaced command, an agent as Task, hooks on every event", async (context) => {
    const server = await start([
      { toolCalls: [{ name: "skill", arguments: { skill: "release" } }] },
      { toolCalls: [{ name: "exec", arguments: { command: "sh .claude/skills/release/scripts/notes.sh" } }] },
      { toolCalls: [{ name: "subagent", arguments: { subagent_type: "reviewer", prompt: "Review the change", description: "review" } }] },
      { text: "Looks fine." },
      { toolCalls: [{ name: "exec", arguments: { command: "git push origin main" } }] },
      { text: "Done." }
    ])
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const ws = path.join(home, "ws")
    const hookLog = path.join(home, "hooks.log")
    const hook = { type: "command", command: `node "${path.join(home, ".claude", "log-hook.mjs")}"` }
    writeAll(home, {
      ".claude/log-hook.mjs": LOG_HOOK,
      ".claude/settings.json": JSON.stringify({
        permissions: { deny: ["Bash(git push:*)"] },
        hooks: Object.fromEntries(EVENTS.map((event) => [event, [{ hooks: [hook] }]]))
      }),
      ".claude/CLAUDE.md": "User memory: be brief.\n",
      "plugin/.claude-plugin/plugin.json": JSON.stringify({ name: "tones", version: "1.0.0" }),
      "plugin/skills/tone/SKILL.md": "---\nname: tone\ndescription: Picks a friendly tone\n---\nBe friendly.\n"
    })
    writeAll(ws, {
      "CLAUDE.md": "Project rules.\n@docs/conventions.md\n",
      "docs/conventions.md": "Use tabs for indentation.\n",
      "notes.txt": "Release notes draft.\n",
      ".claude/settings.json": JSON.stringify({
        permissions: { allow: ["Bash(git status:*)"] },
        hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "echo project-pre >> \"$CLAUDE_PROJECT_DIR/project-hook.log\"" }] }] }
      }),
      ".claude/skills/release/SKILL.md": "---\nname: release\ndescription: Prepares a release\n---\nRun scripts/notes.sh to draft the notes.\n",
      ".claude/skills/release/scripts/notes.sh": "echo release-notes-ok\n",
      ".claude/commands/git/commit.md":
        "---\ndescription: Commit the work\nargument-hint: [message]\nallowed-tools: Bash(git status:*)\n---\nStatus: !`git status --short`\nNotes: @notes.txt\nCommit with message: $ARGUMENTS\n",
      ".claude/agents/reviewer.md": "---\nname: reviewer\ndescription: Reviews changes\nmodel: inherit\ntools: Read\n---\nReview the change.\n"
    })
    execFileSync("git", ["init", "-q"], { cwd: ws })
    fs.writeFileSync(path.join(ws, "draft.txt"), "draft\n")
    const env = isolatedEnv(home, { HOME: home, HOOK_LOG: hookLog })
    expect((await runCli(["trust", ws], { env })).code).toBe(0)
    const added = await runCli(["plugin", "add", path.join(home, "plugin")], { env })
    expect(added.code, added.stderr).toBe(0)

    const result = await runCli(
      ["run", "--base-url", server.url, "--model", "fake-model", "--workspace", ws, "--yes", "/git:commit", "fix the bug"],
      { env, cwd: ws }
    )
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toContain("Done.")

    const [first, afterSkill, afterScript, subTurn, , afterPush] = server.requests.map((request) => request.body)
    // memory: the user's, the project's and its import, in the system prompt
    const system = first.messages.find((message: any) => message.role === "system").content
    expect(system).toContain("User memory: be brief.")
    expect(system).toContain("Project rules.")
    expect(system).toContain("Use tabs for indentation.")
    // the namespaced command: its !`cmd` ran (pre-approved by its allowed-tools), its @file inlined, its argument filled
    const prompt = first.messages.at(-1).content
    expect(prompt).toContain("?? draft.txt")
    expect(prompt).toContain('<file path="notes.txt">\nRelease notes draft.\n</file>')
    expect(prompt).toContain("Commit with message: fix the bug")
    // skills of the workspace and of the plugin, by name and description; one loaded on demand
    const skillTool = first.tools.find((tool: any) => tool.function.name === "skill").function
    expect(skillTool.description).toContain("- release: Prepares a release")
    expect(skillTool.description).toContain("- tone: Picks a friendly tone")
    expect(afterSkill.messages.at(-1).content).toContain("Run scripts/notes.sh to draft the notes.")
    // its bundled script ran
    expect(afterScript.messages.at(-1).content).toContain("release-notes-ok")
    // the agent, called with Claude Code's Task shape, ran on the caller's model (inherit)
    expect(subTurn.model).toBe("fake-model")
    expect(subTurn.messages.at(-1)).toEqual({ role: "user", content: "Review the change" })
    // the user's deny rule holds under --yes, naming where it came from
    const denied = afterPush.messages.at(-1).content
    expect(denied).toMatch(/denied/i)
    expect(denied).toContain(`the permission rule "Bash(git push:*)" of ~/.claude/settings.json`)

    // the project's hook ran for each command; the user's hooks saw every event with a readable transcript
    expect(fs.readFileSync(path.join(ws, "project-hook.log"), "utf8").split("\n").filter((line) => line !== "")).toHaveLength(2)
    const logged = fs.readFileSync(hookLog, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))
    for (const event of EVENTS) expect(logged.map((entry) => entry.event)).toContain(event)
    expect(logged.filter((entry) => entry.event === "PreToolUse").map((entry) => entry.tool)).toEqual(["Skill", "Bash", "Task", "Bash"])
    expect(logged.filter((entry) => entry.event !== "SessionStart" && entry.transcript !== "jsonl")).toEqual([])
  }, SLOW)
})
