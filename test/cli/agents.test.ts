/**
 * Sub-agents from Markdown files, end to end through the CLI process against the scripted server
 * on 127.0.0.1: the `subagent` tool's description lists the user's and a trusted workspace's
 * agents, the model picks one by name and its sub-turn runs with that agent's prompt, model and
 * tools (never more than the parent's); an untrusted workspace's agents are left out; `agents
 * list` shows them and the files skipped.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { cliSetup, isolatedEnv, runCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import type { Script } from "../support/openaiServer.ts"

/** A server, a home with a user agent, and a workspace with two agents of its own. */
const setup = (context: TestContext, script: Script) =>
  cliSetup(context, script, {
    files: {
      "config/agent-loop/agents/helper.md": "---\ndescription: Answers general questions\n---\nYou are the user's helper.\n",
      "ws/.claude/agents/reviewer.md":
        "---\nname: reviewer\ndescription: Reviews code for bugs\ntools: Read, Grep, Bash\nmodel: review-model\n---\nYou review code. Be terse.\n",
      "ws/.agent-loop/agents/broken.md": "---\nname: broken\n---\nNo description.\n"
    }
  })

const SLOW = 120_000
const subagentTool = (body: any) => body.tools?.find((tool: any) => tool.function.name === "subagent")?.function

describe("sub-agents from files", () => {
  it("the model picks a trusted workspace's agent by name: its sub-turn gets the agent's prompt, model and tools within the parent's", async (context) => {
    const { server, workspace, env, flags } = await setup(context, [
      { toolCalls: [{ name: "subagent", arguments: { agent: "reviewer", task: "Review main.ts" } }] },
      { text: "Looks fine." },
      { text: "The reviewer says it looks fine." }
    ])
    expect((await runCli(["trust", workspace], { env })).code).toBe(0)
    // exec is not among the parent's tools, so the reviewer's Bash is not given to it either
    const result = await runCli(["run", ...flags, "--tools", "read_file,grep,list_dir", "review it"], { env })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain(`skipped agent ${path.join(workspace, ".agent-loop", "agents", "broken.md")}: description:`)
    expect(result.stdout).toContain("The reviewer says it looks fine.")

    const tool = subagentTool(server.requests[0]!.body)
    expect(tool.description).toContain("- helper: Answers general questions")
    expect(tool.description).toContain("- reviewer: Reviews code for bugs")
    expect(tool.description).not.toContain("broken")
    expect(tool.parameters.properties.agent.type).toBe("string")

    const sub = server.requests[1]!.body
    expect(sub.model).toBe("review-model")
    expect(sub.messages[0]).toEqual({ role: "system", content: "You review code. Be terse." })
    expect(sub.messages.at(-1)).toEqual({ role: "user", content: "Review main.ts" })
    expect(sub.tools.map((t: any) => t.function.name).sort()).toEqual(["grep", "read_file"])

    const back = server.requests[2]!.body
    expect(back.model).toBe("fake-model")
    expect(back.messages.at(-1)).toMatchObject({ role: "tool", content: "Looks fine." })
  }, SLOW)

  it("Claude Code's agent files in ~/.claude/agents: an alias the provider has no model for is skipped saying so, never sent; inherit is the caller's model", async (context) => {
    const server = await import("../support/openaiServer.ts").then((m) => m.start([
      { toolCalls: [{ name: "subagent", arguments: { subagent_type: "inheritor", prompt: "Check it" } }] },
      { text: "Checked." },
      { text: "Done." }
    ]))
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const write = (file: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(home, file)), { recursive: true })
      fs.writeFileSync(path.join(home, file), text)
    }
    write(".claude/agents/fast.md", "---\nname: fast\ndescription: Quick answers\nmodel: haiku\n---\nBe quick.\n")
    write(".claude/agents/inheritor.md", "---\nname: inheritor\ndescription: Checks things\nmodel: inherit\ntools: Read, Grep\n---\nCheck.\n")
    fs.mkdirSync(path.join(home, "ws"))
    const env = isolatedEnv(home, { HOME: home })
    const result = await runCli(["run", "--base-url", server.url, "--model", "fake-model", "--workspace", path.join(home, "ws"), "check"], { env })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toMatch(/skipped agent \S*fast\.md: model "haiku" is a Claude Code alias, and provider \S+ has no haiku model/)
    const tool = subagentTool(server.requests[0]!.body)
    expect(tool.description).toContain("- inheritor: Checks things")
    expect(tool.description).not.toContain("fast")
    // the model called it with Claude Code's Task shape; the sub-turn runs on the caller's model
    expect(server.requests[1]!.body.model).toBe("fake-model")
    expect(server.requests[1]!.body.messages.at(-1)).toEqual({ role: "user", content: "Check it" })
    expect(server.requests.map((r) => r.body.model)).not.toContain("haiku")
  }, SLOW)

  it("an unknown agent is an error the model sees; an untrusted workspace's agents are left out", async (context) => {
    const { server, env, flags } = await setup(context, [
      { toolCalls: [{ name: "subagent", arguments: { agent: "reviewer", task: "Review" } }] },
      { text: "No such agent, then." }
    ])
    const result = await runCli(["run", ...flags, "review it"], { env })
    expect(result.code, result.stderr).toBe(0)
    const tool = subagentTool(server.requests[0]!.body)
    expect(tool.description).toContain("- helper: Answers general questions")
    expect(tool.description).not.toContain("reviewer")
    expect(server.requests).toHaveLength(2)
    expect(server.requests[1]!.body.messages.at(-1).content).toBe("No agent named \"reviewer\"; the agents are: helper")
  }, SLOW)

  it("without agent files there is no subagent tool; agents list shows the agents and the files skipped", async (context) => {
    const { server, workspace, env } = await setup(context, [{ text: "ok" }, { text: "ok" }])
    const bare = tempDir()
    const plain = await runCli(["run", "--base-url", server.url, "--model", "fake-model", "--workspace", bare, "hi"], {
      env: isolatedEnv(bare)
    })
    expect(plain.code, plain.stderr).toBe(0)
    expect(subagentTool(server.requests[0]!.body)).toBeUndefined()
    // agent files, but every tool turned off: no subagent tool either
    const none = await runCli(["run", "--base-url", server.url, "--model", "fake-model", "--workspace", workspace, "--tools", "", "hi"], { env })
    expect(none.code, none.stderr).toBe(0)
    expect(server.requests[1]!.body.tools ?? []).toEqual([])

    const untrusted = await runCli(["agents", "list", "--workspace", workspace], { env })
    expect(untrusted.stdout).toMatch(/^helper {2}Answers general questions {2}tools: the caller's {2}.*helper\.md\n$/)
    expect(untrusted.stderr).toContain(`workspace ${workspace} is not trusted, so the agents in its .claude/agents and .agent-loop/agents were skipped`)

    expect((await runCli(["trust", workspace], { env })).code).toBe(0)
    const listed = await runCli(["agents", "list"], { env, cwd: workspace })
    expect(listed.stdout.split("\n")).toEqual([
      expect.stringMatching(/^helper {2}Answers general questions {2}tools: the caller's {2}.*helper\.md$/),
      expect.stringMatching(/^reviewer {2}Reviews code for bugs {2}model review-model {2}tools: read_file, grep, exec {2}.*reviewer\.md$/),
      ""
    ])
    expect(listed.stderr).toContain(`skipped ${path.join(workspace, ".agent-loop", "agents", "broken.md")}: description:`)
  }, SLOW)
})
