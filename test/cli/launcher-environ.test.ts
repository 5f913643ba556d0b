/**
 * Regression: keys reachable from a child process. The CLI removed the provider keys from
 * `process.env` and scrubbed them from tool results, but `/proc/$PPID/environ` still showed the
 * environment the CLI started with, and `base64` (or `rev`) got the keys past the scrubber; on the
 * command line, `--database-url` with a password stayed in `/proc/PID/cmdline` for `ps` to show.
 * Now the installed command restarts itself without them: the process that runs tools never held
 * a key in its initial environment, nor a password in its command line.
 *
 * Through the real bin (`bin/agent-loop.js` and its launcher) over the sources.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { binOverSources, isolatedEnv, runCli, spawnCli, tempDir } from "../support/cliProcess.ts"
import { start } from "../support/openaiServer.ts"

const OPENAI_KEY = "sk-proj-launcher-0123456789abcdef"
const ANTHROPIC_KEY = "sk-ant-launcher-fedcba9876543210"
const GITHUB_TOKEN = "ghp_launcherTokenValue0123456789"
const ENV_PASSWORD = "env-db-pass-4242xyz"
const FLAG_PASSWORD = "flag-db-pass-1717abc"

/** What the command printed: the base64 of each file, one per line; decoded. */
const decoded = (content: string): ReadonlyArray<string> =>
  content.split("\n").filter((line) => /^[A-Za-z0-9+/=]+$/.test(line)).map((line) => Buffer.from(line, "base64").toString("latin1"))

describe("the installed command keeps credentials out of /proc", () => {
  it("an approved exec reading its parent's and its own environment and command line finds no key, token or password, even encoded", async (context) => {
    const server = await start([
      {
        toolCalls: [{
          name: "exec",
          arguments: {
            command: "for f in /proc/$PPID/environ /proc/self/environ /proc/$PPID/cmdline; do base64 -w0 < $f; echo; done"
          }
        }]
      },
      { text: "done" }
    ])
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const workspace = path.join(home, "ws")
    const runtime = path.join(home, "runtime")
    fs.mkdirSync(workspace)
    fs.mkdirSync(runtime, { mode: 0o700 })
    const env = isolatedEnv(home, {
      OPENAI_API_KEY: OPENAI_KEY,
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      GITHUB_TOKEN,
      AGENT_LOOP_DATABASE_URL: `postgres://agent:${ENV_PASSWORD}@127.0.0.1:9/sessions`,
      XDG_RUNTIME_DIR: runtime
    })
    const result = await runCli(
      [
        // unconfined: the sandbox would hide the CLI's /proc entries, and this holds without it
        "run", "--sandbox", "off", "--base-url", server.url, "--api-key-env", "OPENAI_API_KEY", "--model", "m", "--workspace", workspace, "--yes", "--session", "s",
        "--database-url", `postgres://agent:${FLAG_PASSWORD}@127.0.0.1:9/sessions`, "go"
      ],
      { env, entry: binOverSources() }
    )
    expect(result.code, result.stderr).toBe(0)
    // the key was handed over: it reached the provider, where it belongs
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`)
    const files = decoded(server.requests[1]!.body.messages.at(-1).content)
    expect(files).toHaveLength(3)
    const [parentEnviron, ownEnviron, parentCmdline] = files
    // the files were read (the CLI's own start, and its command line with the password masked) ...
    expect(parentEnviron).toContain(`XDG_RUNTIME_DIR=${runtime}`)
    expect(ownEnviron).toContain("PATH=")
    expect(parentCmdline).toContain("postgres://agent:***@127.0.0.1:9/sessions")
    // ... and hold none of the values, in clear or redacted: they were never there
    for (const text of files) {
      for (const secret of [OPENAI_KEY, ANTHROPIC_KEY, GITHUB_TOKEN, ENV_PASSWORD, FLAG_PASSWORD]) expect(text).not.toContain(secret)
    }
    // the variables themselves are gone from both environments; the command line names one only as
    // the value of --api-key-env
    for (const environ of [parentEnviron, ownEnviron]) expect(environ).not.toMatch(/OPENAI_API_KEY|ANTHROPIC_API_KEY|GITHUB_TOKEN|AGENT_LOOP_DATABASE_URL/)
    expect(parentCmdline!.replace("--api-key-env\0OPENAI_API_KEY\0", "")).not.toMatch(/OPENAI_API_KEY|ANTHROPIC_API_KEY|GITHUB_TOKEN|AGENT_LOOP_DATABASE_URL/)
    // the handover file is gone
    expect(fs.readdirSync(runtime)).toEqual([])
  })

  it("the restart keeps stdin, stdout and the exit code: a piped prompt is answered", async (context) => {
    const server = await start([{ text: "piped answer" }])
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const cli = spawnCli(["run", "--base-url", server.url, "--api-key-env", "OPENAI_API_KEY", "--model", "m", "--no-settings", "--no-context-files", "--ephemeral"], {
      env: isolatedEnv(home, { OPENAI_API_KEY: OPENAI_KEY }),
      stdin: true,
      entry: binOverSources()
    })
    cli.child.stdin!.end("a question from a pipe")
    expect(await cli.exited).toEqual({ code: 0, signal: null })
    expect(cli.stdout()).toBe("piped answer\n")
    expect(server.requests[0]!.body.messages.at(-1).content).toBe("a question from a pipe")
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`)
  })

  it("a handover variable that names no handover file is refused, and the file it names is left alone", async () => {
    const home = tempDir()
    const other = path.join(home, "notes.json")
    fs.writeFileSync(other, JSON.stringify({ env: { OPENAI_API_KEY: "sk-planted-value-000000" } }), { mode: 0o600 })
    const result = await runCli(["--version"], { env: isolatedEnv(home, { AGENT_LOOP_HANDOVER: other }), entry: binOverSources() })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("AGENT_LOOP_HANDOVER does not name a handover file")
    expect(fs.existsSync(other)).toBe(true)
  })
})
