/**
 * Settings files, context files and trust, end to end (the real launcher against a scripted
 * OpenAI-compatible server on 127.0.0.1).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, root, runCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import { type Script, start } from "../support/openaiServer.ts"

/** A server, a home with a config dir and a workspace inside a git repository. */
const setup = async (context: TestContext, script: Script) => {
  const server = await start(script)
  context.onTestFinished(() => server.close())
  const home = tempDir()
  const repo = path.join(home, "repo")
  const workspace = path.join(repo, "app")
  fs.mkdirSync(path.join(repo, ".git"), { recursive: true })
  fs.mkdirSync(workspace)
  const config = path.join(home, "config", "agent-loop")
  fs.mkdirSync(config, { recursive: true })
  return { server, home, repo, workspace, config, env: isolatedEnv(home) }
}

const write = (file: string, text: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text)
}

const systemPrompt = (body: any): string => body.messages[0].role === "system" ? body.messages[0].content : ""
const lastLine = (text: string) => text.trimEnd().split("\n").at(-1)

describe.concurrent("context files", () => {
  it("AGENTS.md and CLAUDE.md from the user, the repository root and the workspace join the system prompt, nearest last", async (context) => {
    const { server, repo, workspace, config, env } = await setup(context, [{ text: "ok" }])
    write(path.join(config, "AGENTS.md"), "User: answer in English.")
    write(path.join(repo, "AGENTS.md"), "Repo: run npm test before committing.")
    write(path.join(workspace, "CLAUDE.md"), "App: the entry point is main.ts.")
    const flags = ["--base-url", server.url, "--model", "m", "--workspace", workspace, "--ephemeral"]
    const result = await runCli(["run", ...flags, "--verbose", "hi"], { env })
    expect(result.code).toBe(0)
    const prompt = systemPrompt(server.requests[0]!.body)
    expect(prompt).toMatch(/^You are agent-loop/)
    const order = ["User: answer", "Repo: run npm test", "App: the entry point"].map((text) => prompt.indexOf(text))
    expect(order.every((at) => at > 0)).toBe(true)
    expect([...order].sort((a, b) => a - b)).toEqual(order)
    expect(prompt).toContain(`## ${path.join("..", "AGENTS.md")}`)
    expect(prompt).not.toContain(repo)
    expect(result.stderr).toContain(`agent-loop: note: context files: ${path.join(config, "AGENTS.md")}, ${path.join(repo, "AGENTS.md")}, ${path.join(workspace, "CLAUDE.md")}`)
    const without = await runCli(["run", ...flags, "--no-context-files", "hi"], { env })
    expect(without.code).toBe(0)
    expect(systemPrompt(server.requests[1]!.body)).not.toContain("Repo:")
  })
})

describe.concurrent("the contextFiles setting", () => {
  it("names the files looked for (GEMINI.md added, CLAUDE.md left out); a name with a directory is refused", async (context) => {
    const { server, repo, workspace, config, env } = await setup(context, [{ text: "ok" }])
    write(path.join(repo, "GEMINI.md"), "Gemini: use tabs.")
    write(path.join(workspace, "AGENTS.md"), "Agents: be brief.")
    write(path.join(workspace, "CLAUDE.md"), "Claude: not read here.")
    const settings = path.join(config, "settings.json")
    write(settings, JSON.stringify({ contextFiles: ["AGENTS.md", "GEMINI.md"] }))
    const flags = ["--base-url", server.url, "--model", "m", "--workspace", workspace, "--ephemeral"]
    const result = await runCli(["run", ...flags, "--verbose", "hi"], { env })
    expect(result.code).toBe(0)
    const prompt = systemPrompt(server.requests[0]!.body)
    expect(prompt).toContain("Gemini: use tabs.")
    expect(prompt).toContain("Agents: be brief.")
    expect(prompt).not.toContain("Claude: not read here.")
    expect(prompt.indexOf("Gemini: use tabs.")).toBeLessThan(prompt.indexOf("Agents: be brief."))
    expect(result.stderr).toContain(`agent-loop: note: context files: ${path.join(repo, "GEMINI.md")}, ${path.join(workspace, "AGENTS.md")}`)
    // names, not paths: nothing outside each directory can be named
    write(settings, JSON.stringify({ contextFiles: ["../secret.md"] }))
    const bad = await runCli(["run", ...flags, "hi"], { env })
    expect(bad.code).toBe(1)
    expect(bad.stderr).toBe(`agent-loop: ${settings}: contextFiles.0: Expected a file name such as GEMINI.md, without a directory\n`)
    expect(server.requests).toHaveLength(1)
  })
})

