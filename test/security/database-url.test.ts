/**
 * Regression guard: the database URL (`AGENT_LOOP_DATABASE_URL`, `--database-url`) may hold a
 * password. Like the provider keys, it is taken out of the environment before any tool runs and
 * registered as a secret, so a command reading the CLI's initial environment (`/proc/$PPID/environ`)
 * finds it redacted, and neither the model, the events nor the stored session ever hold it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { cliSetup, runCli } from "../support/cliProcess.ts"
import { storedSessions } from "../support/storedSessions.ts"

const PASSWORD = "db-pass-adversarial-31337"
const URL = `postgres://agent:${PASSWORD}@127.0.0.1:9/sessions`

describe("database URL", () => {
  it("an approved exec reading the CLI's environment finds the URL and its password redacted, everywhere", async (context) => {
    // the URL is in the environment, but this run keeps its sessions in SQLite: it is still a secret
    const { server, home, flags, env } = await cliSetup(context, [
      {
        toolCalls: [{
          name: "exec",
          // the environment as the CLI started, the one it passes on, and the password cut out on its own
          arguments: {
            command: "tr '\\0' '\\n' < /proc/$PPID/environ; echo ---; env; echo ---; " +
              "tr '\\0' '\\n' < /proc/$PPID/environ | sed -n 's/^AGENT_LOOP_DATABASE_URL=postgres:..agent:\\([^@]*\\)@.*/password=\\1/p'"
          }
        }]
      },
      { text: "done" }
    ], { model: "m", env: { AGENT_LOOP_DATABASE_URL: URL } })
    const events = path.join(home, "events.jsonl")
    // unconfined: the sandbox would hide the CLI's /proc entries, and this holds without it
    const result = await runCli(["run", ...flags, "--sandbox", "off", "--yes", "--session", "s", "--events", events, "go"], { env })
    expect(result.code, result.stderr).toBe(0)
    const [environ, current, echoed] = server.requests[1]!.body.messages.at(-1).content.split("---")
    expect(environ).toContain("AGENT_LOOP_DATABASE_URL=<redacted>")
    expect(current).not.toContain("AGENT_LOOP_DATABASE_URL")
    expect(echoed).toContain("password=<redacted>")
    const stored = storedSessions(path.join(home, "data"))
    expect(stored).toContain("AGENT_LOOP_DATABASE_URL=<redacted>")
    const everything = [JSON.stringify(server.requests.map((r) => r.body)), fs.readFileSync(events, "utf8"), stored, result.stdout, result.stderr].join("\n")
    expect(everything).not.toContain(PASSWORD)
  })
})
