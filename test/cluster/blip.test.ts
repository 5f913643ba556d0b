/**
 * A database blip: three runner processes, turns in flight that call a tool that is not idempotent
 * (it appends a line to a file), and the cluster's Postgres restarted under them (`pg_ctl restart
 * -m fast`: every connection closed with SQLSTATE 57P01). For every turn, what its client was told
 * is what the session log holds (completed if and only if the turn is in the log, once), each tool
 * call ran at most once, every client got an answer, and every turn completed.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, ManagedRuntime } from "effect"
import type { Sharding } from "effect/cluster"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AgentLoop, Message } from "effect-agent-loop"
import { startCluster, type TestCluster, waitUntil } from "../support/cluster.ts"
import { postgresProbe, postgresSuite } from "../support/postgres.ts"

const TURNS = 24

describe.skipIf(!postgresProbe.ok)(postgresSuite("the cluster through a database restart"), () => {
  let cluster: TestCluster
  let runtime: ManagedRuntime.ManagedRuntime<AgentLoop | Sharding.Sharding, unknown>
  const toolLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-blip-")), "tools.log")

  beforeAll(async () => {
    fs.writeFileSync(toolLog, "")
    cluster = await startCluster(3, undefined, { store: "sql", toolLog })
    runtime = ManagedRuntime.make(cluster.client())
  }, 180_000)

  afterAll(async () => {
    if (process.env["BLIP_DUMP"] !== undefined) cluster?.runners.forEach((runner, i) => fs.writeFileSync(`${process.env["BLIP_DUMP"]}-${i}.log`, runner.output()))
    await runtime?.dispose()
    await cluster?.close()
  })

  /** The user messages of a session's log, read straight from Postgres. */
  const inputs = async (sessionKey: string) =>
    (await cluster.pg.psql(
      `SELECT e.entry FROM agent_loop_entries e JOIN agent_loop_sessions s ON s.session_id = e.session_id
       WHERE s.session_key = '${sessionKey}' ORDER BY e.seq`
    )).split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as { role: string; content: unknown })
      .filter((entry) => entry.role === "user").map((entry) => typeof entry.content === "string" ? entry.content : JSON.stringify(entry.content))
  const ran = () => fs.readFileSync(toolLog, "utf8").split("\n").filter((line) => line !== "")

  it("every turn's client is told what the log holds, each tool call runs at most once, and the turns complete", async () => {
    const turns = Array.from({ length: TURNS }, (_, i) => ({ session: `blip-${i}`, input: `tools-after ${200 + 40 * i} n${i}` }))
    const running = Promise.all(turns.map(({ input, session }) =>
      runtime.runPromise(Effect.gen(function*() {
        return yield* (yield* AgentLoop).turn(session, input)
      }))
    ))
    let settled = false
    void running.then(() => (settled = true), () => (settled = true))
    // some turns have run their tool, others wait for their model: the database goes away under them
    await waitUntil("some tools to have run", () => ran().length >= 3, 60_000)
    await cluster.pg.restart()
    await waitUntil("every client to get an answer", () => settled, 120_000)
    const results = await running
    const told = results.map((result, i) => ({ session: turns[i]!.session, status: result.status, error: result.error }))
    const calls = ran()
    for (const [i, { input, session }] of turns.entries()) {
      const result = results[i]!
      const logged = (await inputs(session)).filter((text) => text === input).length
      const toldStored = result.messages.some((message) => message.role === "user" && Message.textOf(message.content) === input)
      // what the client was told is what the log holds, once; completed only if it is there
      expect({ session, status: result.status, logged }).toEqual({ session, status: result.status, logged: toldStored ? 1 : 0 })
      if (result.status === "completed") expect(logged).toBe(1)
      expect(calls.filter((line) => line === `record n${i}`).length).toBeLessThanOrEqual(1)
    }
    // the blip is survived: every turn completes (a request whose store was cut is stored again
    // under its key, a session read at the turn's start is read again, a commit whose connection
    // was lost under it is made again)
    expect(told.filter((turn) => turn.status !== "completed")).toEqual([])
  }, 300_000)

  it("turns sent while the database is down: each client is told what the log holds, and the turns complete once it is back", async () => {
    const turns = Array.from({ length: 8 }, (_, i) => ({ session: `down-${i}`, input: `tools m${i}` }))
    const noticed = () => cluster.runners.map((runner) => (runner.output().match(/Could not read messages from storage/g) ?? []).length).reduce((a, b) => a + b, 0)
    let running: Promise<ReadonlyArray<{ status: string; error?: string | undefined; messages: ReadonlyArray<Message.Message> }>> | undefined
    let settled = 0
    await cluster.pg.restart({
      whileDown: async () => {
        const before = noticed()
        running = Promise.all(turns.map(({ input, session }) =>
          runtime.runPromise(Effect.gen(function*() {
            return yield* (yield* AgentLoop).turn(session, input)
          })).finally(() => settled++)
        ))
        // down long enough for the runners to meet it, or for a client to give up
        await waitUntil("the runners to find the database down", () => noticed() > before || settled > 0, 60_000)
      }
    })
    const results = await running!
    const calls = ran()
    for (const [i, { input, session }] of turns.entries()) {
      const result = results[i]!
      const logged = (await inputs(session)).filter((text) => text === input).length
      const toldStored = result.messages.some((message) => message.role === "user" && Message.textOf(message.content) === input)
      expect({ session, status: result.status, error: result.error, logged }).toEqual({ session, status: result.status, error: result.error, logged: toldStored ? 1 : 0 })
      expect(calls.filter((line) => line === `record m${i}`).length).toBeLessThanOrEqual(1)
    }
    expect(results.map((result, i) => ({ session: turns[i]!.session, status: result.status, error: result.error })).filter((turn) => turn.status !== "completed")).toEqual([])
  }, 300_000)
})
