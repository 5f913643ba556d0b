/**
 * Every settings level, through the CLI against a scripted OpenAI-compatible server on 127.0.0.1:
 * the user's `~/.claude/settings.json` (HOME is a temporary directory), a repository's
 * `.claude/settings.json` and `.claude/settings.local.json`, and the loop's own files beside them.
 * Deny rules apply from every level, an untrusted repository's too; allow rules and hooks from the
 * user's files always and from a repository's only once it is trusted; `hooks list` and
 * `permissions list` name the file of each entry, and so does a denial.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, runCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import { type Script, start } from "../support/openaiServer.ts"

const write = (file: string, text: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text)
}

const toolResults = (body: any): Record<string, string> =>
  Object.fromEntries(body.messages.filter((m: any) => m.role === "tool").map((m: any) => [m.tool_call_id, m.content]))

/** A home (HOME and XDG_CONFIG_HOME inside it) and a repository in it, trusted or not. */
const setup = async (context: TestContext, script: Script, trusted: boolean) => {
  const server = await start(script)
  context.onTestFinished(() => server.close())
  const home = fs.realpathSync(tempDir())
  const workspace = path.join(home, "repo")
  fs.mkdirSync(path.join(workspace, ".git"), { recursive: true })
  if (trusted) write(path.join(home, "config", "agent-loop", "trusted-workspaces.json"), JSON.stringify({ trusted: [workspace] }))
  const env = isolatedEnv(home, { HOME: home, OPENAI_API_KEY: "sk-test-key-0123456789abcdef" })
  const flags = ["--base-url", server.url, "--model", "m", "--workspace", workspace, "--ephemeral", "--no-context-files"]
  return { server, home, workspace, env, flags }
}

const calls = (request: any) =>
  request.body.messages.some((m: any) => m.role === "tool")
    ? { text: "ok" }
    : {
      toolCalls: [
        { id: "push", name: "exec", arguments: { command: "git push origin main" } },
        { id: "rm", name: "exec", arguments: { command: "rm -f gone" } },
        { id: "echo", name: "exec", arguments: { command: "echo hello" } }
      ]
    }

describe.concurrent("settings levels", () => {
  it("a user-level deny rule holds under --yes, and names its file", async (context) => {
    const { env, flags, home, server } = await setup(context, calls, false)
    write(path.join(home, ".claude", "settings.json"), JSON.stringify({ permissions: { deny: ["Bash(git push:*)"] } }))
    const result = await runCli(["run", ...flags, "--yes", "go"], { env })
    expect(result.code).toBe(0)
    const results = toolResults(server.requests[1]!.body)
    expect(results["push"]).toContain("Denied by the permission rule \"Bash(git push:*)\" of ~/.claude/settings.json.")
    expect(results["echo"]).toContain("hello")
    expect(result.stderr).toContain("agent-loop: denied exec {\"command\":\"git push origin main\"}: permission rule Bash(git push:*) (~/.claude/settings.json)")
  })

  it("an untrusted repository's deny rules apply; its allow rules and hooks do not", async (context) => {
    const { env, flags, server, workspace } = await setup(context, calls, false)
    write(path.join(workspace, "gone"), "x")
    write(path.join(workspace, ".claude", "settings.json"), JSON.stringify({
      permissions: { allow: ["Bash(echo:*)"], deny: ["Bash(rm:*)"] },
      hooks: { UserPromptSubmit: [{ hooks: [{ type: "command", command: "echo HOOK-RAN" }] }] }
    }))
    write(path.join(workspace, ".claude", "settings.local.json"), JSON.stringify({ permissions: { deny: ["Bash(git push:*)"] } }))
    const result = await runCli(["run", ...flags, "go"], { env })
    expect(result.code).toBe(0)
    const results = toolResults(server.requests[1]!.body)
    expect(results["rm"]).toContain("Denied by the permission rule \"Bash(rm:*)\" of ~/repo/.claude/settings.json.")
    expect(results["push"]).toContain("of ~/repo/.claude/settings.local.json.")
    // the allow rule is not taken: echo needs approval, and there is no terminal
    expect(results["echo"]).toContain("Not approved")
    expect(JSON.stringify(server.requests[0]!.body.messages)).not.toContain("HOOK-RAN")
    expect(fs.existsSync(path.join(workspace, "gone"))).toBe(true)
    expect(result.stderr).toContain("is not trusted")
  })

  it("the user's hooks and allow rules apply in any workspace; lists name each entry's file", async (context) => {
    const { env, flags, home, server, workspace } = await setup(context, calls, true)
    const user = path.join(home, ".claude", "settings.json")
    write(user, JSON.stringify({
      permissions: { allow: ["Bash(echo:*)"], deny: ["Bash(git push:*)"] },
      hooks: { UserPromptSubmit: [{ hooks: [{ type: "command", command: "echo USER-HOOK" }] }] }
    }))
    write(path.join(workspace, ".claude", "settings.json"), JSON.stringify({ permissions: { deny: ["Bash(rm:*)"] } }))
    write(path.join(home, "config", "agent-loop", "settings.json"), JSON.stringify({ permissions: { ask: ["Read(secrets/**)"] } }))
    const result = await runCli(["run", ...flags, "go"], { env })
    expect(result.code).toBe(0)
    expect(JSON.stringify(server.requests[0]!.body.messages)).toContain("USER-HOOK")
    const results = toolResults(server.requests[1]!.body)
    expect(results["echo"]).toContain("hello")
    expect(results["push"]).toContain("of ~/.claude/settings.json.")

    const hooks = await runCli(["hooks", "list", "--workspace", workspace], { env })
    expect(hooks.code).toBe(0)
    expect(hooks.stdout).toContain(`UserPromptSubmit[0]  echo USER-HOOK  timeout 60s  settings: ${user}`)

    const rules = await runCli(["permissions", "list", "--workspace", workspace], { env })
    expect(rules.code).toBe(0)
    expect(rules.stdout.split("\n")).toEqual(expect.arrayContaining([
      "deny   Bash(git push:*)  ~/.claude/settings.json",
      "deny   Bash(rm:*)  ~/repo/.claude/settings.json",
      "ask    Read(secrets/**)  ~/config/agent-loop/settings.json",
      "allow  Bash(echo:*)  ~/.claude/settings.json"
    ]))
    expect(rules.stderr).toContain(`"always allow" saves to ${path.join(workspace, ".claude", "settings.local.json")}`)
  })
})
