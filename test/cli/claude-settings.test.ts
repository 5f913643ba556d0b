/**
 * A repository configured for Claude Code (`.claude/settings.json` with permission rules and
 * hooks) run under `agent-loop`, end to end: the real launcher, the real hook commands (Node
 * scripts run by `sh -c`), and a scripted OpenAI-compatible server on 127.0.0.1 making the tool
 * calls. The interactive approval prompt (allow for the session, save, deny with a reason) runs on
 * a real terminal (tmux), skipped saying so when tmux is not installed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, launcher, root, runCli, spawnCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import { type Script, start } from "../support/openaiServer.ts"
import { hasTmux, startPane } from "../support/tmux.ts"
import { waitUntil } from "../support/waitUntil.ts"

const write = (file: string, text: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text)
}

/** PreToolUse on Bash: logs what it was given (input and environment), blocks `rm -rf` with exit 2. */
const NO_RM = `
import { appendFileSync, readFileSync } from "node:fs"
const input = JSON.parse(readFileSync(0, "utf8"))
appendFileSync(process.env.CLAUDE_PROJECT_DIR + "/.claude/pre.log", JSON.stringify({
  input,
  env: { CLAUDE_PROJECT_DIR: process.env.CLAUDE_PROJECT_DIR, AGENT_LOOP_PROJECT_DIR: process.env.AGENT_LOOP_PROJECT_DIR, key: process.env.OPENAI_API_KEY ?? null }
}) + "\\n")
if (/rm\\s+-rf/.test(input.tool_input.command)) {
  process.stderr.write("rm -rf is blocked by the project's policy")
  process.exit(2)
}
`

/** PostToolUse on Write|Edit: formats the file (tabs to two spaces, no trailing blanks) and says so. */
const FORMAT = `
import { readFileSync, writeFileSync } from "node:fs"
const input = JSON.parse(readFileSync(0, "utf8"))
const file = input.tool_input.file_path
const text = readFileSync(file, "utf8").split("\\n").map((line) => line.replace(/\\t/g, "  ").replace(/\\s+$/, "")).join("\\n")
writeFileSync(file, text)
console.log(JSON.stringify({ hookSpecificOutput: { hookEventName: "PostToolUse", additionalContext: "formatted " + input.tool_name + " " + file } }))
`

/** Stop: blocks the first stop with a reason; lets the second one (stop_hook_active) through. */
const STOP_ONCE = `
import { readFileSync } from "node:fs"
const input = JSON.parse(readFileSync(0, "utf8"))
if (!input.stop_hook_active) {
  process.stderr.write("Run the tests before you stop.")
  process.exit(2)
}
`

const claudeSettings = {
  model: "claude-sonnet-4-5",
  env: { SOME_SETTING: "1" },
  permissions: {
    allow: ["Bash(echo:*)", "Bash(git status:*)", "Write(src/**)"],
    deny: ["Bash(curl:*)", "Read(.env)"],
    defaultMode: "default"
  },
  hooks: {
    PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "node \"$CLAUDE_PROJECT_DIR/.claude/hooks/no-rm.mjs\"", timeout: 30 }] }],
    PostToolUse: [{ matcher: "Write|Edit", hooks: [{ type: "command", command: "node \"$CLAUDE_PROJECT_DIR/.claude/hooks/format.mjs\"" }] }],
    UserPromptSubmit: [{ hooks: [{ type: "command", command: "echo 'The release branch is release-7.'" }] }],
    Stop: [{ hooks: [{ type: "command", command: "node \"$CLAUDE_PROJECT_DIR/.claude/hooks/stop-once.mjs\"" }] }]
  }
}

