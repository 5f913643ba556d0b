/**
 * `agent-loop chat` on a real terminal (tmux), against the scripted server on 127.0.0.1: what a
 * typed prompt can ask for besides text (`@path[:from-to]`, `!cmd`, `# note`), the last turns shown
 * again on `--continue`, `/jobs` and the background commands stopped when `/clear` leaves their
 * session and at the chat's end, and `/rewind` (Esc Esc) taking the conversation and the files
 * back to before a message. Skipped, saying so, without tmux.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { cliSetup, launcher, root, runCli } from "../support/cliProcess.ts"
import type { Received, Reply } from "../support/openaiServer.ts"
import { hasTmux, startPane } from "../support/tmux.ts"
import { waitUntil } from "../support/waitUntil.ts"

const SMALL = { columns: 80, rows: 24 }
const WIDE = { columns: 200, rows: 50 }
/** The two terminals a test runs on where the layout or the colours could matter. */
const TERMINALS = [
  { name: "80x24, colour", size: SMALL, env: {} },
  { name: "200x50, NO_COLOR", size: WIDE, env: { NO_COLOR: "1" } }
] as const
// a status line may stand above the prompt: one line is allowed between what is awaited and the prompt
const idle = /── completed[^\n]*\n(?:[^\n]*\n)?> $/m

const users = (request: Received): ReadonlyArray<string> =>
  request.body.messages.filter((m: any) => m.role === "user").map((m: any) => String(m.content))
const lastUser = (request: Received) => users(request).at(-1) ?? ""
const toolResults = (request: Received) => request.body.messages.filter((m: any) => m.role === "tool").length

/** Whether a process whose command line holds `marker` runs on this machine. */
const running = (marker: string) =>
  fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name)).some((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").includes(marker)
    } catch {
      return false
    }
  })

