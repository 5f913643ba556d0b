/**
 * The flags Claude Code users type, and Claude Code's settings keys that change behaviour, through
 * the CLI against a scripted OpenAI-compatible server on 127.0.0.1 (and an Anthropic one for
 * `apiKeyHelper`): `-p`, `--allowedTools`, `--disallowedTools`, `--permission-mode`,
 * `--dangerously-skip-permissions`, `--system-prompt`, `--append-system-prompt`, `--max-turns`,
 * `-r KEY`; an unknown flag is one line naming the closest one; `permissions.defaultMode`, `env`,
 * `model`, `apiKeyHelper` and the keys the loop does not honour.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { isolatedEnv, runCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import { type Script, start } from "../support/openaiServer.ts"
import { base, bwrapRuns } from "../support/sandbox.ts"
import { anthropicReply } from "../support/wireReplies.ts"
import { start as startWire } from "../support/wireServer.ts"

const write = (file: string, text: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text)
}

const toolResults = (body: any): Record<string, string> =>
  Object.fromEntries(body.messages.filter((m: any) => m.role === "tool").map((m: any) => [m.tool_call_id, m.content]))

const setup = async (context: TestContext, script: Script) => {
  const server = await start(script)
  context.onTestFinished(() => server.close())
  const home = fs.realpathSync(tempDir())
  const workspace = path.join(home, "repo")
  fs.mkdirSync(workspace)
  const env = isolatedEnv(home, { HOME: home, OPENAI_API_KEY: "sk-test-key-0123456789abcdef" })
  const flags = ["--base-url", server.url, "--model", "m", "--workspace", workspace, "--ephemeral", "--no-context-files", "--sandbox", "off"]
  return { server, home, workspace, env, flags }
}

/** Two exec calls, then an answer. */
const execs = (...commands: ReadonlyArray<string>) => (request: any) =>
  request.body.messages.some((m: any) => m.role === "tool")
    ? { text: "done" }
    : { toolCalls: commands.map((command, i) => ({ id: `c${i}`, name: "exec", arguments: { command } })) }

