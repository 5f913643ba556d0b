/**
 * Approvals that outlive the server: the real `agent-loop serve` on its default SQLite store and a
 * loopback model. A turn whose tool call needs approval pauses; the server is stopped (SIGTERM, and
 * again with SIGKILL) and started again over the same store; the approval is still pending there,
 * and its decision continues the turn from where it paused: allow runs the tool (once) and gives
 * the model its result, deny gives the model the denial. The decision is idempotent, and the log
 * holds the turn once.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { type CliProcess, cliSetup, spawnCli } from "../support/cliProcess.ts"
import { gate, type Received, type Reply } from "../support/openaiServer.ts"
import { waitUntil } from "../support/waitUntil.ts"

const TOKEN = "durable-approvals-token-0123456789"
const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }
const LISTENING = /API at (http:\/\/127\.0\.0\.1:\d+)\/v1/

/** The model: `run NOTE` asks for `echo NOTE >> ran.txt`; a tool's result is answered `done: RESULT`. */
const model = (request: Received): Reply => {
  const messages = request.body.messages as ReadonlyArray<any>
  const last = messages.at(-1)
  if (last.role === "tool") return { text: `done: ${String(last.content).trim()}` }
  const note = /^run (\S+)/.exec(String(last.content))?.[1] ?? "none"
  return { toolCalls: [{ id: `call_${note}`, name: "exec", arguments: { command: `echo ${note} >> ran.txt` } }] }
}

const serve = async (flags: ReadonlyArray<string>, env: Record<string, string>) => {
  const cli = spawnCli(["serve", ...flags, "--port", "0"], { env: { ...env, AGENT_LOOP_SERVER_TOKEN: TOKEN } })
  const output = () => cli.stderr() + cli.stdout()
  try {
    await waitUntil("serve to listen", () => LISTENING.test(output()) || cli.exitedAt() !== undefined)
  } catch (error) {
    cli.child.kill("SIGKILL")
    throw error
  }
  if (!LISTENING.test(output())) throw new Error(`serve exited: ${output()}`)
  return { cli, origin: LISTENING.exec(output())![1]! }
}

