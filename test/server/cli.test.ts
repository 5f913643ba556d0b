/**
 * `agent-loop serve` without a database serves the API in-process on 127.0.0.1: a token generated
 * at the first start (printed once, kept in a 0600 file, read again at the next start and not
 * printed), or given by `AGENT_LOOP_SERVER_TOKEN` or `--token-file`; a turn through the API against
 * a scripted OpenAI-compatible server.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { cliSetup, spawnCli } from "../support/cliProcess.ts"
import { waitUntil } from "../support/waitUntil.ts"

const LISTENING = /API at (http:\/\/127\.0\.0\.1:\d+)\/v1/

/** Starts `serve --port 0` and returns its origin once it listens. */
const serve = async (flags: ReadonlyArray<string>, env: Record<string, string>) => {
  const cli = spawnCli(["serve", ...flags, "--port", "0"], { env })
  try {
    // the address, then where the token comes from: both lines are out before the test reads them
    await waitUntil("serve to listen", () => LISTENING.test(cli.stderr() + cli.stdout()) && /agent-loop: (the )?token/.test(cli.stderr() + cli.stdout()))
  } catch (error) {
    cli.child.kill("SIGTERM")
    throw new Error(`${(error as Error).message}\n${cli.stderr()}`)
  }
  const output = () => cli.stderr() + cli.stdout()
  return { cli, origin: LISTENING.exec(output())![1]!, output }
}

const authorized = (token: string) => ({ authorization: `Bearer ${token}`, "content-type": "application/json" })

describe("agent-loop serve (the API in-process)", () => {
  it("generates a token at the first start, prints it once, keeps it 0600, and runs a turn through the API", async (context) => {
    const { flags, env, home } = await cliSetup(context, [{ text: "Hello from the model." }])
    const first = await serve(flags, env)
    let token: string
    try {
      const printed = /token \(printed this once; kept in (\S+)\): (\S+)/.exec(first.output())
      expect(printed).not.toBeNull()
      const file = printed![1]!
      token = printed![2]!
      expect(file.startsWith(home)).toBe(true)
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)
      expect(fs.readFileSync(file, "utf8").trim()).toBe(token)
      expect((await fetch(`${first.origin}/v1/sessions`)).status).toBe(401)
      const started = await fetch(`${first.origin}/v1/sessions/cli/turns`, {
        method: "POST",
        headers: authorized(token),
        body: JSON.stringify({ message: "hi" })
      })
      expect(started.status).toBe(202)
      const { turnId } = await started.json() as { turnId: string }
      let state: any
      await waitUntil("the turn to end", async () => {
        state = await (await fetch(`${first.origin}/v1/turns/${turnId}`, { headers: authorized(token) })).json()
        return state.status === "done"
      })
      expect(state.result.finalMessage.content).toBe("Hello from the model.")
    } finally {
      first.cli.child.kill("SIGTERM")
      await first.cli.exited
    }
    const second = await serve(flags, env)
    try {
      expect(second.output()).not.toContain(token)
      expect(second.output()).toMatch(/the token is in \S+server-token/)
      expect((await fetch(`${second.origin}/v1/sessions`, { headers: authorized(token) })).status).toBe(200)
    } finally {
      second.cli.child.kill("SIGTERM")
      await second.cli.exited
    }
  })

  it("takes the token from AGENT_LOOP_SERVER_TOKEN or --token-file, and refuses a short one", async (context) => {
    const { flags, env, home } = await cliSetup(context, [{ text: "unused" }])
    const fromEnv = await serve(flags, { ...env, AGENT_LOOP_SERVER_TOKEN: "from-the-environment-0123456789" })
    try {
      expect(fromEnv.output()).not.toContain("from-the-environment-0123456789")
      expect((await fetch(`${fromEnv.origin}/v1/tools`, { headers: authorized("from-the-environment-0123456789") })).status).toBe(200)
    } finally {
      fromEnv.cli.child.kill("SIGTERM")
      await fromEnv.cli.exited
    }
    const file = path.join(home, "token.txt")
    fs.writeFileSync(file, "from-a-file-0123456789abcdef\n")
    const fromFile = await serve([...flags, "--token-file", file], env)
    try {
      expect((await fetch(`${fromFile.origin}/v1/tools`, { headers: authorized("from-a-file-0123456789abcdef") })).status).toBe(200)
      expect((await fetch(`${fromFile.origin}/v1/tools`, { headers: authorized("from-the-environment-0123456789") })).status).toBe(401)
    } finally {
      fromFile.cli.child.kill("SIGTERM")
      await fromFile.cli.exited
    }
    const short = spawnCli(["serve", ...flags, "--port", "0"], { env: { ...env, AGENT_LOOP_SERVER_TOKEN: "short" } })
    expect((await short.exited).code).not.toBe(0)
    expect(short.stderr()).toContain("AGENT_LOOP_SERVER_TOKEN must be at least 16 characters")
  })
})