describe.concurrent("the flags Claude Code users type", () => {
  it("an unknown flag is one line naming the closest known one and the help, never the help page", async () => {
    const home = tempDir()
    const typo = await runCli(["run", "--permision-mode", "plan", "hi"], { env: isolatedEnv(home) })
    expect([typo.code, typo.stdout, typo.stderr]).toEqual([
      1,
      "",
      "agent-loop: unknown flag --permision-mode for agent-loop run; did you mean --permission-mode? (agent-loop run --help lists the flags)\n"
    ])
    const command = await runCli(["sesions", "list"], { env: isolatedEnv(home) })
    expect([command.code, command.stderr]).toEqual([1, "agent-loop: unknown command sesions for agent-loop; did you mean sessions? (agent-loop --help lists the commands)\n"])
  })

  it("-p, --allowedTools and --disallowedTools (several words), --system-prompt, --append-system-prompt", async (context) => {
    const { env, flags, server, workspace } = await setup(context, execs("echo allowed", "git push origin main", "touch asked"))
    const result = await runCli([
      "-p", ...flags, "--allowedTools", "Bash(echo:*)", "Read", "--disallowedTools", "Bash(git push:*)",
      "--system-prompt", "You are terse.", "--append-system-prompt", "Always answer in French.", "go"
    ], { env })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe("done\n")
    const system = server.requests[0]!.body.messages[0]
    expect(system).toEqual({ role: "system", content: "You are terse.\n\nAlways answer in French." })
    const results = toolResults(server.requests[1]!.body)
    expect(results["c0"]).toContain("allowed")
    expect(results["c1"]).toContain("Denied by the permission rule \"Bash(git push:*)\" of --disallowedTools.")
    // no rule allows touch, and there is no terminal to ask
    expect(results["c2"]).toContain("Not approved")
    expect(fs.existsSync(path.join(workspace, "asked"))).toBe(false)
  })

  it("--dangerously-skip-permissions approves with a warning, and deny rules still hold; --max-turns bounds the model calls", async (context) => {
    const { env, flags, server, workspace } = await setup(context, execs("touch made", "git push origin main"))
    const result = await runCli(["run", ...flags, "--dangerously-skip-permissions", "--disallowedTools", "Bash(git push:*)", "--max-turns", "1", "go"], { env })
    expect(result.stderr).toContain("agent-loop: warn: --dangerously-skip-permissions: bypassPermissions: every call that needs approval runs without asking; deny rules and the sandbox still hold")
    expect(fs.existsSync(path.join(workspace, "made"))).toBe(true)
    // one model call only: the tools ran, and the turn stopped at its bound
    expect(server.requests).toHaveLength(1)
    expect(result.code).not.toBe(0)
  })

  it("--permission-mode plan: the model only reads and the plan ends the run (exit 0) unless --yes accepts it; dontAsk denies what would ask", async (context) => {
    const plan = "## Plan\n\n1. Create `made`\n2. Check it"
    // plans first; once tools beyond reading are offered (the plan accepted), runs its command
    const script = (request: any) => {
      const offered = (request.body.tools ?? []).map((tool: any) => tool.function.name)
      if (request.body.messages.some((m: any) => m.role === "tool" && m.tool_call_id === "c0")) return { text: "done" }
      if (offered.includes("exec")) return { toolCalls: [{ id: "c0", name: "exec", arguments: { command: "touch made" } }] }
      return { toolCalls: [{ id: "p0", name: "exit_plan_mode", arguments: { plan } }] }
    }
    const { env, flags, server, workspace } = await setup(context, script)
    const planned = await runCli(["run", ...flags, "--permission-mode", "plan", "go"], { env })
    expect(planned.code).toBe(0)
    expect(planned.stdout).toContain("1. Create `made`")
    expect(planned.stderr).toContain("the turn ends with the plan")
    expect(server.requests).toHaveLength(1)
    const offered = server.requests[0]!.body.tools.map((tool: any) => tool.function.name)
    expect(offered).toContain("exit_plan_mode")
    expect(offered).toContain("read_file")
    expect(offered).not.toContain("exec")
    expect(offered).not.toContain("write_file")
    expect(fs.existsSync(path.join(workspace, "made"))).toBe(false)
    // --yes accepts the plan: the same turn goes on with every tool
    const accepted = await runCli(["run", ...flags, "--permission-mode", "plan", "--yes", "go"], { env })
    expect(accepted.code).toBe(0)
    expect(accepted.stderr).toContain("plan accepted by --yes")
    expect(accepted.stdout).toContain("done")
    expect(fs.existsSync(path.join(workspace, "made"))).toBe(true)
    // without plan mode the tool is not offered
    const dontAsk = await runCli(["run", ...flags, "--permission-mode", "dontAsk", "go"], { env })
    expect(dontAsk.code).toBe(0)
    expect(server.requests.at(-1)!.body.tools.map((tool: any) => tool.function.name)).not.toContain("exit_plan_mode")
    expect(toolResults(server.requests.at(-1)!.body)["c0"]).toContain("agent-loop is set to deny every call that needs approval")
  })

  it("-r KEY resumes a session, as --resume=KEY does", async (context) => {
    const { env, flags, server } = await setup(context, [{ text: "first" }, { text: "second" }])
    const persisted = flags.filter((flag) => flag !== "--ephemeral")
    expect((await runCli(["run", ...persisted, "--session", "s-1", "remember 42"], { env })).code).toBe(0)
    const again = await runCli(["run", ...persisted, "-r", "s-1", "what number?"], { env })
    expect(again.code).toBe(0)
    expect(JSON.stringify(server.requests[1]!.body.messages)).toContain("remember 42")
  })
})