describe.skipIf(!hasTmux)(hasTmux ? "chat prompt syntax, resume, /jobs and /rewind (tmux)" : "chat prompt syntax: SKIPPED because tmux is not installed (apt-get install -y tmux)", () => {
  for (const terminal of TERMINALS) it(`@path:FROM-TO puts those lines in the message, !cmd's output goes with the next one, # note lands in AGENTS.md; a denied @path is refused (${terminal.name})`, async (context) => {
    const { env, flags, server, workspace } = await cliSetup(context, [{ text: "Seen." }], {
      env: terminal.env,
      files: {
        "ws/notes.txt": "line one\nline two\nline three\nline four\n",
        "ws/secret.txt": "hunter2\n",
        "ws/AGENTS.md": "# Project\n",
        "ws/.claude/settings.json": JSON.stringify({ permissions: { deny: ["Read(secret.txt)"] } })
      }
    })
    const pane = startPane([process.execPath, launcher, "chat", ...flags], env, root, terminal.size)
    context.onTestFinished(() => pane.kill())
    await pane.waitFor(/^> $/m)

    pane.line("!echo from-the-shell")
    await pane.waitFor(/the command and its output go with your next message\)\n(?:[^\n]*\n)?> $/m)
    expect(server.requests).toHaveLength(0)
    // the command's line in colour, or plain with NO_COLOR
    if (!("NO_COLOR" in terminal.env)) expect(pane.captureStyled()).toMatch(/\u001b\[36m\$\u001b\[39m \u001b\[1mecho from-the-shell/)
    else expect(pane.captureStyled()).not.toMatch(/\u001b\[(3\d|1)m/)
    pane.line("# always use pnpm")
    await pane.waitFor(/\(noted in AGENTS\.md\)\n(?:[^\n]*\n)?> $/m)
    expect(fs.readFileSync(path.join(workspace, "AGENTS.md"), "utf8")).toBe("# Project\n- always use pnpm\n")
    expect(server.requests).toHaveLength(0)

    pane.line("what does @notes.txt:2-3 say?")
    await pane.waitFor(idle)
    const sent = lastUser(server.requests[0]!)
    expect(sent).toMatch(/^<user-shell-command>\n\$ echo from-the-shell\nfrom-the-shell\n<\/user-shell-command>\n\nwhat does @notes\.txt:2-3 say\?\n\n/)
    expect(sent).toContain(`<file path="notes.txt" lines="2-3">\n     2\tline two\n     3\tline three\n[more lines follow`)
    expect(sent).not.toContain("line one")
    expect(sent).not.toContain("always use pnpm")

    // the deny rule keeps the file out: one line, nothing sent
    pane.line("and @secret.txt?")
    await pane.waitFor(/✗ @secret\.txt is denied by the permission rule Read\(secret\.txt\)/)
    // an @ naming no file is text
    pane.line("ask @nobody about it")
    await pane.waitFor(/── completed[\s\S]*── completed[^\n]*\n(?:[^\n]*\n)?> $/m)
    expect(server.requests).toHaveLength(2)
    expect(lastUser(server.requests[1]!)).toBe("ask @nobody about it")
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })

  it("# note asks once which memory file when there is none, and a pasted '# …' line goes to the model", async (context) => {
    const { env, flags, server, workspace } = await cliSetup(context, [{ text: "Fine." }])
    const pane = startPane([process.execPath, launcher, "chat", ...flags], env, root, SMALL)
    context.onTestFinished(() => pane.kill())
    await pane.waitFor(/^> $/m)
    pane.line("# tabs, not spaces")
    await pane.waitFor(/save notes to 1\) AGENTS\.md or 2\) CLAUDE\.md\? \[1\/2\] $/m)
    pane.line("2")
    await pane.waitFor(/\(noted in CLAUDE\.md\)\n(?:[^\n]*\n)?> $/m)
    pane.line("# and short lines")
    await pane.waitFor(/\(noted in CLAUDE\.md\)[\s\S]*\(noted in CLAUDE\.md\)\n(?:[^\n]*\n)?> $/m)
    expect(fs.readFileSync(path.join(workspace, "CLAUDE.md"), "utf8")).toBe("- tabs, not spaces\n- and short lines\n")
    expect(fs.existsSync(path.join(workspace, "AGENTS.md"))).toBe(false)
    // a paste (bracketed) is never a note
    pane.keys("-l", "\u001b[200~# Heading pasted\u001b[201~")
    pane.keys("Enter")
    await pane.waitFor(idle)
    expect(lastUser(server.requests[0]!)).toBe("# Heading pasted")
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
  })

  for (const noColor of [false, true]) {
    it(`${noColor ? "--resume KEY" : "--continue"} and /resume show the last turns: the messages, the answers${noColor ? " as written (NO_COLOR)" : " rendered as Markdown"} and the tool lines (200x50)`, async (context) => {
      const reply = (request: Received): Reply => {
        const last = lastUser(request)
        if (request.body.messages.at(-1)?.role === "tool") return { text: "The file says **hello**." }
        if (last === "read notes") return { toolCalls: [{ name: "read_file", arguments: { path: "notes.md" } }] }
        return { text: `Answer to ${last}.` }
      }
      const { env, flags, server } = await cliSetup(context, reply, { notes: "hello\n", env: noColor ? { NO_COLOR: "1" } : {} })
      const first = startPane([process.execPath, launcher, "chat", ...flags], env, root, WIDE)
      context.onTestFinished(() => first.kill())
      const key = /session (\S+) · model/.exec(await first.waitFor(/^> $/m))![1]!
      for (const question of ["one", "two", "three", "read notes"]) {
        first.line(question)
        await first.waitFor(new RegExp(`${question === "read notes" ? "hello" : `Answer to ${question}`}[\\s\\S]*── completed[^\\n]*\\n(?:[^\\n]*\\n)?> $`, "m"))
      }
      first.line("/exit")
      expect(await first.exitStatus()).toBe(0)

      const pane = startPane([process.execPath, launcher, "chat", ...(noColor ? ["--resume", key] : ["--continue"]), ...flags], env, root, WIDE)
      context.onTestFinished(() => pane.kill())
      const shown = await pane.waitFor(/^> $/m)
      const replayed = shown.slice(shown.indexOf("where you were"))
      expect(replayed).toMatch(/^where you were: the last 3 turns \(1 before them\) ──\n> two\nAnswer to two\.\n> three\nAnswer to three\.\n> read notes\n⚙ read_file \{"path":"notes\.md"\} ✓\n/)
      expect(replayed).toMatch(noColor ? /The file says \*\*hello\*\*\./ : /The file says hello\./)
      if (!noColor) expect(pane.captureStyled()).toMatch(/\u001b\[1mhello/)
      expect(shown).not.toMatch(/> one\n/)
      const requests = server.requests.length
      pane.line("four")
      // the turn over before /clear, which waits for it otherwise
      await pane.waitFor(/Answer to four\.[\s\S]*── completed[^\n]*\n(?:[^\n]*\n)?> $/m)
      expect(users(server.requests[requests]!)).toEqual(["one", "two", "three", "read notes", "four"])
      // /resume shows them too, up to the turn just taken
      pane.line("/clear")
      await pane.waitFor(/new session \S+;[^\n]*\n(?:[^\n]*\n)?> $/m)
      pane.line(`/resume ${key}`)
      const again = await pane.waitFor(new RegExp(`session ${key}: [^\n]*\n(?:[^\n]*\n)?> $`, "m"))
      expect(again.slice(again.lastIndexOf("where you were"))).toMatch(/^where you were: the last 3 turns \(2 before them\) ──\n> three\n[\s\S]*> read notes\n[\s\S]*> four\nAnswer to four\.\n──\nsession /)
      pane.line("/exit")
      expect(await pane.exitStatus()).toBe(0)
    })
  }

  it("/jobs lists the background commands; /clear stops those of the session it leaves, the chat's end the rest; Esc stops a !cmd", async (context) => {
    const marker = `${Date.now() % 100000}.25`
    const reply = (request: Received): Reply =>
      toolResults(request) === 0
        ? { toolCalls: [{ name: "exec", arguments: { command: `sleep ${marker}`, background: true } }] }
        : { text: "Started it." }
    const { env, flags } = await cliSetup(context, reply, { flags: ["--yes"] })
    const pane = startPane([process.execPath, launcher, "chat", ...flags], env, root, SMALL)
    context.onTestFinished(() => pane.kill())
    await pane.waitFor(/^> $/m)
    // a !cmd that would run long: Esc kills it and gives the prompt back
    pane.line(`!sleep ${marker}5`)
    await waitUntil("the typed command runs", () => running(`sleep ${marker}5`))
    pane.keys("Escape")
    await pane.waitFor(/⏹ stopped: the command was killed; nothing of it goes with your next message\n(?:[^\n]*\n)?> $/m)
    await waitUntil("the typed command is gone", () => !running(`sleep ${marker}5`))
    pane.line("/jobs")
    await pane.waitFor(/no background commands \(exec with background: true starts one\)\n(?:[^\n]*\n)?> $/m)
    pane.line("start a server")
    await pane.waitFor(/Started it\.[\s\S]*── completed[^\n]*\n(?:[^\n]*\n)?> $/m)
    await waitUntil("the background command runs", () => running(`sleep ${marker}`))
    pane.line("/jobs")
    await pane.waitFor(new RegExp(`job-1 +running +\\S+ (ms|s) ago  sleep ${marker.replace(".", "\\.")}\\n\\(they are stopped when the chat ends\\)\\n(?:[^\\n]*\\n)?> $`, "m"))
    // the session left by /clear keeps nothing running
    pane.line("/clear")
    await pane.waitFor(/\(stopped 1 background command of session \S+\)/)
    await waitUntil("the left session's command is gone", () => !running(`sleep ${marker}`))
    pane.line("start a server")
    await waitUntil("the new session's command runs", () => running(`sleep ${marker}`))
    await pane.waitFor(/Started it\.[\s\S]*Started it\.[\s\S]*── completed[^\n]*\n(?:[^\n]*\n)?> $/m)
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
    // the registry's job table closes with the chat: its commands are killed, not left behind
    await waitUntil("the background command is gone", () => !running(`sleep ${marker}`))
  })

  for (const terminal of TERMINALS) it(`Esc Esc at an empty prompt opens /rewind: the picked message and what came after are gone from the conversation and the files, kept in the log (${terminal.name})`, async (context) => {
    const reply = (request: Received): Reply => {
      const last = lastUser(request)
      if (request.body.messages.at(-1)?.role === "tool") return { text: `Done: ${last}.` }
      if (last === "create a.txt") return { toolCalls: [{ name: "write_file", arguments: { path: "a.txt", content: "one\n" } }] }
      if (last === "change a.txt") return { toolCalls: [{ name: "write_file", arguments: { path: "a.txt", content: "two\n" } }] }
      return { text: `Answer to ${last}.` }
    }
    const { env, flags, server, workspace } = await cliSetup(context, reply, { flags: ["--yes"], env: terminal.env })
    const pane = startPane([process.execPath, launcher, "chat", ...flags], env, root, terminal.size)
    context.onTestFinished(() => pane.kill())
    const key = /session (\S+) · model/.exec(await pane.waitFor(/^> $/m))![1]!
    pane.line("hello")
    await pane.waitFor(/Answer to hello\.[\s\S]*── completed[^\n]*\n(?:[^\n]*\n)?> $/m)
    pane.line("create a.txt")
    await pane.waitFor(/Done: create a\.txt\.[\s\S]*── completed[^\n]*\n(?:[^\n]*\n)?> $/m)
    pane.line("change a.txt")
    await pane.waitFor(/Done: change a\.txt\.[\s\S]*── completed[^\n]*\n(?:[^\n]*\n)?> $/m)
    expect(fs.readFileSync(path.join(workspace, "a.txt"), "utf8")).toBe("two\n")

    pane.keys("Escape")
    pane.keys("Escape")
    await pane.waitFor(/Rewind to before which message\?[\s\S]*> +1 +change a\.txt[\s\S]*2 +create a\.txt[\s\S]*3 +hello[\s\S]*q cancels\)/)
    pane.keys("Down")
    pane.keys("Enter")
    // the message rewound to is offered again at the prompt
    await pane.waitFor(/⏪ rewound to before “create a\.txt”: files of 2 turns put back; the rest stays in the log as a branch\n(?:[^\n]*\n)?> create a\.txt$/m)
    pane.keys("C-u")
    expect(fs.existsSync(path.join(workspace, "a.txt"))).toBe(false)
    pane.line("what now?")
    await pane.waitFor(/Answer to what now\?[\s\S]*── completed[^\n]*\n(?:[^\n]*\n)?> $/m)
    expect(users(server.requests.at(-1)!)).toEqual(["hello", "what now?"])

    // /rewind N: the N-th last message
    pane.line("/rewind 1")
    await pane.waitFor(/⏪ rewound to before “what now\?”: no files to put back[^\n]*\n(?:[^\n]*\n)?> what now\?$/m)
    pane.keys("C-u")
    pane.line("/exit")
    expect(await pane.exitStatus()).toBe(0)
    // the log keeps the abandoned branch, the two rewinds marked
    const log = await runCli(["sessions", "show", "--all", key], { env, cwd: workspace })
    expect(log.code).toBe(0)
    expect(log.stdout).toMatch(/change a\.txt[\s\S]*── rewound: 2 messages kept[\s\S]*what now\?[\s\S]*── rewound: 2 messages kept/)
  })
})
