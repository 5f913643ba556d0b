/**
 * Regression: Ctrl-C and SIGTERM end the CLI within 2 s in every state — waiting on the model, in
 * a tool that ignores SIGTERM, in a hook that ignores SIGTERM, in a retry wait of a huge
 * `Retry-After` — and SIGTERM exits 143. Real processes; every wait is bounded. (The approval
 * prompt needs a terminal: see `terminal-hostile.test.ts`.)
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { type CliProcess, isolatedEnv, runCli, spawnCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import { gate, type Reply, start } from "../support/openaiServer.ts"

/** The bound the CLI promises, from the signal to the exit. */
const BOUND_MS = 2000

/** The longest wait for the CLI to reach a state (a loaded machine starts processes slowly). */
const SETTLE_MS = 30_000

/** Whether process `pid` is gone. */
const gone = (pid: number) => {
  try {
    process.kill(pid, 0)
    return false
  } catch {
    return true
  }
}

/**
 * Milliseconds from now until `cli` exits (its `exit` event, not the later close of its pipes), and
 * its exit code; rejects (naming the state) past a generous deadline. Called right before the
 * signal is sent: `kill` delivers it before it returns, so this measures from the delivery.
 */
const timeExit = (cli: CliProcess) => {
  const sent = Date.now()
  return Promise.race([
    cli.exited.then(({ code }) => ({ code, elapsed: cli.exitedAt()! - sent })),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`still running 10 s after the signal\nstderr: ${cli.stderr()}`)), 10_000))
  ])
}

type State = "model" | "tool" | "hook" | "retry"

/** A CLI brought into `state`, resolved once it is there. */
const inState = async (context: TestContext, state: State) => {
  const never = gate()
  context.onTestFinished(() => never.open())
  const home = tempDir()
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace)
  const pidFile = path.join(home, "pid")
  const stubborn = `trap '' TERM; echo $$ > '${pidFile}'; sleep 30`
  const replies: Record<State, ReadonlyArray<Reply>> = {
    model: [{ before: never.promise }],
    tool: [{ toolCalls: [{ name: "exec", arguments: { command: stubborn } }] }, { text: "done" }],
    hook: [{ toolCalls: [{ name: "list_dir", arguments: {} }] }, { text: "done" }],
    retry: [{ status: 429, error: "slow down", headers: { "retry-after": "999" } }]
  }
  const server = await start(replies[state])
  context.onTestFinished(() => server.close())
  const env = isolatedEnv(home)
  if (state === "hook") {
    const dir = path.join(workspace, ".agents", "hooks", "stubborn")
    fs.mkdirSync(path.join(dir, "scripts"), { recursive: true })
    fs.writeFileSync(path.join(dir, "HOOK.md"), "---\nname: stubborn\ndescription: ignores SIGTERM\ntrigger: pre-tool-call\n---\n")
    fs.writeFileSync(path.join(dir, "scripts", "run"), `#!/bin/sh\ncat > /dev/null\n${stubborn}\n`, { mode: 0o755 })
    expect((await runCli(["trust", workspace], { env })).code).toBe(0)
  }
  // unconfined: the stubborn command writes its pid outside the workspace, and that pid must be this machine's
  // (in the sandbox it is its own namespace's, and the sandbox kills the command at once anyway)
  const cli = spawnCli(["run", "--base-url", server.url, "--model", "m", "--workspace", workspace, "--yes", "--ephemeral", "--sandbox", "off", "go"], { env })
  if (state === "model") await server.received(1, SETTLE_MS)
  if (state === "retry") await cli.waitFor("↻ retry 1 in", "stderr", SETTLE_MS)
  if (state === "tool" || state === "hook") await until(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, "utf8").trim() !== "", `${pidFile} to be written`)
  const pid = state === "tool" || state === "hook" ? Number(fs.readFileSync(pidFile, "utf8")) : undefined
  return { cli, pid }
}

/** Resolves once `check` holds, polling; rejects after `SETTLE_MS`. */
const until = (check: () => boolean, what: string) =>
  new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + SETTLE_MS
    const poll = () => {
      if (check()) return resolve()
      if (Date.now() > deadline) return reject(new Error(`waited ${SETTLE_MS} ms for ${what}`))
      setTimeout(poll, 20)
    }
    poll()
  })

const states: ReadonlyArray<State> = ["model", "tool", "hook", "retry"]

// one at a time: the bound is measured, and concurrent CLIs would measure each other
describe("SIGTERM", () => {
  for (const state of states) {
    it(`in state "${state}": exits 143 within 2 s, and what the turn started is gone`, async (context) => {
      const { cli, pid } = await inState(context, state)
      const exit = timeExit(cli)
      cli.child.kill("SIGTERM")
      const { code, elapsed } = await exit
      expect(code).toBe(143)
      expect(elapsed).toBeLessThanOrEqual(BOUND_MS)
      if (pid !== undefined) await until(() => gone(pid), `process ${pid} to be gone`)
    })
  }
})

describe("Ctrl-C twice", () => {
  for (const state of states) {
    it(`in state "${state}": exits 130 within 2 s of the second press`, async (context) => {
      const { cli, pid } = await inState(context, state)
      cli.child.kill("SIGINT")
      await cli.waitFor("interrupting", "stderr", SETTLE_MS)
      const exit = timeExit(cli)
      cli.child.kill("SIGINT")
      const { code, elapsed } = await exit
      expect(code).toBe(130)
      expect(elapsed).toBeLessThanOrEqual(BOUND_MS)
      if (pid !== undefined) await until(() => gone(pid), `process ${pid} to be gone`)
    })
  }
})
