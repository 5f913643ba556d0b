/**
 * The sandbox through the real CLI, on real bubblewrap: `run` with a scripted model on loopback
 * whose `exec` call reads a fake home's `~/.ssh/id_rsa`. On by default (the key stays unreadable
 * under `--yes`), `--sandbox off` warns once and runs unconfined, an untrusted repository's
 * `.claude/settings.json` cannot turn it off, `sandbox status` says what applies, and a call that
 * asks to run outside the sandbox is refused under `--yes` without `allowUnsandboxedCommands`.
 * Skipped, saying so, where bubblewrap is missing or cannot create its namespaces.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, root, runCli, type TestContext } from "../support/cliProcess.ts"
import { type Reply, type Script, start } from "../support/openaiServer.ts"

const KEY = "-----BEGIN OPENSSH PRIVATE KEY----- sandbox-test-secret"

/** Whether bubblewrap runs here, in the namespaces the sandbox asks for. */
const bwrapRuns = spawnSync("bwrap", [
  "--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true"
]).status === 0

const toolResults = (body: any): ReadonlyArray<string> => body.messages.filter((m: any) => m.role === "tool").map((m: any) => String(m.content))

/** A model that makes the exec calls of `calls` one per reply, then answers "done"; each run of the CLI starts it over. */
const execThenDone = (...calls: ReadonlyArray<Record<string, unknown>>): Script => (request) => {
  const done = request.body.messages.filter((m: any) => m.role === "tool").length
  const args = calls[done]
  return args === undefined ? { text: "done" } : { toolCalls: [{ id: `call_${done}`, name: "exec", arguments: args }] } satisfies Reply
}

/**
 * Outside `/tmp`, which the sandbox replaces with a private one: a home there would be out of
 * reach for that reason alone, whatever the policy hides.
 */
const base = fs.existsSync("/var/tmp") ? "/var/tmp" : path.join(root, ".tmp")

/**
 * A scripted server, and a home (also `$HOME`) outside `/tmp` with a private key in `~/.ssh` and
 * a workspace `ws`; `files` are written relative to the home.
 */
const setup = async (context: TestContext, script: Script, files: Record<string, string> = {}) => {
  const server = await start(script)
  context.onTestFinished(() => server.close())
  const home = fs.mkdtempSync(path.join(base, "agent-loop-sandbox-"))
  context.onTestFinished(() => fs.rmSync(home, { recursive: true, force: true }))
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace)
  for (const [file, text] of Object.entries({ ".ssh/id_rsa": KEY, ...files })) {
    fs.mkdirSync(path.dirname(path.join(home, file)), { recursive: true })
    fs.writeFileSync(path.join(home, file), text)
  }
  const flags = ["--base-url", server.url, "--model", "fake-model", "--workspace", workspace, "--ephemeral", "--no-context-files"]
  return { server, home, workspace, flags, env: { ...isolatedEnv(home), HOME: home } }
}

const warnings = (stderr: string, text: string) => stderr.split("\n").filter((line) => line.includes(text))

