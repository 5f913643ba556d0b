/**
 * The inspector beside a command: `chat --inspect 0` serves the page on 127.0.0.1 and the turns the
 * chat runs stream into it as server-sent events, against a scripted OpenAI-compatible server.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { cliSetup, runCli, spawnCli } from "../support/cliProcess.ts"
import { connectEvents } from "../support/inspector.ts"

describe("chat --inspect", () => {
  it("prints the page's URL and streams the chat's turn into its events", async (context) => {
    const { flags, env } = await cliSetup(context, [{ text: ["Hello ", "there."] }])
    const cli = spawnCli(["chat", ...flags, "--inspect", "0"], { env, stdin: true })
    try {
      await cli.waitFor(/inspector at http:\/\/127\.0\.0\.1:\d+\/\?token=\S+\n/, "stderr")
      const url = /inspector at (\S+)/.exec(cli.stderr())![1]!
      const page = await fetch(url, { signal: AbortSignal.timeout(30_000) })
      expect(page.status).toBe(200)
      const events = await connectEvents(new URL(url).origin, new URL(url).searchParams.get("token")!)
      cli.child.stdin!.write("hi\n")
      const seen = (await events.until((all) => all.some((e) => JSON.parse(e.data)._tag === "TurnEnd"))).map((e) => JSON.parse(e.data))
      expect(seen[0]._tag).toBe("TurnStart")
      expect(seen[0].input).toBe("hi")
      expect(seen.filter((e) => e._tag === "LLMDelta").map((e) => e.text).join("")).toBe("Hello there.")
      expect(seen.at(-1)).toMatchObject({ _tag: "TurnEnd", status: "completed" })
      cli.child.stdin!.end()
      expect((await cli.exited).code).toBe(0)
    } finally {
      cli.child.kill("SIGTERM")
    }
  })
})

describe("--events files in the inspector", () => {
  it("sessions export --events gives the recorded turns timelines with times, once each", async (context) => {
    const { flags, env, home } = await cliSetup(context, [{ text: "Answer." }])
    const events = path.join(home, "events.jsonl")
    const ran = await runCli(["run", ...flags, "--session", "rec", "--events", events, "hello"], { env })
    expect(ran.code).toBe(0)
    const out = path.join(home, "rec.html")
    const exported = await runCli(["sessions", "export", "rec", "--html", out, "--events", events], { env })
    expect(exported.code).toBe(0)
    const data = JSON.parse(/<script type="application\/json" id="inspector-data">(.*?)<\/script>/s.exec(fs.readFileSync(out, "utf8"))![1]!)
    expect(data.session.turns.map((t: any) => t.source)).toEqual(["events"])
    const timeline = data.timelines[data.session.turns[0].id]
    expect(timeline.source).toBe("events")
    expect(timeline.rows.map((r: any) => r.kind)).toEqual(["turn", "model"])
  })

  it("sessions export --events lists each turn once, long prompts too, under a header with the model, time, tokens and cost", async (context) => {
    const { flags, env, home } = await cliSetup(context, [{ text: "First answer.", usage: { prompt: 1200, completion: 30 } }, { text: "Second answer.", usage: { prompt: 1300, completion: 40 } }])
    const events = (n: number) => path.join(home, `events-${n}.jsonl`)
    const long = (n: number) => `Turn ${n}: please read every file in this workspace and summarise what the project does, in detail.`
    for (const n of [1, 2]) expect((await runCli(["run", ...flags, "--session", "long", "--events", events(n), long(n)], { env })).code).toBe(0)
    const out = path.join(home, "long.html")
    expect((await runCli(["sessions", "export", "long", "--html", out, "--events", events(1), "--events", events(2)], { env })).code).toBe(0)
    const html = fs.readFileSync(out, "utf8")
    const data = JSON.parse(/<script type="application\/json" id="inspector-data">(.*?)<\/script>/s.exec(html)![1]!)
    // one timeline per turn: the recorded ones, no log turn beside them
    expect(data.session.turns.map((t: any) => t.source)).toEqual(["events", "events"])
    const header = /<dl id="session-summary">(.*?)<\/dl>/s.exec(html)![1]!.replace(/<[^>]+>/g, " ")
    expect(header).toMatch(/Model\s+fake-model/)
    expect(header).toMatch(/Turns\s+2/)
    expect(header).toMatch(/Tokens\s+2,500 in \/ 70 out tokens/)
    expect(header).toMatch(/Time\s+\d{4}-\d\d-\d\dT/)
  })

  it("sessions export --format md prints a plain transcript with its header; --output writes it private", async (context) => {
    const { flags, env, home } = await cliSetup(context, [
      { toolCalls: [{ name: "list_dir", arguments: { path: "." }, id: "call_1" }], usage: { prompt: 100, completion: 10 } },
      { text: "The workspace is empty. ```not a fence```", usage: { prompt: 120, completion: 12 } }
    ])
    expect((await runCli(["run", ...flags, "--tools", "list_dir", "--session", "md", "What is here?"], { env })).code).toBe(0)
    const printed = await runCli(["sessions", "export", "md", "--format", "md"], { env })
    expect(printed.code, printed.stderr).toBe(0)
    const md = printed.stdout
    expect(md.startsWith("# Session md\n")).toBe(true)
    expect(md).toContain("- **Model:** fake-model")
    expect(md).toContain("- **Tokens:** 220 in / 22 out tokens")
    expect(md).toContain("## User\n\nWhat is here?")
    expect(md).toContain("**Tool call** `list_dir` (call_1)\n\n```json\n{\n  \"path\": \".\"\n}\n```")
    expect(md).toMatch(/### Tool result `list_dir` \(call_1\)\n\n```/)
    expect(md).toContain("## Assistant\n\nThe workspace is empty. ```not a fence```")
    expect(md).toMatch(/> Turn completed · fake-model · 2 iteration\(s\) · 220 in \/ 22 out tokens/)
    const out = path.join(home, "md.md")
    expect((await runCli(["sessions", "export", "md", "--format", "md", "-o", out], { env })).code).toBe(0)
    expect(fs.readFileSync(out, "utf8")).toBe(md)
    expect(fs.statSync(out).mode & 0o777).toBe(0o600)
    const neither = await runCli(["sessions", "export", "md"], { env })
    expect(neither.code).toBe(1)
    expect(neither.stderr).toContain("needs --html FILE, or --format md")
  })

  it("refuses an events file with a line that is not an event, naming the file and line", async (context) => {
    const { env, home } = await cliSetup(context, [])
    const bad = path.join(home, "bad.jsonl")
    fs.writeFileSync(bad, `{"_tag":"TurnStart"}\n`)
    const ui = await runCli(["ui", "--no-open", "--events", bad], { env })
    expect(ui.code).toBe(1)
    expect(ui.stderr).toContain(`${bad}:1: not an event`)
    expect(ui.stderr).not.toContain("inspector at")
  })
})
