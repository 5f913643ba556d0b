/**
 * Regression: `--events` and `--record` files were created with the default mode (0644 under the
 * usual umask), readable by every user of the machine although they hold whole conversations; and
 * a `--database-url` with its password on the command line went by without a word. Now both files
 * are created 0600, a password on the command line gets a one-line hint, and `--database-url-file`
 * keeps it off the command line. The same for `run --cluster`, whose URL is a database's too.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, runCli, tempDir } from "../support/cliProcess.ts"
import { start } from "../support/openaiServer.ts"

const HINT = "agent-loop: --database-url holds a password, which other processes can read on a command line (ps); use AGENT_LOOP_DATABASE_URL or --database-url-file FILE"

const modeOf = (file: string) => fs.statSync(file).mode & 0o777

describe("files and passwords of the CLI", () => {
  it("creates --events and --record files 0600, and hints once at a password given with --database-url", async (context) => {
    const server = await start([{ text: "hello" }])
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const events = path.join(home, "events.jsonl")
    const cassette = path.join(home, "cassette.jsonl")
    const result = await runCli(
      [
        "run", "--base-url", server.url, "--model", "m", "--no-settings", "--no-context-files", "--ephemeral",
        "--events", events, "--record", cassette, "--database-url", "postgres://agent:pw-on-argv-1234@127.0.0.1:9/db", "hi"
      ],
      { env: isolatedEnv(home), cwd: home }
    )
    expect(result.code, result.stderr).toBe(0)
    expect(fs.readFileSync(events, "utf8")).toContain('"TurnEnd"')
    expect(fs.readFileSync(cassette, "utf8")).toContain("hello")
    expect([modeOf(events), modeOf(cassette)]).toEqual([0o600, 0o600])
    expect(result.stderr.split("\n").filter((line) => line === HINT)).toHaveLength(1)
    expect(result.stderr).not.toContain("pw-on-argv-1234")
  })

  it("--database-url-file reads the URL from a file, and the environment variable gets no hint", async () => {
    const home = tempDir()
    const file = path.join(home, "db-url")
    fs.writeFileSync(file, "postgres://agent:pw-in-file-5678@127.0.0.1:9/fromfile\n", { mode: 0o600 })
    const fromFile = await runCli(["sessions", "list", "--store", "postgres", "--database-url-file", file], { env: isolatedEnv(home) })
    // the store named in the file is the one the CLI tried (and could not reach)
    expect(fromFile.code).toBe(1)
    expect(fromFile.stderr).toContain("postgres 127.0.0.1:9/fromfile")
    expect(fromFile.stderr).not.toContain("pw-in-file-5678")
    expect(fromFile.stderr).not.toContain(HINT)
    const fromEnv = await runCli(["sessions", "list", "--store", "postgres"], {
      env: isolatedEnv(home, { AGENT_LOOP_DATABASE_URL: "postgres://agent:pw-in-env-9012@127.0.0.1:9/fromenv" })
    })
    expect(fromEnv.stderr).toContain("postgres 127.0.0.1:9/fromenv")
    expect(fromEnv.stderr).not.toContain(HINT)
  })

  it("run --cluster: a password on the command line gets the hint; --cluster-file and AGENT_LOOP_CLUSTER_URL keep it off", async () => {
    const home = tempDir()
    const file = path.join(home, "cluster-url")
    fs.writeFileSync(file, "postgres://agent:pw-in-file-3456@127.0.0.1:9/fromfile\n", { mode: 0o600 })
    const hint = "agent-loop: --cluster holds a password, which other processes can read on a command line (ps); use AGENT_LOOP_CLUSTER_URL or --cluster-file FILE"
    // nothing listens on port 9: each run fails reaching the cluster the flag or variable named
    const runs = {
      argv: await runCli(["run", "--cluster=postgres://agent:pw-on-argv-7890@127.0.0.1:9/argv", "--cluster-wait", "1", "hi"], { env: isolatedEnv(home) }),
      file: await runCli(["run", "--cluster-file", file, "--cluster-wait", "1", "hi"], { env: isolatedEnv(home) }),
      env: await runCli(["run", "--cluster-wait", "1", "hi"], {
        env: isolatedEnv(home, { AGENT_LOOP_CLUSTER_URL: "postgres://agent:pw-in-env-1357@127.0.0.1:9/fromenv" })
      })
    }
    for (const [name, result] of Object.entries(runs)) {
      expect(result.code, name).toBe(1)
      const database = name === "argv" ? "argv" : `from${name}`
      expect(result.stderr).toContain(`the cluster's database postgres://agent:***@127.0.0.1:9/${database} cannot be reached`)
      expect(result.stderr).not.toMatch(/pw-on-argv|pw-in-file|pw-in-env/)
      expect(result.stderr.includes(hint), name).toBe(name === "argv")
    }
  })
})
