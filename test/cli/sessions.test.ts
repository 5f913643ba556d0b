/**
 * `agent-loop sessions list|show` end to end, through the real CLI process against the scripted
 * OpenAI-compatible server on 127.0.0.1: what list shows (and how it survives a corrupt file),
 * `show` (the context) against `show --all` (the whole log, compaction marked), stored escape
 * sequences never reaching the terminal, and the data directory's permissions. On the JSON Lines
 * store (`AGENT_LOOP_STORE=jsonl`), whose files the tests look at and damage; the default SQLite
 * store has the same checks in `stores.test.ts`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { fileName } from "../../src/layers/internal/sessionStoreJsonlNames.ts"
import { isolatedEnv, runCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import { type Script, start } from "../support/openaiServer.ts"

/** A server and a home whose commands use the JSON Lines store; `run` runs one turn in a session. */
const setup = async (context: TestContext, script: Script) => {
  const server = await start(script)
  context.onTestFinished(() => server.close())
  const home = tempDir()
  const env = isolatedEnv(home, { AGENT_LOOP_STORE: "jsonl" })
  const flags = ["--base-url", server.url, "--model", "fake-model", "--workspace", home]
  const run = async (session: string, prompt: string) => {
    const result = await runCli(["run", ...flags, "--session", session, prompt], { env })
    expect(result.code, result.stderr).toBe(0)
  }
  const data = path.join(home, "data")
  return { server, env, run, data, home, sessions: path.join(data, "sessions") }
}

const TIME = "\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d"

/** Anything a terminal would act on: ESC, CSI, BEL, carriage return, other C0/C1 controls. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/

/** Each test runs the CLI a few times, one process after another (several seconds each on a loaded machine). */
const SLOW = 120_000

describe("agent-loop sessions", () => {
  it("list: last used first, with time, message count and the first question; escapes in stored text stripped", async (context) => {
    const { env, run, sessions, home } = await setup(context, [{ text: "one" }, { text: "two" }])
    await run("older", "plain question")
    await run("newer", "\u001b[31mred\u001b[0m \u001b]0;pwned title\u0007question\r with a carriage return")
    fs.utimesSync(path.join(sessions, fileName("older")), 1_600_000_000, 1_600_000_000)
    const listed = await runCli(["sessions", "list"], { env, cwd: home })
    expect(listed.code).toBe(0)
    expect(listed.stdout).not.toMatch(CONTROL)
    expect(listed.stdout.split("\n")).toEqual([
      expect.stringMatching(new RegExp(`^\\* newer  ${TIME}  2 messages  red question with a carriage return$`)),
      expect.stringMatching(new RegExp(`^  older  2020-09-1\\d \\d\\d:\\d\\d  2 messages  plain question$`)),
      ""
    ])
   }, SLOW)

  it("list with a corrupt session file lists the others and marks that one with its problem", async (context) => {
    const { env, run, sessions, home } = await setup(context, [{ text: "one" }, { text: "two" }])
    await run("good", "fine question")
    await run("broken", "another question")
    const file = path.join(sessions, fileName("broken"))
    const lines = fs.readFileSync(file, "utf8").split("\n")
    lines[2] = "{\"role\":\"user\",\"con"
    fs.writeFileSync(file, lines.join("\n"))
    const listed = await runCli(["sessions", "list", "--workspace", home], { env })
    expect(listed.code).toBe(0)
    expect(listed.stdout).toMatch(new RegExp(`^  good  ${TIME}  2 messages  fine question$`, "m"))
    expect(listed.stdout).toContain(`* broken  unreadable: session file ${fileName("broken")}: line 3 of 5 is corrupt\n`)
   }, SLOW)

  it("show prints the context after an overflow; show --all the whole log with the compaction record marked", async (context) => {
    const { env, run, server, home } = await setup(context, [
      { text: "First answer." },
      { status: 400, error: "This model's maximum context length is 8192 tokens" },
      { text: "Second \u001b[2Janswer." }
    ])
    await run("work", "first question")
    await run("work", "second question")
    expect(server.requests[2]!.body.messages.slice(1).map((m: any) => m.content)).toEqual(["second question"])

    const shown = await runCli(["sessions", "show", "work"], { env })
    expect(shown.code).toBe(0)
    expect(shown.stdout).toBe("user: second question\nassistant: Second answer.\n")

    const all = await runCli(["sessions", "show", "work", "--all"], { env })
    expect(all.code).toBe(0)
    // each turn's outcome record is marked after its messages
    const outcome = /^── turn \S+ completed ──$/
    const lines = all.stdout.split("\n")
    expect(lines.map((line) => outcome.test(line) ? "── turn … completed ──" : line)).toEqual([
      "user: first question",
      "assistant: First answer.",
      "── turn … completed ──",
      `── started in ${home} ──`,
      "user: second question",
      "assistant: Second answer.",
      "── compaction (overflow): 2 messages left in the context ──",
      "── turn … completed ──",
      ""
    ])
   }, SLOW)

  it("show --all of a summarised session prints the summary; show of an unknown key fails with one line", async (context) => {
    const { env, sessions } = await setup(context, [])
    fs.mkdirSync(sessions, { recursive: true })
    const entries = [
      { sessionKey: "sum" },
      { role: "user", content: "u1" },
      { role: "assistant", content: "a1" },
      { role: "user", content: "u2" },
      { role: "compaction", reason: "summary", cut: 2, summary: "They said \u001b[5mhi\u001b[0m." }
    ]
    fs.writeFileSync(path.join(sessions, fileName("sum")), entries.map((e) => JSON.stringify(e)).join("\n") + "\n")
    const shown = await runCli(["sessions", "show", "sum"], { env })
    expect(shown.stdout).toBe("system: [Summary of the earlier conversation] They said hi.\nuser: u2\n")
    const all = await runCli(["sessions", "show", "--all", "sum"], { env })
    expect(all.stdout).toBe([
      "user: u1",
      "assistant: a1",
      "user: u2",
      "── compaction (summary): 2 messages left in the context ──",
      "summary: They said hi.",
      ""
    ].join("\n"))
    const missing = await runCli(["sessions", "show", "nope"], { env })
    expect(missing.code).toBe(1)
    expect(missing.stderr).toBe("agent-loop: no session \"nope\" (see: agent-loop sessions list)\n")
   }, SLOW)

  it("the data directory and the sessions in it are private, an existing open data directory included", async (context) => {
    const { data, run, sessions } = await setup(context, [{ text: "one" }])
    fs.mkdirSync(data, { mode: 0o755 })
    fs.chmodSync(data, 0o755)
    await run("private", "hello")
    const mode = (file: string) => (fs.statSync(file).mode & 0o777).toString(8)
    const pointers = path.join(data, "last-sessions")
    expect(fs.readdirSync(pointers)).toHaveLength(1)
    const pointer = path.join(pointers, fs.readdirSync(pointers)[0]!)
    expect([mode(data), mode(sessions), mode(path.join(sessions, fileName("private"))), mode(pointers), mode(pointer)])
      .toEqual(["700", "700", "600", "700", "600"])
  }, SLOW)
})