describe.concurrent("settings files", () => {
  it("user settings give the server, model, tools, system prompt and prices; the project's override them once trusted; flags and env win", async (context) => {
    const { server, workspace, config, env } = await setup(context, [{ text: "ok", usage: { prompt: 1_000_000, completion: 0 } }])
    write(path.join(config, "settings.json"), JSON.stringify({
      baseUrl: server.url,
      model: "user-model",
      tools: ["read_file", "grep"],
      systemPrompt: "You are terse.",
      prices: { "project-model": { inputPerMillion: 2, outputPerMillion: 8 } }
    }))
    write(path.join(workspace, ".agent-loop", "settings.json"), JSON.stringify({ model: "project-model" }))
    const flags = ["--workspace", workspace, "--ephemeral", "--no-context-files"]
    const untrusted = await runCli(["run", ...flags, "hi"], { env })
    expect(untrusted.code).toBe(0)
    expect(server.requests[0]!.body.model).toBe("user-model")
    expect(server.requests[0]!.body.tools.map((t: any) => t.function.name)).toEqual(["read_file", "grep"])
    expect(systemPrompt(server.requests[0]!.body)).toBe("You are terse.")
    expect(untrusted.stderr).toContain(`agent-loop: warn: workspace ${workspace} is not trusted, so its .agent-loop/settings.json was skipped`)
    expect((await runCli(["trust", workspace], { env })).code).toBe(0)
    const trusted = await runCli(["run", ...flags, "hi"], { env })
    expect(server.requests[1]!.body.model).toBe("project-model")
    expect(trusted.stderr).not.toContain("not trusted")
    // 1,000,000 input tokens at the settings' $2/M
    expect(lastLine(trusted.stderr)).toMatch(/· 1,000,000 in · 0 out tokens · \$2\.0000 · /)
    await runCli(["run", ...flags, "--model", "flag-model", "hi"], { env })
    await runCli(["run", ...flags, "hi"], { env: { ...env, AGENT_LOOP_MODEL: "env-model" } })
    expect(server.requests.slice(2).map((r) => r.body.model)).toEqual(["flag-model", "env-model"])
  }, 120_000)

  it("a bad settings file fails with the file, the field and the reason in one line; --no-settings ignores it", async (context) => {
    const { server, workspace, config, env } = await setup(context, [{ text: "ok" }])
    const file = path.join(config, "settings.json")
    write(file, JSON.stringify({ model: "m", approval: "sometimes" }))
    const flags = ["--base-url", server.url, "--model", "m", "--workspace", workspace, "--ephemeral"]
    const bad = await runCli(["run", ...flags, "hi"], { env })
    expect([bad.code, bad.stderr]).toEqual([1, `agent-loop: ${file}: approval: Expected "ask" | "approve" | "deny"\n`])
    write(file, "{\"modle\": \"m\"}")
    expect((await runCli(["run", ...flags, "hi"], { env })).stderr).toBe(`agent-loop: ${file}: modle: unknown setting\n`)
    expect((await runCli(["run", ...flags, "--no-settings", "hi"], { env })).code).toBe(0)
    expect(server.requests).toHaveLength(1)
  })

  it("approval \"deny\" denies every call that needs approval, with the reason; \"approve\" runs it", async (context) => {
    const { server, workspace, config, env } = await setup(context, (_, index) =>
      index % 2 === 0 ? { toolCalls: [{ name: "exec", arguments: { command: "echo ran-it" } }] } : { text: "ok" })
    write(path.join(config, "settings.json"), JSON.stringify({ baseUrl: server.url, model: "m", approval: "deny" }))
    const flags = ["--workspace", workspace, "--ephemeral", "--no-context-files"]
    const denied = await runCli(["run", ...flags, "go"], { env })
    expect(denied.stderr).toContain("agent-loop: denied exec {\"command\":\"echo ran-it\"}: approval is set to deny")
    expect(server.requests[1]!.body.messages.at(-1).content).toContain("approval: deny")
    const approved = await runCli(["run", ...flags, "--approval", "approve", "go"], { env })
    expect(approved.code).toBe(0)
    expect(server.requests[3]!.body.messages.at(-1).content).toContain("ran-it")
  })

  it("MCP servers in a settings file add their tools", async (context) => {
    const { server, workspace, config, env } = await setup(context, [
      { toolCalls: [{ name: "lookup", arguments: { key: "a" } }] },
      { text: "alpha" }
    ])
    write(path.join(config, "settings.json"), JSON.stringify({
      mcpServers: { kv: { command: process.execPath, args: [path.join(root, "test", "support", "mcpServer.mjs")] } }
    }))
    const result = await runCli(["run", "--base-url", server.url, "--model", "m", "--workspace", workspace, "--ephemeral", "--tools", "kv__*", "look"], { env })
    expect(result.code).toBe(0)
    expect(server.requests[0]!.body.tools.map((t: any) => t.function.name)).toEqual(["lookup", "put"])
    expect(server.requests[1]!.body.messages.at(-1)).toMatchObject({ role: "tool", content: "a=alpha" })
  })
})

describe.concurrent("trust commands", () => {
  it("trust records a directory, --list shows it, untrust forgets it", async () => {
    const home = tempDir()
    const env = isolatedEnv(home)
    const dir = path.join(home, "ws")
    fs.mkdirSync(dir)
    const trusted = await runCli(["trust", dir], { env })
    expect([trusted.code, trusted.stderr]).toEqual([0, `trusted ${dir}: its file hooks, settings and MCP config will be used\n`])
    expect((await runCli(["trust", "--list"], { env })).stdout).toBe(`${dir}\n`)
    const again = await runCli(["untrust", dir], { env })
    expect(again.stderr).toBe(`no longer trusted: ${dir}\n`)
    expect((await runCli(["trust", "--list"], { env })).stdout).toBe("")
    const missing = await runCli(["trust", path.join(home, "nope")], { env })
    expect([missing.code, missing.stderr]).toEqual([1, `agent-loop: no such directory: ${path.join(home, "nope")}\n`])
  })
})
