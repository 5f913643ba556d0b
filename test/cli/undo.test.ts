/**
 * `agent-loop undo` end to end: a scripted model on 127.0.0.1 makes the real CLI change files
 * with `write_file` and `edit_file`, and `undo` puts them back from the data directory.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { cliSetup, runCli, type TestContext } from "../support/cliProcess.ts"
import type { Script } from "../support/openaiServer.ts"

const setup = (context: TestContext, script: Script) => cliSetup(context, script, { notes: "# Notes\nThe answer is 42.\n" })

const read = (workspace: string, file: string) => fs.readFileSync(path.join(workspace, file), "utf8")

describe.concurrent("agent-loop undo", () => {
  it("undoes the last turn's file changes, then the one before, and refuses a file changed since by name", async (context) => {
    const { env, flags, home, workspace } = await setup(context, [
      {
        toolCalls: [
          { name: "edit_file", arguments: { path: "notes.md", old_text: "42", new_text: "43" } },
          { name: "write_file", arguments: { path: "src/new.txt", content: "created\n" } }
        ]
      },
      { text: "Changed." },
      { toolCalls: [{ name: "write_file", arguments: { path: "notes.md", content: "rewritten\n" } }] },
      { text: "Rewritten." }
    ])
    const first = await runCli(["run", ...flags, "--session", "work", "change things"], { env, cwd: workspace })
    expect(first.code, first.stderr).toBe(0)
    const second = await runCli(["run", ...flags, "--session", "work", "rewrite notes"], { env, cwd: workspace })
    expect(second.code, second.stderr).toBe(0)
    expect(read(workspace, "notes.md")).toBe("rewritten\n")

    // the history is private
    const undoDir = path.join(home, "data", "undo")
    expect(fs.statSync(undoDir).mode & 0o777).toBe(0o700)
    const listed = await runCli(["undo", "--list"], { env, cwd: workspace })
    expect(listed.code, listed.stderr).toBe(0)
    const lines = listed.stderr.trimEnd().split("\n")
    expect(lines).toHaveLength(2)
    expect(lines[0]).toContain("notes.md")
    expect(lines[1]).toContain("src/new.txt")

    // the last turn: notes.md back to what the first turn left
    const undone = await runCli(["undo"], { env, cwd: workspace })
    expect(undone.code, undone.stderr).toBe(0)
    expect(undone.stderr).toContain("restored notes.md")
    expect(read(workspace, "notes.md")).toBe("# Notes\nThe answer is 43.\n")

    // the first turn, with src/new.txt changed by hand since: it is named and left alone
    fs.writeFileSync(path.join(workspace, "src/new.txt"), "mine now\n")
    const refused = await runCli(["undo", "--session", "work"], { env, cwd: workspace })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("restored notes.md")
    expect(refused.stderr).toContain("not restored src/new.txt: it has changed since the turn changed it")
    expect(read(workspace, "notes.md")).toBe("# Notes\nThe answer is 42.\n")
    expect(read(workspace, "src/new.txt")).toBe("mine now\n")

    // put back as the turn left it, the turn (still kept) is undone by its id, and the created file goes
    const turnId = lines[1]!.split(/\s+/)[0]!
    fs.writeFileSync(path.join(workspace, "src/new.txt"), "created\n")
    const byId = await runCli(["undo", "--turn", turnId], { env, cwd: workspace })
    expect(byId.code, byId.stderr).toBe(0)
    expect(byId.stderr).toContain(`undid turn ${turnId}`)
    expect(fs.existsSync(path.join(workspace, "src/new.txt"))).toBe(false)

    const nothing = await runCli(["undo"], { env, cwd: workspace })
    expect(nothing.code).toBe(1)
    expect(nothing.stderr).toContain("agent-loop: session work has no file changes to undo")
  })

  it("keeps nothing for an ephemeral session", async (context) => {
    const { env, flags, home, workspace } = await setup(context, [
      { toolCalls: [{ name: "write_file", arguments: { path: "a.txt", content: "a" } }] },
      { text: "Done." }
    ])
    const result = await runCli(["run", ...flags, "--ephemeral", "write"], { env, cwd: workspace })
    expect(result.code, result.stderr).toBe(0)
    expect(read(workspace, "a.txt")).toBe("a")
    expect(fs.existsSync(path.join(home, "data", "undo"))).toBe(false)
  })
})