describe.concurrent("Claude Code's settings keys", () => {
  it("defaultMode bypassPermissions warns; env reaches commands but never a credential; keys not honoured get one line each", async (context) => {
    const { env, flags, home, server } = await setup(context, execs("echo \"[$TEAM_SETTING] [${GITHUB_TOKEN:-none}]\""))
    write(path.join(home, ".claude", "settings.json"), JSON.stringify({
      permissions: { defaultMode: "bypassPermissions" },
      env: { TEAM_SETTING: "blue", GITHUB_TOKEN: "ghp_0123456789abcdef0123456789abcdef0123" },
      statusLine: { type: "command", command: "echo hi" },
      cleanupPeriodDays: 10
    }))
    const result = await runCli(["run", ...flags, "go"], { env })
    expect(result.code).toBe(0)
    const user = path.join(home, ".claude", "settings.json")
    expect(toolResults(server.requests[1]!.body)["c0"]).toContain("[blue] [none]")
    expect(result.stderr).toContain(`agent-loop: warn: ${user}: permissions.defaultMode: bypassPermissions: every call that needs approval runs without asking`)
    expect(result.stderr).toContain(`agent-loop: warn: ${user}: env.GITHUB_TOKEN is not set`)
    expect(result.stderr).toContain(`agent-loop: warn: ${user}: statusLine is not honoured by agent-loop; ignored\n`)
    expect(result.stderr).toContain(`agent-loop: warn: ${user}: cleanupPeriodDays is not honoured by agent-loop; ignored\n`)
    expect(result.stderr).not.toContain("ghp_0123456789")
  })

  it("an untrusted repository's defaultMode, env and apiKeyHelper are not taken", async (context) => {
    const { env, flags, server, workspace } = await setup(context, execs("echo \"[${TEAM_SETTING:-unset}]\""))
    write(path.join(workspace, ".claude", "settings.json"), JSON.stringify({
      permissions: { defaultMode: "bypassPermissions" },
      env: { TEAM_SETTING: "blue" },
      apiKeyHelper: `touch ${path.join(workspace, "helper-ran")}; echo key`
    }))
    const result = await runCli(["run", ...flags, "go"], { env })
    expect(result.code).toBe(0)
    expect(toolResults(server.requests[1]!.body)["c0"]).toContain("Not approved")
    expect(result.stderr).not.toContain("bypassPermissions")
    expect(fs.existsSync(path.join(workspace, "helper-ran"))).toBe(false)
  })

  it.live("apiKeyHelper's output is the Anthropic key (sent where the URL points), model's alias names the model, and the key is never printed", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* startWire([anthropicReply({ text: "Bonjour." })])
      const home = fs.realpathSync(tempDir())
      const key = "sk-ant-helper-0123456789abcdefghij"
      write(path.join(home, ".claude", "settings.json"), JSON.stringify({ apiKeyHelper: `printf '${key}\\n'`, model: "haiku" }))
      const result = yield* Effect.promise(() =>
        runCli(["run", "--provider", "anthropic", "--base-url", server.url, "--workspace", home, "--ephemeral", "--no-context-files", "hi"], {
          env: isolatedEnv(home, { HOME: home })
        })
      )
      expect([result.code, result.stdout]).toEqual([0, "Bonjour.\n"])
      const request = server.requests[0]!
      expect(request.headers["x-api-key"]).toBe(key)
      // Claude Code's alias, as the newest haiku the registry lists for anthropic
      expect(request.json.model).toMatch(/^claude-haiku-\d/)
      expect(result.stderr).not.toContain(key)
    })))
})