/** A home with a trusted workspace configured for Claude Code. */
const setup = async (context: TestContext, script: Script, trusted = true) => {
  const server = await start(script)
  context.onTestFinished(() => server.close())
  const home = tempDir()
  const workspace = fs.realpathSync(fs.mkdtempSync(path.join(home, "repo-")))
  write(path.join(workspace, ".claude", "settings.json"), JSON.stringify(claudeSettings, null, 2))
  write(path.join(workspace, ".claude", "hooks", "no-rm.mjs"), NO_RM)
  write(path.join(workspace, ".claude", "hooks", "format.mjs"), FORMAT)
  write(path.join(workspace, ".claude", "hooks", "stop-once.mjs"), STOP_ONCE)
  write(path.join(workspace, ".env"), "TOKEN=very-secret\n")
  fs.mkdirSync(path.join(workspace, "build"))
  if (trusted) write(path.join(home, "config", "agent-loop", "trusted-workspaces.json"), JSON.stringify({ trusted: [workspace] }))
  const env = isolatedEnv(home, { OPENAI_API_KEY: "sk-test-key-that-hooks-never-see-0123456789" })
  const flags = ["--base-url", server.url, "--model", "m", "--workspace", workspace, "--ephemeral", "--no-context-files"]
  return { server, home, workspace, env, flags }
}

const toolResults = (body: any): Record<string, string> =>
  Object.fromEntries(body.messages.filter((m: any) => m.role === "tool").map((m: any) => [m.tool_call_id, m.content]))

