/**
 * Sessions where you are, end to end through the CLI process against the scripted server on
 * 127.0.0.1: sessions record the workspace they were started in, `--continue` continues this
 * workspace's last session (never another project's), `sessions list` shows this workspace's by
 * default and every one with `--all` (sessions saved before workspaces were recorded included),
 * `--resume=KEY` resumes a session, and a bare `--resume` offers a picker on a terminal (tmux).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { fileName } from "../../src/layers/internal/sessionStoreJsonlNames.ts"
import { isolatedEnv, launcher, runCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import { type Script, start } from "../support/openaiServer.ts"
import { hasTmux, startPane } from "../support/tmux.ts"

/** A server, a home with two workspaces, and `run` in one of them. */
const setup = async (context: TestContext, script: Script, store: "sqlite" | "jsonl" = "sqlite") => {
  const server = await start(script)
  context.onTestFinished(() => server.close())
  const home = tempDir()
  const a = path.join(home, "project-a")
  const b = path.join(home, "project-b")
  fs.mkdirSync(a)
  fs.mkdirSync(b)
  const env = isolatedEnv(home, { AGENT_LOOP_STORE: store })
  const base = ["--base-url", server.url, "--model", "fake-model"]
  const run = async (workspace: string, args: ReadonlyArray<string>) => {
    const result = await runCli(["run", ...base, ...args], { env, cwd: workspace })
    expect(result.code, result.stderr).toBe(0)
    return result
  }
  return { server, home, a, b, env, base, run, data: path.join(home, "data") }
}

const TIME = "\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d"
const SLOW = 120_000
const contents = (body: any): ReadonlyArray<string> => body.messages.slice(1).map((m: any) => m.content)

describe("sessions where you are", () => {
  it("--continue continues this workspace's last session, not the one used last on the machine", async (context) => {
    const { server, a, b, run } = await setup(context, [{ text: "A1" }, { text: "B1" }, { text: "A2" }, { text: "B2" }])
    await run(a, ["--session", "in-a", "question in a"])
    await run(b, ["--session", "in-b", "question in b"])
    await run(a, ["--continue", "again in a"])
    expect(contents(server.requests[2]!.body)).toEqual(["question in a", "A1", "again in a"])
    await run(b, ["--workspace", b, "--continue", "again in b"])
    expect(contents(server.requests[3]!.body)).toEqual(["question in b", "B1", "again in b"])
  }, SLOW)

  it("sessions list: this workspace's by default, --workspace DIR, --all with a workspace column; old sessions only under --all", async (context) => {
    const { home, a, b, env, run, data } = await setup(context, [{ text: "A1" }, { text: "B1" }], "jsonl")
    await run(a, ["--session", "in-a", "question in a"])
    await run(b, ["--session", "in-b", "question in b"])
    // a session saved before sessions recorded their workspace: no metadata record
    const old = [{ sessionKey: "old" }, { role: "user", content: "an old question" }, { role: "assistant", content: "old answer" }]
    fs.writeFileSync(path.join(data, "sessions", fileName("old")), old.map((e) => JSON.stringify(e)).join("\n") + "\n")

    const here = await runCli(["sessions", "list"], { env, cwd: a })
    expect(here.stdout).toMatch(new RegExp(`^\\* in-a  ${TIME}  2 messages  question in a\n$`))
    const other = await runCli(["sessions", "list", "--workspace", b], { env, cwd: a })
    expect(other.stdout).toMatch(new RegExp(`^\\* in-b  ${TIME}  2 messages  question in b\n$`))
    const all = await runCli(["sessions", "list", "--all"], { env, cwd: a })
    const lines = all.stdout.trimEnd().split("\n").sort()
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatch(new RegExp(`^  in-b  ${b}  ${TIME}  2 messages  question in b$`))
    expect(lines[1]).toMatch(new RegExp(`^  old  -  ${TIME}  2 messages  an old question$`))
    expect(lines[2]).toMatch(new RegExp(`^\\* in-a  ${a}  ${TIME}  2 messages  question in a$`))
    const none = await runCli(["sessions", "list"], { env, cwd: home })
    expect(none.stdout).toBe("")
    expect(none.stderr).toBe(`no sessions of ${home} in ${path.join(data, "sessions")} (--all lists every workspace's)\n`)
  }, SLOW)

  it("--resume=KEY resumes that session; a bare --resume without a terminal and clashing flags fail with one line", async (context) => {
    const { server, a, b, env, base, run } = await setup(context, [{ text: "A1" }, { text: "again" }])
    await run(a, ["--session", "in-a", "question in a"])
    await run(b, ["--resume=in-a", "from b"])
    expect(contents(server.requests[1]!.body)).toEqual(["question in a", "A1", "from b"])
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      [["--resume"], "agent-loop: --resume without a key needs a terminal to pick on: pass --resume=KEY (agent-loop sessions list --all shows them)"],
      [["--resume=x", "--continue"], "agent-loop: --resume and --continue cannot be used together"],
      [["--session", "x", "--continue"], "agent-loop: --session and --continue cannot be used together"]
    ]
    for (const [extra, message] of cases) {
      // the prompt first: `--resume hi` is Claude Code's `--resume KEY`, resuming session "hi"
      const result = await runCli(["run", ...base, "hi", ...extra], { env, cwd: a })
      expect(result.code).toBe(1)
      expect(result.stderr.trimEnd().split("\n").at(-1)).toBe(message)
    }
    expect(server.requests).toHaveLength(2)
  }, SLOW)

  describe.skipIf(!hasTmux)("on a terminal (tmux)", () => {
    it("a bare --resume offers this workspace's sessions first; arrow keys or a number pick one", async (context) => {
      const { server, a, b, env, base, run } = await setup(context, [
        { text: "A1" },
        { text: "A2" },
        { text: "B1" },
        { text: "picked by arrows" },
        { text: "picked by number" }
      ])
      await run(a, ["--session", "older-a", "first in a"])
      await run(a, ["--session", "newer-a", "second in a"])
      await run(b, ["--session", "in-b", "only in b"])

      const pick = async (keys: ReadonlyArray<string>, prompt: string, offered: ReadonlyArray<RegExp>) => {
        const pane = startPane([process.execPath, launcher, "chat", ...base, "--resume"], env, a)
        context.onTestFinished(() => pane.kill())
        const shown = await pane.waitFor(/type a number/)
        for (const line of offered) expect(shown).toMatch(line)
        pane.keys(...keys)
        await pane.waitFor(/^> $/m)
        pane.line(prompt)
        await pane.waitFor(/── completed/)
        pane.line("/exit")
        expect(await pane.exitStatus()).toBe(0)
      }
      // this workspace's, newest first, then the other workspace's, marked with where it is
      await pick(["Down", "Enter"], "continue the older", [
        /> +1 .*1 turn  second in a\n/,
        / 2 .*1 turn  first in a\n/,
        new RegExp(` 3 .*1 turn  only in b  \\(${b}\\)\n`)
      ])
      expect(contents(server.requests.at(-1)!.body)).toEqual(["first in a", "A1", "continue the older"])
      // the session just continued is now this workspace's newest
      await pick(["3", "Enter"], "continue b", [/> +1 .*2 turns  first in a\n/, / 2 .*1 turn  second in a\n/])
      expect(contents(server.requests.at(-1)!.body)).toEqual(["only in b", "B1", "continue b"])
    }, SLOW)
  })
})

