/**
 * The runnable examples: `npm run demo` (the README's main command) replays its cassette with no
 * key and no network, and `examples/library.ts` composes the loop in code.
 */
import { spawn } from "node:child_process"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, root, tempDir, DURATION } from "../support/cliProcess.ts"

const run = (command: string, args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(command, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text))
    child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text))
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

/** Any attempt to reach the network through a proxy-aware client would fail fast. */
const offline = (home: string) => ({ ...isolatedEnv(home), HTTP_PROXY: "http://127.0.0.1:9", HTTPS_PROXY: "http://127.0.0.1:9" })

describe.concurrent("examples", () => {
  it("npm run demo lists the workspace, reads the notes and answers, offline", async () => {
    const home = tempDir()
    const result = await run("npm", ["run", "--silent", "demo"], offline(home))
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("The workspace holds `data/`, `notes.md`, `todo.txt`.")
    expect(result.stdout).toContain("The project is **Lighthouse**. Lighthouse is a tiny weather station for a garden shed")
    expect(result.stderr).toMatch(new RegExp(String.raw`⚙ list_dir \{"path":"\."\}\n\s+✓ list_dir ${DURATION}`))
    expect(result.stderr).toMatch(new RegExp(String.raw`⚙ read_file \{"path":"notes\.md"\}\n\s+✓ read_file ${DURATION}`))
    expect(result.stderr).toMatch(/── completed · 3 iterations · /)
  })

  it("examples/library.ts prints the events and the answer", async () => {
    const result = await run(process.execPath, [path.join("examples", "library.ts")], isolatedEnv(tempDir()))
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("[hook] celsius_to_fahrenheit is about to run with {\"celsius\":-1.5}")
    expect(result.stdout).toContain("[event] #1 ToolExecEnd -1.5 °C = 29.3 °F")
    expect(result.stdout).toContain("[event] #2 TurnEnd")
    expect(result.stdout).toContain("[answer] (completed, 2 iterations) -1.5 °C is 29.3 °F: just below freezing.")
  })
})
