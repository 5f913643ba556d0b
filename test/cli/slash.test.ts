/**
 * Slash commands end to end through the CLI process against the scripted server on 127.0.0.1:
 * `run /NAME args` runs a custom command's prompt with its model and narrowed tools; an unknown
 * one fails saying so. In `chat` on a real terminal (tmux): `/help` lists custom commands,
 * `/model` switches the model of the next turns, `/cost` sums the turns' tokens, and a custom
 * command runs with `$ARGUMENTS` substituted, one with `tools` narrowing that turn's tools
 * alone; `/tools` lists the tools and `/undo` undoes the last turn, a refusal printed without
 * quitting. The tmux part is skipped, saying so, without tmux.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { cliSetup, launcher, root, runCli, type TestContext } from "../support/cliProcess.ts"
import type { Script } from "../support/openaiServer.ts"
import { hasTmux, startPane } from "../support/tmux.ts"

/** A server, a home with a user command, and a workspace with a command of its own. */
const setup = (context: TestContext, script: Script) =>
  cliSetup(context, script, {
    files: {
      "config/agent-loop/commands/greet.md": "---\ndescription: Greets someone\nargument-hint: NAME\n---\nSay hello to $ARGUMENTS, then to $2.\n",
      "ws/.claude/commands/review.md": "---\ndescription: Reviews a file\nmodel: review-model\ntools: Read, Bash\n---\nReview $1.\n",
      "config/agent-loop/commands/broken.md": "---\ndisable-model-invocation: maybe\n---\nBroken.\n"
    }
  })

const SLOW = 120_000
// four CLI starts one after another and a command run by exec: 111 s on a machine loaded to ten times its cores
const MANY = 300_000
const toolNames = (body: any) => (body.tools ?? []).map((tool: any) => tool.function.name).sort()
const lastUser = (body: any) => body.messages.filter((m: any) => m.role === "user").at(-1).content

describe("run /NAME", () => {
  it("runs a user command's prompt with the arguments substituted", async (context) => {
    const { env, flags, server } = await setup(context, [{ text: "Hello." }])
    const result = await runCli(["run", ...flags, "/greet", "Ada Bob"], { env })
    expect(result.code, result.stderr).toBe(0)
    expect(lastUser(server.requests[0]!.body)).toBe("Say hello to Ada Bob, then to Bob.")
    expect(server.requests[0]!.body.model).toBe("fake-model")
  }, SLOW)

  it("a trusted workspace's command runs with its model and only the enabled tools it allows; untrusted, it is unknown", async (context) => {
    const { env, flags, server, workspace } = await setup(context, [{ text: "Reviewed." }])
    const untrusted = await runCli(["run", ...flags, "/review", "main.ts"], { env })
    expect(untrusted.code).not.toBe(0)
    expect(untrusted.stderr).toContain("unknown command /review; custom commands: /greet")
    expect(server.requests).toHaveLength(0)
    // a file that was skipped says why, before the command is called unknown
    const broken = await runCli(["run", ...flags, "/broken"], { env })
    expect(broken.code).not.toBe(0)
    expect(broken.stderr).toMatch(/warn: skipped command \S*broken\.md: disable-model-invocation: [^\n]*\n[\s\S]*unknown command \/broken/)
    expect((await runCli(["trust", workspace], { env })).code).toBe(0)
    // exec is not enabled, so the command's Bash does not add it
    const result = await runCli(["run", ...flags, "--tools", "read_file,grep", "/review", "main.ts"], { env })
    expect(result.code, result.stderr).toBe(0)
    const body = server.requests[0]!.body
    expect(lastUser(body)).toBe("Review main.ts.")
    expect(body.model).toBe("review-model")
    expect(toolNames(body)).toEqual(["read_file"])
  }, SLOW)

  it("a namespaced command's !`cmd` lines run pre-approved by its allowed-tools and @files are inlined; its turn is pre-approved too", async (context) => {
    const commit = "---\nallowed-tools: Bash(echo:*), Bash(git status:*)\nargument-hint: [message] [scope]\n---\n" +
      "Status: !`echo status-$2`\nNotes: @notes.md\nCommit with $1.\n"
    const { env, flags, server, workspace } = await setup(context, (_request, index) =>
      index === 0 ? { toolCalls: [{ name: "exec", arguments: { command: "echo from-model" } }] } : { text: "Committed." })
    fs.mkdirSync(path.join(workspace, ".claude", "commands", "git"), { recursive: true })
    fs.writeFileSync(path.join(workspace, ".claude", "commands", "git", "commit.md"), commit)
    fs.writeFileSync(path.join(workspace, ".claude", "commands", "git", "unapproved.md"), "Now: !`uname -a`\n")
    fs.writeFileSync(path.join(workspace, ".claude", "commands", "leak.md"), "Read @../secret.txt\n")
    fs.writeFileSync(path.join(workspace, "notes.md"), "the notes, with !`echo never-run`\n")
    expect((await runCli(["trust", workspace], { env })).code).toBe(0)
    const result = await runCli(["run", ...flags, "--tools", "read_file,exec", "/git:commit", "fix", "api"], { env })
    expect(result.code, result.stderr).toBe(0)
    const prompt = lastUser(server.requests[0]!.body)
    expect(prompt).toContain("Status: status-api\nNotes: @notes.md\n<file path=\"notes.md\">\nthe notes, with !`echo never-run`\n")
    expect(prompt).toContain("Commit with fix.")
    // the model's exec call is approved by the command's Bash(echo:*) with no terminal to ask
    const toolResult = server.requests[1]!.body.messages.find((m: any) => m.role === "tool")
    expect(toolResult.content).toContain("from-model")
    expect(result.stderr).not.toContain("denied")
    // not pre-approved: refused with the rule to add, nothing sent; outside the workspace: refused
    const refused = await runCli(["run", ...flags, "--tools", "exec", "/unapproved"], { env })
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toMatch(/\/git:unapproved: !`uname -a` is not pre-approved: add Bash\(uname -a:\*\) to allowed-tools in \S+unapproved\.md/)
    const leak = await runCli(["run", ...flags, "/leak"], { env })
    expect(leak.code).not.toBe(0)
    expect(leak.stderr).toContain("/leak: @../secret.txt is outside the workspace")
    expect(server.requests).toHaveLength(2)
  }, MANY)

  it("a path is a prompt, not a command; other prompts are one argument", async (context) => {
    const { env, flags, server } = await setup(context, [{ text: "A hosts file." }])
    const result = await runCli(["run", ...flags, "/etc/hosts: what is it?"], { env })
    expect(result.code, result.stderr).toBe(0)
    expect(lastUser(server.requests[0]!.body)).toBe("/etc/hosts: what is it?")
    const split = await runCli(["run", ...flags, "what", "is", "it"], { env })
    expect(split.code).not.toBe(0)
    expect(split.stderr).toContain("a prompt is one argument: quote it")
    expect(server.requests).toHaveLength(1)
  }, SLOW)
})

