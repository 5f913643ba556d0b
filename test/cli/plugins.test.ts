/**
 * Claude Code plugins through the CLI process: `plugin add` of a local directory, of an npm
 * package file (`npm pack`, offline) and of a git URL (`file://`, offline), `plugin list`, a plugin's namespaced command run against the
 * scripted server on 127.0.0.1 with its skill and its MCP server's tools offered and its hook run, `enabledPlugins: false` in the user's Claude
 * Code settings turning it off, `plugin remove`; a directory that is no plugin is refused saying why.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, root, runCli, tempDir } from "../support/cliProcess.ts"
import { start } from "../support/openaiServer.ts"

// each test starts the CLI six to eight times one after another: about 110 s on a machine loaded to ten times its cores
const SLOW = 300_000

const writeAll = (root: string, files: Record<string, string>) => {
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true })
    fs.writeFileSync(path.join(root, file), text)
  }
}

describe("plugins", () => {
  it("add, list, use (namespaced command, skill), turn off with enabledPlugins, remove", async (context) => {
    const server = await start([{ text: "Hi from the plugin." }])
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const source = path.join(home, "src-plugin")
    writeAll(source, {
      ".claude-plugin/plugin.json": JSON.stringify({ name: "greeter", version: "1.2.0", description: "Greets" }),
      "commands/hello.md": "---\ndescription: Say hello\n---\nSay hello to $ARGUMENTS.\n",
      "agents/helper.md": "---\ndescription: Helps\n---\nHelp.\n",
      "skills/tone/SKILL.md": "---\nname: tone\ndescription: Picks a friendly tone\n---\nBe friendly.\n",
      "hooks/hooks.json": JSON.stringify({
        hooks: { UserPromptSubmit: [{ hooks: [{ type: "command", command: "echo prompt-seen >> \"${CLAUDE_PLUGIN_ROOT}/hook.log\"" }] }] }
      }),
      ".mcp.json": JSON.stringify({ mcpServers: { plugkv: { command: process.execPath, args: ["${CLAUDE_PLUGIN_ROOT}/server.mjs"] } } })
    })
    fs.copyFileSync(path.join(root, "test", "support", "mcpServer.mjs"), path.join(source, "server.mjs"))
    fs.mkdirSync(path.join(home, "ws"))
    const env = isolatedEnv(home, { HOME: home })
    const flags = ["--base-url", server.url, "--model", "fake-model", "--workspace", path.join(home, "ws")]

    const added = await runCli(["plugin", "add", source], { env })
    expect(added.code, added.stderr).toBe(0)
    expect(added.stdout).toBe(`added plugin greeter 1.2.0 from ${source}: 1 commands, 1 agents, 1 skills, hooks, MCP servers\n`)
    // a copy: the source may go
    fs.rmSync(source, { recursive: true })
    const listed = await runCli(["plugin", "list"], { env })
    expect(listed.stdout).toMatch(/^greeter 1\.2\.0 {2}enabled {2}1 commands, 1 agents, 1 skills, hooks, MCP servers {2}from \S+src-plugin\n$/)

    const result = await runCli(["run", ...flags, "/greeter:hello", "Ada"], { env })
    expect(result.code, result.stderr).toBe(0)
    const body = server.requests[0]!.body
    expect(body.messages.at(-1)).toEqual({ role: "user", content: "Say hello to Ada." })
    const names = body.tools.map((t: any) => t.function.name)
    // the plugin's hook ran, and its MCP server started, each with its path from ${CLAUDE_PLUGIN_ROOT}
    expect(fs.readFileSync(path.join(home, "data", "plugins", "greeter", "hook.log"), "utf8")).toBe("prompt-seen\n")
    expect(names).toEqual(expect.arrayContaining(["skill", "subagent", "lookup", "put"]))
    expect(body.tools.find((t: any) => t.function.name === "skill").function.description).toContain("- tone: Picks a friendly tone")

    writeAll(home, { ".claude/settings.json": JSON.stringify({ enabledPlugins: { "greeter@market": false } }) })
    const off = await runCli(["run", ...flags, "/greeter:hello", "Ada"], { env })
    expect(off.code).not.toBe(0)
    expect(off.stderr).toContain("unknown command /greeter:hello")
    expect((await runCli(["plugin", "list"], { env })).stdout).toContain(`disabled by enabledPlugins in ${path.join(home, ".claude", "settings.json")}`)

    const removed = await runCli(["plugin", "remove", "greeter"], { env })
    expect(removed.stdout).toBe("removed plugin greeter\n")
    expect((await runCli(["plugin", "list"], { env })).stdout).toMatch(/^no plugins/)
    expect(server.requests).toHaveLength(1)
  }, SLOW)

  it("adds an npm package (packed offline from a file); refuses a directory that is no plugin, saying why", async () => {
    const home = tempDir()
    const env = isolatedEnv(home, { HOME: home })
    const pkg = path.join(home, "pkg")
    writeAll(pkg, {
      "package.json": JSON.stringify({ name: "greeter-plugin", version: "0.1.0", scripts: { prepack: "touch SHOULD-NOT-RUN" } }),
      ".claude-plugin/plugin.json": JSON.stringify({ name: "npm-greeter" }),
      "commands/hi.md": "Hi.\n"
    })
    const packed = await runCli(["plugin", "add", path.join(home, "nothing-here")], { env })
    expect(packed.code).not.toBe(0)
    const bare = path.join(home, "bare")
    fs.mkdirSync(bare)
    const refused = await runCli(["plugin", "add", bare], { env })
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain(`plugin add: ${bare} is not a Claude Code plugin: .claude-plugin/plugin.json: missing`)
    // npm pack of a directory makes the package file offline; adding that file goes through npm pack again
    const { execFileSync } = await import("node:child_process")
    const tarball = execFileSync("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", home, pkg], { cwd: home, encoding: "utf8" }).trim()
    const added = await runCli(["plugin", "add", path.join(home, tarball)], { env })
    expect(added.code, added.stderr).toBe(0)
    expect(added.stdout).toContain("added plugin npm-greeter from")
    expect(fs.existsSync(path.join(pkg, "SHOULD-NOT-RUN"))).toBe(false)

    // a git URL is cloned (file:// keeps it offline), its .git left behind
    const repo = path.join(home, "repo")
    writeAll(repo, { ".claude-plugin/plugin.json": JSON.stringify({ name: "git-greeter", version: "2.0.0" }), "commands/yo.md": "Yo.\n" })
    const git = (...args: Array<string>) => execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", ...args], { cwd: repo })
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "plugin")
    const cloned = await runCli(["plugin", "add", `file://${repo}`], { env })
    expect(cloned.code, cloned.stderr).toBe(0)
    expect(cloned.stdout).toBe(`added plugin git-greeter 2.0.0 from file://${repo}: 1 commands, 0 agents, 0 skills\n`)
    expect(fs.existsSync(path.join(home, "data", "plugins", "git-greeter", ".git"))).toBe(false)
    expect((await runCli(["plugin", "list"], { env })).stdout.split("\n").map((l) => l.split(" ")[0])).toEqual(["npm-greeter", "git-greeter", ""])
  }, SLOW)
})