describe.concurrent("a repository configured for Claude Code", () => {
  it("applies its permission rules and hooks: blocked rm -rf, denied curl, formatted writes, prompt context, a stop blocked once", async (context) => {
    const { flags, env, server, workspace } = await setup(context, [
      {
        toolCalls: [
          { id: "echo", name: "exec", arguments: { command: "echo hello" } },
          { id: "rm", name: "exec", arguments: { command: "rm -rf build" } },
          { id: "curl", name: "exec", arguments: { command: "curl http://127.0.0.1:9/x" } },
          { id: "compound", name: "exec", arguments: { command: "echo a && touch pwned" } },
          { id: "write", name: "write_file", arguments: { path: "src/a.ts", content: "const x = 1;   \n\tfoo()\t\n" } },
          { id: "env", name: "read_file", arguments: { path: ".env" } }
        ]
      },
      { text: "Done." },
      { text: "Tests pass. Done." }
    ])
    const result = await runCli(["run", ...flags, "tidy up"], { env })
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("Tests pass. Done.")
    // the Stop hook's continuation is said as such
    expect(result.stderr).toContain("↻ Stop hook: Run the tests before you stop.")

    // UserPromptSubmit: its output is context before the prompt
    const first = server.requests[0]!.body.messages
    const added = first.findIndex((m: any) => m.role === "user" && String(m.content).includes("The release branch is release-7."))
    expect(added).toBeGreaterThan(0)
    expect(first[added + 1]).toMatchObject({ role: "user", content: "tidy up" })

    const results = toolResults(server.requests[1]!.body)
    // an allow rule runs `echo` without a terminal and without --yes
    expect(results["echo"]).toContain("hello")
    // PreToolUse exit 2 blocks with stderr as the reason
    expect(results["rm"]).toContain("rm -rf is blocked by the project's policy")
    expect(fs.existsSync(path.join(workspace, "build"))).toBe(true)
    // a deny rule names itself
    expect(results["curl"]).toContain("Denied by the permission rule \"Bash(curl:*)\"")
    // a compound command with a part no rule allows asks, and there is no terminal
    expect(results["compound"]).toContain("Not approved")
    expect(fs.existsSync(path.join(workspace, "pwned"))).toBe(false)
    // PostToolUse formatted the file and told the model
    expect(fs.readFileSync(path.join(workspace, "src", "a.ts"), "utf8")).toBe("const x = 1;\n  foo()\n")
    expect(results["write"]).toContain(`formatted Write ${path.join(workspace, "src", "a.ts")}`)
    expect(results["env"]).toContain("Denied by the permission rule \"Read(.env)\"")
    expect(JSON.stringify(server.requests.map((r) => r.body))).not.toContain("very-secret")

    // Stop blocked the first stop; its reason reached the model; the second stop went through
    expect(server.requests).toHaveLength(3)
    expect(JSON.stringify(server.requests[2]!.body.messages.at(-1))).toContain("Run the tests before you stop.")

    // what the PreToolUse command received
    const log = fs.readFileSync(path.join(workspace, ".claude", "pre.log"), "utf8").trim().split("\n").map((line) => JSON.parse(line))
    expect(log.map((entry) => entry.input.tool_input.command)).toEqual(["echo hello", "rm -rf build", "curl http://127.0.0.1:9/x", "echo a && touch pwned"])
    expect(log[0].input).toMatchObject({ hook_event_name: "PreToolUse", tool_name: "Bash", tool_use_id: "echo", cwd: workspace })
    expect(typeof log[0].input.session_id).toBe("string")
    expect(log[0].env).toEqual({ CLAUDE_PROJECT_DIR: workspace, AGENT_LOOP_PROJECT_DIR: workspace, key: null })
  })

  it("deny rules hold with --yes, --deny adds one, and --no-claude-settings leaves the file out", async (context) => {
    const { flags, env, server, workspace } = await setup(context, (request) =>
      request.body.messages.some((m: any) => m.role === "tool")
        ? { text: "ok" }
        : {
          toolCalls: [
            { id: "curl", name: "exec", arguments: { command: "curl http://127.0.0.1:9/x" } },
            { id: "touch", name: "exec", arguments: { command: "echo a; touch pwned" } },
            { id: "ls", name: "exec", arguments: { command: "ls build && echo listed" } }
          ]
        })
    const yes = await runCli(["run", ...flags, "--yes", "--verbose", "--deny", "exec(touch:*)", "go"], { env })
    const before = server.requests.length
    expect(yes.code).toBe(0)
    const results = toolResults(server.requests[1]!.body)
    expect(results["curl"]).toContain("Denied by the permission rule \"Bash(curl:*)\"")
    expect(results["touch"]).toContain("Denied by the permission rule \"exec(touch:*)\"")
    expect(results["ls"]).toContain("listed")
    expect(fs.existsSync(path.join(workspace, "pwned"))).toBe(false)
    expect(yes.stderr).toContain("agent-loop: denied exec {\"command\":\"curl http://127.0.0.1:9/x\"}: permission rule Bash(curl:*)")
    expect(yes.stderr).not.toContain("is not honoured")

    const without = await runCli(["run", ...flags, "--no-claude-settings", "--yes", "go"], { env })
    expect(without.code).toBe(0)
    const later = server.requests.slice(before)
    expect(JSON.stringify(later[0]!.body.messages)).not.toContain("release-7")
    expect(toolResults(later[1]!.body)["curl"]).not.toContain("Denied by the permission rule")
    expect(fs.existsSync(path.join(workspace, "pwned"))).toBe(true)
  })

  it("hooks list shows the hooks of the settings; in agent-loop's own settings a bad rule or hook fails with one line", async (context) => {
    const { flags, env, home, workspace } = await setup(context, [{ text: "ok" }])
    write(path.join(workspace, ".claude", "settings.local.json"), JSON.stringify({
      hooks: { SessionEnd: [{ hooks: [{ type: "command", command: "echo bye" }, { type: "prompt", prompt: "judge" }] }], PreToolUses: [] }
    }))
    const listed = await runCli(["hooks", "list", "--workspace", workspace], { env })
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain(`PreToolUse[0] (matcher Bash)  node "$CLAUDE_PROJECT_DIR/.claude/hooks/no-rm.mjs"  timeout 30s  settings: ${path.join(workspace, ".claude", "settings.json")}`)
    expect(listed.stdout).toContain("Stop[0]  node \"$CLAUDE_PROJECT_DIR/.claude/hooks/stop-once.mjs\"  timeout 60s")
    expect(listed.stdout).toContain(`SessionEnd[0]  echo bye  timeout 60s  settings: ${path.join(workspace, ".claude", "settings.local.json")}`)
    expect(listed.stderr).toContain(
      "hooks.SessionEnd[0].hooks[1]: only {\"type\": \"command\", \"command\": ...} and {\"type\": \"http\", \"url\": \"http(s)://...\"} hooks run; skipped"
    )
    expect(listed.stderr).toContain("hooks.PreToolUses: agent-loop has no such event; skipped")
    const user = path.join(home, "config", "agent-loop", "settings.json")
    write(user, JSON.stringify({ permissions: { deny: ["exec(rm:*"] } }))
    const badRule = await runCli(["run", ...flags, "go"], { env })
    expect([badRule.code, badRule.stderr.trim()]).toEqual([1, `agent-loop: ${user}: permissions.deny: "exec(rm:*": expected Tool(specifier): the ( is not closed by a final )`])
    write(user, JSON.stringify({ hooks: { Stop: [{ hooks: [{ command: "true" }] }] } }))
    const badHook = await runCli(["run", ...flags, "go"], { env })
    expect(badHook.code).toBe(1)
    expect(badHook.stderr).toMatch(/hooks\.Stop\.0\.hooks\.0\.type: Missing key/)
    const badFlag = await runCli(["run", ...flags, "--allow", "exec(npm test", "go"], { env: { ...env, XDG_CONFIG_HOME: tempDir() } })
    expect([badFlag.code, badFlag.stderr.trim()]).toEqual([1, "agent-loop: --allow: permissions.allow: \"exec(npm test\": expected Tool(specifier): the ( is not closed by a final )"])
  })

  it("continue:false stops the turn quietly with its stopReason, exit 0; transcript_path is the session's transcript in Claude Code's shape", async (context) => {
    const { env, flags, workspace } = await setup(context, [
      { text: "Looking.", toolCalls: [{ id: "ls", name: "exec", arguments: { command: "ls -la" } }] },
      { text: "never asked for" }
    ])
    write(path.join(workspace, ".claude", "hooks", "freeze.mjs"), `
import { copyFileSync, readFileSync } from "node:fs"
const input = JSON.parse(readFileSync(0, "utf8"))
copyFileSync(input.transcript_path, process.env.CLAUDE_PROJECT_DIR + "/seen.jsonl")
console.log(JSON.stringify({ continue: false, stopReason: "Stopped: the build is frozen." }))
`)
    write(path.join(workspace, ".claude", "settings.local.json"), JSON.stringify({
      hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "node \"$CLAUDE_PROJECT_DIR/.claude/hooks/freeze.mjs\"" }] }] }
    }))
    const result = await runCli(["run", ...flags.filter((flag) => flag !== "--ephemeral"), "list the files"], { env })
    expect(result.stderr).toContain("Stopped: the build is frozen.")
    expect(result.code).toBe(0)
    expect(result.stdout).not.toContain("never asked for")
    const lines = fs.readFileSync(path.join(workspace, "seen.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line))
    expect(lines).toMatchObject([
      { type: "user", cwd: workspace, message: { role: "user", content: expect.stringContaining("list the files") } },
      { type: "assistant", message: { content: [{ type: "text", text: "Looking." }, { type: "tool_use", id: "ls", name: "Bash", input: { command: "ls -la" } }] } }
    ])
  })

  it("SessionStart says startup or resume, SessionEnd runs at the end of run, on /exit, on SIGTERM and on SIGINT, with Claude Code's reasons", async (context) => {
    let hang: Promise<void> | undefined
    const { env, flags, server, workspace } = await setup(context, async () => {
      if (hang !== undefined) await hang
      return { text: "ok" }
    })
    const log = "cat >> \"$CLAUDE_PROJECT_DIR/session.log\"; echo >> \"$CLAUDE_PROJECT_DIR/session.log\""
    write(path.join(workspace, ".claude", "settings.local.json"), JSON.stringify({
      hooks: { SessionStart: [{ hooks: [{ type: "command", command: log }] }], SessionEnd: [{ hooks: [{ type: "command", command: log }] }] }
    }))
    const events = () =>
      fs.readFileSync(path.join(workspace, "session.log"), "utf8").trim().split("\n").map((line) => JSON.parse(line))
        .map((event) => `${event.hook_event_name} ${event.source ?? event.reason}`)
    const persisted = flags.filter((flag) => flag !== "--ephemeral")
    expect((await runCli(["run", ...persisted, "hi"], { env })).code).toBe(0)
    expect(events()).toEqual(["SessionStart startup", "SessionEnd other"])
    expect((await runCli(["run", ...persisted, "--continue", "again"], { env })).code).toBe(0)
    expect(events().slice(2)).toEqual(["SessionStart resume", "SessionEnd other"])
    const chat = spawnCli(["chat", ...persisted], { env, stdin: true })
    chat.child.stdin!.write("hello\n")
    // the session starts with its first turn
    await waitUntil("the chat's session starts", () => events().length === 5)
    chat.child.stdin!.end("/exit\n")
    expect((await chat.exited).code).toBe(0)
    expect(events().slice(4)).toEqual(["SessionStart startup", "SessionEnd prompt_input_exit"])
    // SIGTERM while the model is answering: the session still ends
    let release = () => {}
    hang = new Promise((resolve) => (release = resolve))
    const asked = server.requests.length
    const run = spawnCli(["run", ...persisted, "slow"], { env })
    await waitUntil("the model is asked", () => server.requests.length > asked)
    run.child.kill("SIGTERM")
    const ended = await run.exited
    release()
    expect(ended.code).toBe(143)
    expect(events().slice(6)).toEqual(["SessionStart startup", "SessionEnd other"])
    // SIGINT likewise (Ctrl-C: the turn is interrupted, then the run ends)
    hang = new Promise((resolve) => (release = resolve))
    const again = server.requests.length
    const interrupted = spawnCli(["run", ...persisted, "slow again"], { env })
    await waitUntil("the model is asked again", () => server.requests.length > again)
    interrupted.child.kill("SIGINT")
    // a first Ctrl-C lets the model's answer finish, then stops the turn
    release()
    const stopped = await interrupted.exited
    expect(stopped.code).toBe(130)
    expect(events().slice(8)).toEqual(["SessionStart startup", "SessionEnd other"])
  })

  it("an untrusted workspace's .claude/settings.json is skipped with a warning", async (context) => {
    const { flags, env, server } = await setup(context, [{ text: "ok" }], false)
    const result = await runCli(["run", ...flags, "go"], { env })
    expect(result.code).toBe(0)
    expect(result.stderr).toContain(".claude/settings.json was skipped")
    expect(JSON.stringify(server.requests[0]!.body.messages)).not.toContain("release-7")
  })
})