const api = async (origin: string, method: string, route: string, body?: unknown) => {
  const response = await fetch(`${origin}${route}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(60_000)
  })
  return { status: response.status, body: response.status === 204 ? undefined : await response.json() as any }
}

const pendingOf = async (origin: string, sessionKey: string) => {
  let found: any
  await waitUntil(`a pending approval of ${sessionKey}`, async () => {
    const list = (await api(origin, "GET", "/v1/approvals")).body as Array<any>
    found = list.find((a) => a.sessionKey === sessionKey && a.status === "pending")
    return found !== undefined
  })
  return found
}

const stop = async (cli: CliProcess, signal: "SIGTERM" | "SIGKILL") => {
  cli.child.kill(signal)
  await cli.exited
}

describe("approvals that outlive the server (SQLite)", () => {
  for (const [signal, decision] of [["SIGTERM", "allow"], ["SIGKILL", "deny"]] as const) {
    it(`a turn waiting for approval survives ${signal}: after the restart it is pending, and ${decision} continues the turn once`, async (context) => {
      const { flags, env, workspace } = await cliSetup(context, model, { flags: ["--tools", "exec", "--approval-timeout", "600", "--no-settings"] })
      const sessionKey = `durable-${signal.toLowerCase()}`
      const note = signal.toLowerCase()
      const first = await serve(flags, env)
      let pending: any
      try {
        const posted = await api(first.origin, "POST", `/v1/sessions/${sessionKey}/turns`, { message: `run ${note}` })
        expect(posted.status).toBe(202)
        pending = await pendingOf(first.origin, sessionKey)
        expect(pending).toMatchObject({ toolName: "exec", toolCallId: `call_${note}`, arguments: { command: `echo ${note} >> ran.txt` } })
      } finally {
        await stop(first.cli, signal)
      }
      const ran = path.join(workspace, "ran.txt")
      expect(fs.existsSync(ran)).toBe(false)

      const second = await serve(flags, env)
      try {
        // the same approval, still pending, after the restart
        const listed = (await api(second.origin, "GET", "/v1/approvals")).body as Array<any>
        expect(listed.filter((a) => a.sessionKey === sessionKey)).toEqual([pending])

        const decided = await api(second.origin, "POST", `/v1/approvals/${pending.id}`, { decision, reason: "not now" })
        expect(decided.status).toBe(200)
        expect(decided.body).toMatchObject({ id: pending.id, status: decision })
        // idempotent: the same decision answers alike, the other is refused
        expect((await api(second.origin, "POST", `/v1/approvals/${pending.id}`, { decision, reason: "not now" })).body).toEqual(decided.body)
        expect((await api(second.origin, "POST", `/v1/approvals/${pending.id}`, { decision: decision === "allow" ? "deny" : "allow" })).status).toBe(409)

        // the turn goes on from the pause, under its id, and ends
        let state: any
        await waitUntil("the continued turn to end", async () => {
          const answer = await api(second.origin, "GET", `/v1/turns/${pending.turnId}?wait=20`)
          state = answer.body
          return answer.status === 200 && state.status === "done"
        })
        expect(state.result.status).toBe("completed")
        if (decision === "allow") {
          expect(state.result.finalMessage.content).toMatch(/^done: exit code: 0/)
          expect(fs.readFileSync(ran, "utf8")).toBe(`${note}\n`)
        } else {
          expect(state.result.finalMessage.content).toMatch(/^done: .*not now/)
          expect(fs.existsSync(ran)).toBe(false)
        }

        // the log holds the turn once: its input, the call, its result, the answer
        const history = (await api(second.origin, "GET", `/v1/sessions/${sessionKey}`)).body.entries as Array<any>
        const messages = history.filter((entry) => ["user", "assistant", "tool"].includes(entry.role))
        expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"])
        expect(messages[0].content).toBe(`run ${note}`)
        // nothing is left paused: a third start lists no pending approval of the session
        await stop(second.cli, "SIGTERM")
        const third = await serve(flags, env)
        try {
          const after = (await api(third.origin, "GET", "/v1/approvals")).body as Array<any>
          expect(after.filter((a) => a.sessionKey === sessionKey)).toEqual([])
        } finally {
          await stop(third.cli, "SIGTERM")
        }
      } finally {
        if (second.cli.exitedAt() === undefined) await stop(second.cli, "SIGTERM")
      }
    }, 240_000)
  }

  it("a turn killed after its decision, while it goes on, is continued at the next start from its last step: the tool does not run again", async (context) => {
    const held = gate()
    let answered = 0
    const { flags, env, workspace } = await cliSetup(context, (request) => {
      const last = (request.body.messages as ReadonlyArray<any>).at(-1)
      // the first answer to the tool's result never comes: the server is killed while the model is asked
      if (last.role === "tool" && answered++ === 0) return { before: held.promise, text: "never sent" }
      return model(request)
    }, { flags: ["--tools", "exec", "--approval-timeout", "600", "--no-settings"] })
    context.onTestFinished(() => held.open())
    const sessionKey = "durable-after-decision"
    const ran = path.join(workspace, "ran.txt")
    const first = await serve(flags, env)
    let pending: any
    try {
      await api(first.origin, "POST", `/v1/sessions/${sessionKey}/turns`, { message: "run later" })
      pending = await pendingOf(first.origin, sessionKey)
      expect((await api(first.origin, "POST", `/v1/approvals/${pending.id}`, { decision: "allow" })).status).toBe(200)
      await waitUntil("the tool to run and the model to be asked with its result", () => answered === 1)
      expect(fs.readFileSync(ran, "utf8")).toBe("later\n")
    } finally {
      await stop(first.cli, "SIGKILL")
    }
    const second = await serve(flags, env)
    try {
      // no decision is asked again: the turn goes on by itself from its last step
      let state: any
      await waitUntil("the continued turn to end", async () => {
        const answer = await api(second.origin, "GET", `/v1/turns/${pending.turnId}?wait=20`)
        state = answer.body
        return answer.status === 200 && state.status === "done"
      })
      expect(state.result.status).toBe("completed")
      expect(state.result.finalMessage.content).toMatch(/^done: exit code: 0/)
      expect(fs.readFileSync(ran, "utf8")).toBe("later\n")
      const history = (await api(second.origin, "GET", `/v1/sessions/${sessionKey}`)).body.entries as Array<any>
      expect(history.filter((entry) => ["user", "assistant", "tool"].includes(entry.role)).map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"])
      const after = (await api(second.origin, "GET", "/v1/approvals")).body as Array<any>
      expect(after.filter((a) => a.sessionKey === sessionKey && a.status === "pending")).toEqual([])
    } finally {
      await stop(second.cli, "SIGTERM")
    }
  }, 240_000)
})