describe.skipIf(!bwrapRuns).concurrent(
  bwrapRuns ? "the sandbox in the CLI (bubblewrap)" : "the sandbox in the CLI: SKIPPED because bubblewrap is missing or cannot create namespaces (apt-get install -y bubblewrap)",
  () => {
    it("is on by default: under --yes an exec reading ~/.ssh/id_rsa gets nothing, and no warning says it is off", async (context) => {
      const { env, flags, server } = await setup(context, execThenDone({ command: "cat \"$HOME/.ssh/id_rsa\"; echo read-ended" }))
      const result = await runCli(["run", ...flags, "--yes", "read the key"], { env })
      expect(result.code).toBe(0)
      const [output] = toolResults(server.requests[1]!.body)
      expect(output).toContain("read-ended")
      expect(output).not.toContain("sandbox-test-secret")
      expect(result.stderr).not.toContain("the sandbox is off")
    })

    it("--sandbox off runs unconfined and warns once, on one line", async (context) => {
      const { env, flags, server } = await setup(context, execThenDone({ command: "cat \"$HOME/.ssh/id_rsa\"" }, { command: "echo second" }))
      const result = await runCli(["run", ...flags, "--yes", "--sandbox", "off", "read the key"], { env })
      expect(result.code).toBe(0)
      expect(toolResults(server.requests[1]!.body)[0]).toContain("sandbox-test-secret")
      expect(warnings(result.stderr, "the sandbox is off")).toEqual([
        "agent-loop: warn: the sandbox is off (--sandbox off): commands run unconfined, with all your privileges"
      ])
    })

    it("an untrusted repository's .claude/settings.json with sandbox.enabled false leaves it on, saying it was ignored", async (context) => {
      const settings = JSON.stringify({ sandbox: { enabled: false, network: { allowedDomains: ["evil.example"] } } })
      const { env, flags, server, workspace } = await setup(
        context,
        execThenDone({ command: "cat \"$HOME/.ssh/id_rsa\"; echo read-ended" }),
        { "ws/.claude/settings.json": settings }
      )
      const result = await runCli(["run", ...flags, "--yes", "read the key"], { env })
      expect(result.code).toBe(0)
      const [output] = toolResults(server.requests[1]!.body)
      expect(output).toContain("read-ended")
      expect(output).not.toContain("sandbox-test-secret")
      expect(warnings(result.stderr, "ignored sandbox.enabled: false")).toEqual([
        `agent-loop: warn: ignored sandbox.enabled: false, sandbox.network.allowedDomains of ${path.join(workspace, ".claude", "settings.json")}: ` +
        "the workspace is not trusted, so its settings cannot weaken the sandbox"
      ])
      expect(result.stderr).not.toContain("the sandbox is off")
      // trusted, the same file turns it off
      const trusted = await runCli(["trust", workspace], { env })
      expect(trusted.code).toBe(0)
      const again = await runCli(["run", ...flags, "--yes", "read the key"], { env })
      expect(again.code).toBe(0)
      expect(toolResults(server.requests[3]!.body)[0]).toContain("sandbox-test-secret")
      expect(again.stderr).toContain(`the sandbox is off (sandbox.enabled: false in ${path.join(workspace, ".claude", "settings.json")})`)
    })

    it("a call asking to run outside the sandbox is refused under --yes without allowUnsandboxedCommands, saying why", async (context) => {
      const { env, flags, home, server } = await setup(
        context,
        execThenDone({ command: "echo out > \"$HOME/escaped\"" }, { command: "echo out > \"$HOME/escaped\"", dangerously_unsandboxed: true })
      )
      const result = await runCli(["run", ...flags, "--yes", "touch a file outside"], { env })
      expect(result.code).toBe(0)
      expect(fs.existsSync(path.join(home, "escaped"))).toBe(false)
      // the sandbox stopped the first call, and said so to the model
      expect(toolResults(server.requests[1]!.body)[0]).toContain("[sandbox denied: ")
      expect(result.stderr).toContain(
        "it asks to run outside the sandbox, which needs your yes at a prompt and there is no terminal to ask (--yes approves it only with sandbox.allowUnsandboxedCommands: true in your settings)"
      )
      expect(toolResults(server.requests[2]!.body)[1]).toContain("running a command outside the sandbox needs the user's answer")
      // with the user's setting, --yes lets it run outside
      fs.mkdirSync(path.join(home, "config", "agent-loop"), { recursive: true })
      fs.writeFileSync(path.join(home, "config", "agent-loop", "settings.json"), JSON.stringify({ sandbox: { allowUnsandboxedCommands: true } }))
      const allowed = await runCli(["run", ...flags, "--yes", "touch a file outside"], { env })
      expect(allowed.code).toBe(0)
      expect(fs.existsSync(path.join(home, "escaped"))).toBe(true)
    })

    it("sandbox.hooks puts hook scripts in the sandbox: a hook reading ~/.ssh/id_rsa gets nothing there, the key without it", async (context) => {
      const hook = (leak: string) => ({
        hooks: { UserPromptSubmit: [{ hooks: [{ type: "command", command: `cat "$HOME/.ssh/id_rsa" > ${leak}; echo ran >> ${leak}` }] }] }
      })
      const { env, flags, home, workspace } = await setup(context, [{ text: "done" }])
      const settingsFile = path.join(home, "config", "agent-loop", "settings.json")
      fs.mkdirSync(path.dirname(settingsFile), { recursive: true })
      fs.writeFileSync(settingsFile, JSON.stringify({ ...hook(path.join(workspace, "confined.txt")), sandbox: { hooks: true } }))
      const confined = await runCli(["run", ...flags, "hi"], { env })
      expect(confined.code).toBe(0)
      const inside = fs.readFileSync(path.join(workspace, "confined.txt"), "utf8")
      expect(inside).toContain("ran")
      expect(inside).not.toContain("sandbox-test-secret")
      fs.writeFileSync(settingsFile, JSON.stringify(hook(path.join(workspace, "unconfined.txt"))))
      const unconfined = await runCli(["run", ...flags, "hi"], { env })
      expect(unconfined.code).toBe(0)
      expect(fs.readFileSync(path.join(workspace, "unconfined.txt"), "utf8")).toContain("sandbox-test-secret")
    })

    it("sandbox.mcpServers starts stdio MCP servers in the sandbox: one writing outside the workspace cannot", async (context) => {
      const { env, flags, home, workspace } = await setup(context, [{ text: "done" }])
      const server = (log: string) => ({
        mcpServers: { t: { command: process.execPath, args: [path.join(root, "test", "support", "mcpServer.mjs")], env: { MCP_TEST_LOG: log } } }
      })
      const settingsFile = path.join(home, "config", "agent-loop", "settings.json")
      fs.mkdirSync(path.dirname(settingsFile), { recursive: true })
      fs.writeFileSync(settingsFile, JSON.stringify({ ...server(path.join(home, "confined.log")), sandbox: { mcpServers: true } }))
      const confined = await runCli(["run", ...flags, "hi"], { env })
      expect(fs.existsSync(path.join(home, "confined.log"))).toBe(false)
      expect(confined.stderr).toContain("MCP server \"t\" failed to start")
      expect(confined.stderr).toContain("EROFS")
      // mcp list starts it as a run would
      const listed = await runCli(["mcp", "list", "--workspace", workspace], { env })
      expect(listed.stdout).toMatch(/^t: .*failed|^t: (?!connected)/m)
      expect(listed.stdout).toContain("EROFS")
      expect(fs.existsSync(path.join(home, "confined.log"))).toBe(false)
      // in the sandbox it still gets the environment its config gives it (values kept as secrets), and writes the workspace
      fs.writeFileSync(settingsFile, JSON.stringify({ ...server(path.join(workspace, "inside.log")), sandbox: { mcpServers: true } }))
      const inside = await runCli(["run", ...flags, "hi"], { env })
      expect(inside.code).toBe(0)
      expect(inside.stderr).not.toContain("failed to start")
      expect(fs.readFileSync(path.join(workspace, "inside.log"), "utf8")).toMatch(/^ready \d+/)
      fs.writeFileSync(settingsFile, JSON.stringify(server(path.join(home, "unconfined.log"))))
      const unconfined = await runCli(["run", ...flags, "hi"], { env })
      expect(unconfined.code).toBe(0)
      expect(fs.readFileSync(path.join(home, "unconfined.log"), "utf8")).toMatch(/^ready \d+/)
    })

    it("sandbox status says what is available and what a run here would apply", async (context) => {
      const { env, home, workspace } = await setup(context, [], {
        "config/agent-loop/settings.json": JSON.stringify({ permissions: { deny: ["Read(./secrets/**)"], allow: ["WebFetch(domain:docs.example.com)"] } }),
        "ws/secrets/token": "x"
      })
      const result = await runCli(["sandbox", "status", "--workspace", workspace], { env })
      expect(result.code).toBe(0)
      expect(result.stdout).toContain("mode: auto: commands run in the sandbox wherever it can run (the default)")
      expect(result.stdout).toContain("available: yes (bubblewrap at ")
      expect(result.stdout).toMatch(/user namespaces: allowed/)
      expect(result.stdout).toContain(`  writable: ${fs.realpathSync(workspace)}, and a private /tmp`)
      expect(result.stdout).toMatch(/ {2}unreadable: .*~\/\.ssh.*\.\/secrets/)
      expect(result.stdout).toContain("  network: through the sandbox's proxy, to docs.example.com")
      const off = await runCli(["sandbox", "status", "--workspace", workspace, "--sandbox", "off"], { env: { ...env, HOME: home } })
      expect(off.stdout).toContain("mode: off: commands run unconfined, with all your privileges (--sandbox)")
    })
  }
)