describe.skipIf(!hasTmux)(hasTmux ? "on a terminal (tmux)" : "on a terminal: SKIPPED because tmux is not installed", () => {
  it("allows a rule for the session, saves one to the workspace's settings, and passes a denial's reason to the model", async (context) => {
    const { env, home, server, workspace } = await setup(context, [
      { toolCalls: [{ id: "one", name: "exec", arguments: { command: "git status --short; echo first" } }] },
      { toolCalls: [{ id: "two", name: "exec", arguments: { command: "node --version" } }] },
      { toolCalls: [{ id: "three", name: "exec", arguments: { command: "node --version && echo again" } }] },
      { toolCalls: [{ id: "four", name: "exec", arguments: { command: "ls -la | grep build" } }] },
      { text: "Finished." }
    ])
    // no Stop hook here: only the prompt is under test
    const settings = JSON.parse(fs.readFileSync(path.join(workspace, ".claude", "settings.json"), "utf8"))
    delete settings.hooks
    write(path.join(workspace, ".claude", "settings.json"), JSON.stringify(settings))
    const pane = startPane(
      [process.execPath, launcher, "run", "--base-url", server.url, "--model", "m", "--workspace", workspace, "--ephemeral", "--no-context-files", "go"],
      env,
      root
    )
    context.onTestFinished(() => pane.kill())
    // `git status` and `echo` are allowed, so the first call runs unasked; the saved rule covers the third
    await pane.waitFor(/\? exec wants to run:\n {4}node --version\n[\s\S]*a: allow exec\(node:\*\) for this session · s: allow and save to[\s\S]*\? allow exec\? \[y\/a\/s\/N\] $/m)
    pane.line("s")
    await pane.waitFor(/\? exec wants to run[^\n]*:\n {4}ls -la \| grep build\n {2}shell operators: \|/)
    pane.line("n not in this repository")
    await pane.waitFor(/── completed/)
    expect(await pane.exitStatus()).toBe(0)
    expect(toolResults(server.requests[1]!.body)["one"]).toContain("first")
    expect(toolResults(server.requests[2]!.body)["two"]).toMatch(/v\d+/)
    expect(toolResults(server.requests[3]!.body)["three"]).toContain("again")
    expect(toolResults(server.requests[4]!.body)["four"]).toBe("Tool execution denied by approval: The user denied this call. They said: not in this repository")
    // a repository with .claude/ keeps it where Claude Code does
    const saved = JSON.parse(fs.readFileSync(path.join(workspace, ".claude", "settings.local.json"), "utf8"))
    expect(saved).toEqual({ permissions: { allow: ["exec(node:*)"] } })
    expect(home).toBeDefined()
  })

  it("in chat, /compact starts the session again with source compact, /clear ends it (clear) and starts the next (clear), Ctrl-D ends it (prompt_input_exit)", async (context) => {
    const { env, server, workspace } = await setup(context, () => ({ text: "ok" }))
    const settings = JSON.parse(fs.readFileSync(path.join(workspace, ".claude", "settings.json"), "utf8"))
    delete settings.hooks
    write(path.join(workspace, ".claude", "settings.json"), JSON.stringify(settings))
    const log = "cat >> \"$CLAUDE_PROJECT_DIR/session.log\"; echo >> \"$CLAUDE_PROJECT_DIR/session.log\""
    write(path.join(workspace, ".claude", "settings.local.json"), JSON.stringify({
      hooks: { SessionStart: [{ hooks: [{ type: "command", command: log }] }], SessionEnd: [{ hooks: [{ type: "command", command: log }] }] }
    }))
    const file = path.join(workspace, "session.log")
    // whole lines only: a hook may be writing its line as the file is read
    const events = () =>
      fs.existsSync(file)
        ? fs.readFileSync(file, "utf8").split("\n").slice(0, -1).filter((line) => line !== "").map((line) => JSON.parse(line)).map((event) => ({
          said: `${event.hook_event_name} ${event.source ?? event.reason}`,
          session: event.session_id as string
        }))
        : []
    const said = () => events().map((event) => event.said)
    const pane = startPane([process.execPath, launcher, "chat", "--base-url", server.url, "--model", "m", "--workspace", workspace, "--no-context-files"], env, root)
    context.onTestFinished(() => pane.kill())
    await pane.waitFor(/> $/m)
    pane.line("hello")
    await waitUntil("the session starts", () => said().length === 1)
    await pane.waitFor(/── completed/)
    pane.line("/compact")
    await waitUntil("the session starts again from its summary", () => said().length === 2)
    pane.line("/clear")
    await waitUntil("the first session ends", () => said().length === 3)
    pane.line("again")
    await waitUntil("the next session starts", () => said().length === 4)
    await pane.waitFor(/── completed[\s\S]*── completed/)
    pane.keys("C-d")
    expect(await pane.exitStatus()).toBe(0)
    expect(said()).toEqual(["SessionStart startup", "SessionStart compact", "SessionEnd clear", "SessionStart clear", "SessionEnd prompt_input_exit"])
    const [first, compacted, cleared, next, last] = events().map((event) => event.session)
    expect([compacted, cleared]).toEqual([first, first])
    expect(next).not.toBe(first)
    expect(last).toBe(next)
  })
})
