/**
 * The CLI end to end: a hook of the user's settings runs without the credentials of the
 * environment (by name, and URLs with a password or a token), except those the settings' `hookEnv`
 * names; and a URL credential in any variable is a secret from the start, scrubbed even when it
 * shows up without the rest of its URL.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as SettingsFile from "../../src/cli/config/settingsFile.ts"
import { cliSetup, runCli } from "../support/cliProcess.ts"

const REDIS_PASSWORD = "redis-pw-adversarial-4242"
const TOKEN = "repo-token-adversarial-4242"
const VARIABLES = {
  GITHUB_TOKEN: "github-token-adversarial-4242",
  X_SECRET: "x-secret-adversarial-4242",
  DB_PASSWORD: "db-password-adversarial-4242",
  AGENT_LOOP_CLUSTER_SECRET: "cluster-secret-adversarial-4242",
  REDIS_URL: `redis://:${REDIS_PASSWORD}@cache.internal:6379/0`,
  REPO_URL: `https://${TOKEN}@git.example.com/org/repo.git`
}

const parseEnv = (text: string): Record<string, string> =>
  Object.fromEntries(text.split("\n").filter((line) => line.includes("=")).map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]))

describe("hook environments in the CLI", () => {
  it("a settings hook sees only the credentials hookEnv names; URL credentials are scrubbed on their own", async (context) => {
    // the command prints the CLI's own environment as it started, cutting out the bare password and token
    const command = "tr '\\0' '\\n' < /proc/$PPID/environ | sed -n " +
      "-e 's/^REDIS_URL=redis:..:\\([^@]*\\)@.*/password=\\1/p' -e 's/^REPO_URL=https:..\\([^@]*\\)@.*/token=\\1/p'"
    const { server, home, flags, env } = await cliSetup(context, [{ toolCalls: [{ name: "exec", arguments: { command } }] }, { text: "done" }], {
      model: "m",
      env: VARIABLES
    })
    const dump = path.join(home, "hook-env.txt")
    fs.mkdirSync(path.join(home, "config", "agent-loop"), { recursive: true })
    fs.writeFileSync(
      path.join(home, "config", "agent-loop", "settings.json"),
      JSON.stringify({
        hookEnv: ["GITHUB_TOKEN"],
        hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: `env > '${dump}'` }] }] }
      })
    )
    // unconfined: the sandbox would hide the CLI's process (and its /proc) from the command
    const result = await runCli(["run", ...flags, "--yes", "--ephemeral", "--sandbox", "off", "go"], { env })
    expect(result.code, result.stderr).toBe(0)
    const seen = parseEnv(fs.readFileSync(dump, "utf8"))
    expect(seen["GITHUB_TOKEN"]).toBe(VARIABLES.GITHUB_TOKEN)
    for (const name of ["X_SECRET", "DB_PASSWORD", "AGENT_LOOP_CLUSTER_SECRET", "REDIS_URL", "REPO_URL"]) expect(seen[name], name).toBeUndefined()
    const output = server.requests[1]!.body.messages.at(-1).content
    expect(output).toContain("password=<redacted>")
    expect(output).toContain("token=<redacted>")
    const sent = JSON.stringify(server.requests.map((r) => r.body))
    expect(sent).not.toContain(REDIS_PASSWORD)
    expect(sent).not.toContain(TOKEN)
  })
})

describe("the hookEnv setting", () => {
  it("adds up over the settings files, and takes only variable names", async () => {
    const user = await Effect.runPromise(SettingsFile.parse("user.json", JSON.stringify({ hookEnv: ["GITHUB_TOKEN", "NPM_TOKEN"] })))
    const project = await Effect.runPromise(SettingsFile.parse("project.json", JSON.stringify({ hookEnv: ["NPM_TOKEN", "SENTRY_DSN"] })))
    expect(SettingsFile.merge([user, project]).settings.hookEnv).toEqual(["GITHUB_TOKEN", "NPM_TOKEN", "SENTRY_DSN"])
    expect(SettingsFile.merge([user]).settings.hookEnv).toEqual(["GITHUB_TOKEN", "NPM_TOKEN"])
    const bad = await Effect.runPromise(Effect.flip(SettingsFile.parse("bad.json", JSON.stringify({ hookEnv: ["$(rm -rf ~)"] }))))
    expect(String((bad as { message?: string }).message ?? bad)).toContain("hookEnv")
  })
})