describe("--add-dir and permissions.additionalDirectories for the file tools", () => {
  it("read_file, write_file and grep reach an added directory by its path; without it they refuse; a deny rule still holds there", async (context) => {
    // the directory beside the workspace, known once the home is made
    let shared = ""
    const reads = (request: any) =>
      request.body.messages.some((m: any) => m.role === "tool")
        ? { text: "done" }
        : {
          toolCalls: [
            { id: "r", name: "read_file", arguments: { path: path.join(shared, "lib", "util.ts") } },
            { id: "w", name: "write_file", arguments: { path: "../shared/out.txt", content: "written" } },
            { id: "g", name: "grep", arguments: { pattern: "answer", path: shared } },
            { id: "d", name: "read_file", arguments: { path: path.join(shared, ".env") } }
          ]
        }
    const { env, flags, server, workspace } = await setup(context, reads)
    shared = path.join(path.dirname(workspace), "shared")
    write(path.join(shared, "lib", "util.ts"), "export const answer = 42\n")
    write(path.join(shared, ".env"), "TOKEN=1\n")
    const allow = ["--yes", "--deny", `Read(/${path.join(shared, ".env")})`]

    const without = await runCli(["run", ...flags, ...allow, "go"], { env })
    expect(without.code).toBe(0)
    const refused = toolResults(server.requests.at(-1)!.body)
    expect(refused["r"]).toContain("is outside the workspace root")
    expect(refused["w"]).toContain("escapes the workspace root")
    expect(fs.existsSync(path.join(shared, "out.txt"))).toBe(false)

    const added = await runCli(["run", ...flags, ...allow, "--add-dir", shared, "go"], { env })
    expect(added.code, added.stderr).toBe(0)
    const results = toolResults(server.requests.at(-1)!.body)
    expect(results["r"]).toBe("     1\texport const answer = 42")
    expect(fs.readFileSync(path.join(shared, "out.txt"), "utf8")).toBe("written")
    expect(results["g"]).toBe(`${path.join(shared, "lib", "util.ts")}:1: export const answer = 42`)
    expect(results["d"]).toMatch(/denied/)

    // the settings' key, relative to the workspace, as the flag
    write(path.join(env["XDG_CONFIG_HOME"]!, "agent-loop", "settings.json"), JSON.stringify({ permissions: { additionalDirectories: ["../shared"] } }))
    fs.rmSync(path.join(shared, "out.txt"))
    const fromSettings = await runCli(["run", ...flags, ...allow, "go"], { env })
    expect(fromSettings.code, fromSettings.stderr).toBe(0)
    expect(toolResults(server.requests.at(-1)!.body)["r"]).toBe("     1\texport const answer = 42")
    expect(fs.readFileSync(path.join(shared, "out.txt"), "utf8")).toBe("written")
  })
})

describe.skipIf(!bwrapRuns)(bwrapRuns ? "--add-dir in the sandbox" : "--add-dir in the sandbox: SKIPPED because bubblewrap cannot run here", () => {
  it("lets commands write the directory, as permissions.additionalDirectories does", async (context) => {
    // outside /tmp, which the sandbox replaces with a private one
    const home = fs.mkdtempSync(path.join(base, "add-dir-"))
    context.onTestFinished(() => fs.rmSync(home, { recursive: true, force: true }))
    const workspace = path.join(home, "repo")
    const extra = path.join(home, "extra")
    const server = await start(execs(`touch '${extra}/made' && echo wrote`))
    context.onTestFinished(() => server.close())
    fs.mkdirSync(workspace)
    fs.mkdirSync(extra)
    const env = isolatedEnv(home, { HOME: home, OPENAI_API_KEY: "sk-test-key-0123456789abcdef" })
    const flags = ["--base-url", server.url, "--model", "m", "--workspace", workspace, "--ephemeral", "--no-context-files", "--sandbox", "on", "--yes"]
    const confined = await runCli(["run", ...flags, "go"], { env })
    expect(confined.code, confined.stderr).toBe(0)
    expect(fs.existsSync(path.join(extra, "made"))).toBe(false)
    const added = await runCli(["run", ...flags, "--add-dir", extra, "go"], { env })
    expect(added.code, added.stderr).toBe(0)
    expect(toolResults(server.requests.at(-1)!.body)["c0"]).toContain("wrote")
    expect(fs.existsSync(path.join(extra, "made"))).toBe(true)
  })
})
