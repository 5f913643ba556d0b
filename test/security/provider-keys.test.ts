/**
 * Regression: keys readable by tools. `exec` stripped `*_API_KEY` from its child, but
 * `cat /proc/$PPID/environ` printed them. The CLI now reads the provider keys once and removes
 * them from its environment, and scrubs every known secret from tool results. `/proc/PID/environ`
 * keeps the environment a process started with, whatever `process.env` says later, so the scrub is
 * what protects that path: the model, the events and the session must never hold the key.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { cliSetup, runCli } from "../support/cliProcess.ts"
import { storedSessions } from "../support/storedSessions.ts"

const OPENAI_KEY = "sk-proj-adversarial-0123456789"
const ANTHROPIC_KEY = "sk-ant-adversarial-9876543210"

describe("provider keys", () => {
  it("an approved exec that reads the CLI's environment gets the keys redacted, in the result, the events and the session", async (context) => {
    const { server, home, flags, env } = await cliSetup(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "tr '\\0' '\\n' < /proc/$PPID/environ; echo ---; env" } }] },
      { text: "done" }
    ], { model: "m", env: { OPENAI_API_KEY: OPENAI_KEY, ANTHROPIC_API_KEY: ANTHROPIC_KEY } })
    const events = path.join(home, "events.jsonl")
    // unconfined: the sandbox would hide the CLI's /proc entries, and this holds without it
    const result = await runCli(["run", ...flags, "--sandbox", "off", "--api-key-env", "OPENAI_API_KEY", "--yes", "--session", "s", "--events", events, "--verbose", "go"], { env })
    expect(result.code).toBe(0)
    // the key was sent to the provider, where it belongs
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`)
    const [environ, current] = server.requests[1]!.body.messages.at(-1).content.split("---")
    // the initial environment still names the keys, with their values redacted ...
    expect(environ).toContain("OPENAI_API_KEY=<redacted>")
    expect(environ).toContain("ANTHROPIC_API_KEY=<redacted>")
    // ... and the environment the CLI passes on no longer has them at all
    expect(current).not.toMatch(/_API_KEY=/)
    const stored = storedSessions(path.join(home, "data"))
    // the session holds the exec result, redacted
    expect(stored).toContain("OPENAI_API_KEY=<redacted>")
    const everything = [
      JSON.stringify(server.requests.map((r) => r.body)),
      fs.readFileSync(events, "utf8"),
      stored,
      result.stdout,
      result.stderr
    ].join("\n")
    expect(everything).not.toContain(OPENAI_KEY)
    expect(everything).not.toContain(ANTHROPIC_KEY)
  })
})