describe.skipIf(process.platform !== "linux").concurrent("without bubblewrap", () => {
  it("exec fails closed: the command does not run, and the CLI shows the sandbox's one line naming the fix, once", async (context) => {
    const { env, flags, server, workspace } = await setup(context, execThenDone({ command: "echo x > ran" }, { command: "echo x > ran" }))
    const result = await runCli(["run", ...flags, "--yes", "touch"], { env: { ...env, PATH: "/nonexistent" } })
    expect(result.code).toBe(0)
    expect(fs.existsSync(path.join(workspace, "ran"))).toBe(false)
    expect(toolResults(server.requests[1]!.body)[0]).toContain("The sandbox cannot start: bubblewrap (bwrap) is not installed")
    // the tool's own line is cut short; the whole line comes once, however many calls it stopped
    expect(warnings(result.stderr, "agent-loop: error: The sandbox cannot start")).toEqual([
      "agent-loop: error: The sandbox cannot start: bubblewrap (bwrap) is not installed; install it (apt install bubblewrap, dnf install bubblewrap), or run without it: --sandbox off (settings: sandbox.enabled: false)"
    ])
  })

  it("says it is not available, names the fix, and exits 1", async (context) => {
    const { env, workspace } = await setup(context, [])
    // a PATH without bwrap (node itself is started by its full path)
    const result = await runCli(["sandbox", "status", "--workspace", workspace], { env: { ...env, PATH: "/nonexistent" } })
    expect(result.code).toBe(1)
    expect(result.stdout).toContain("bubblewrap: not found on PATH")
    expect(result.stdout).toContain("available: no: bubblewrap (bwrap) is not installed")
    expect(result.stdout).toContain("fix: install it (apt install bubblewrap, dnf install bubblewrap), or run without it: --sandbox off")
  })
})