describe.skipIf(!hasTmux)(hasTmux ? "chat slash commands (tmux)" : "chat slash commands: SKIPPED because tmux is not installed (apt-get install -y tmux)", () => {
  it("/help lists custom commands; /model switches the next turns' model; /cost sums the tokens; a custom command substitutes $ARGUMENTS", async (context) => {
    const { env, flags, server } = await setup(context, [
      { text: "First.", usage: { prompt: 100, completion: 20 } },
      { text: "Second.", usage: { prompt: 50, completion: 5 } }
    ])
    const pane = startPane([process.execPath, launcher, "chat", ...flags], env, root)
    context.onTestFinished(() => pane.kill())
    await pane.waitFor(/^> $/m)
    pane.line("/help")
    await pane.waitFor(/\/greet NAME\s+Greets someone/)
    for (const usage of [/\/model \[NAME\]/, /\/compact /, /\/clear /, /\/sessions /, /\/resume \[KEY\] /]) expect(pane.capture()).toMatch(usage)
    pane.line("/nope")
    await pane.waitFor(/unknown command \/nope; \/help lists them/)
    pane.line("/greet Ada Bob")
    await pane.waitFor(/First\./)
    await pane.waitFor(/── completed[^\n]*\n> $/m)
    pane.line("/model other-model")
    await pane.waitFor(/model other-model for the next turns/)
    pane.line("and again")
    await pane.waitFor(/Second\./)
    pane.line("/cost")
    await pane.waitFor(/2 turns: 150 input tokens, 25 output tokens/)
    expect(server.requests.map((r) => [r.body.model, lastUser(r.body)])).toEqual([
      ["fake-model", "Say hello to Ada Bob, then to Bob."],
      ["other-model", "and again"]
    ])
  }, SLOW)

  it("a command's tools narrow the tools of its turn only, never adding one not enabled", async (context) => {
    const { env, flags, server, workspace } = await setup(context, [{ text: "Reviewed." }, { text: "Plain." }])
    expect((await runCli(["trust", workspace], { env })).code).toBe(0)
    const pane = startPane([process.execPath, launcher, "chat", ...flags, "--tools", "read_file,grep"], env, root)
    context.onTestFinished(() => pane.kill())
    await pane.waitFor(/^> $/m)
    pane.line("/review main.ts")
    await pane.waitFor(/Reviewed\.\n── completed[^\n]*\n> $/m)
    pane.line("and now?")
    await pane.waitFor(/Plain\.\n── completed[^\n]*\n> $/m)
    expect(server.requests.map((r) => [r.body.model, lastUser(r.body), toolNames(r.body)])).toEqual([
      ["review-model", "Review main.ts.", ["read_file"]],
      ["fake-model", "and now?", ["grep", "read_file"]]
    ])
  }, SLOW)

  it("/tools lists the tools offered; /undo puts back the last turn's files, and a refusal is printed without quitting", async (context) => {
    const { env, flags, server, workspace } = await setup(context, [
      { toolCalls: [{ name: "write_file", arguments: { path: "new.txt", content: "created\n" } }] },
      { text: "Written." }
    ])
    const pane = startPane([process.execPath, launcher, "chat", ...flags, "--tools", "read_file,write_file"], env, root)
    context.onTestFinished(() => pane.kill())
    await pane.waitFor(/^> $/m)
    pane.line("/tools")
    await pane.waitFor(/tools: read_file, write_file/)
    pane.line("/undo")
    await pane.waitFor(/✗ [^\n]+\n> $/m)
    pane.line("write it")
    await pane.waitFor(/Written\.\n── completed[^\n]*\n> $/m)
    expect(fs.readFileSync(path.join(workspace, "new.txt"), "utf8")).toBe("created\n")
    pane.line("/undo")
    await pane.waitFor(/undid turn /)
    expect(pane.capture()).toMatch(/restored \S*new\.txt/)
    expect(fs.existsSync(path.join(workspace, "new.txt"))).toBe(false)
    expect(server.requests).toHaveLength(2)
  }, SLOW)
})
