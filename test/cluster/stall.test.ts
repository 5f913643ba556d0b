/**
 * A client waiting on a turn without progress gives up after its `progressTimeout`: a request no
 * runner started is cancelled in the same step and never runs later (its runner frozen with
 * SIGSTOP, then woken); a turn that runs on its session's runner past the timeout is waited for.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, ManagedRuntime } from "effect"
import type { Sharding } from "effect/cluster"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AgentLoop, AgentLoopCluster } from "effect-agent-loop"
import { startCluster, type TestCluster, waitUntil } from "../support/cluster.ts"
import { postgresProbe, postgresSuite } from "../support/postgres.ts"

describe.skipIf(!postgresProbe.ok)(postgresSuite("a turn without progress"), () => {
  let cluster: TestCluster
  let runtime: ManagedRuntime.ManagedRuntime<AgentLoop | Sharding.Sharding, unknown>
  const toolLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-stall-")), "tools.log")

  beforeAll(async () => {
    fs.writeFileSync(toolLog, "")
    cluster = await startCluster(1, undefined, { store: "sql", toolLog })
    runtime = ManagedRuntime.make(cluster.client({ progressTimeout: "3 seconds", controlTimeout: "2 seconds" }))
  }, 180_000)

  afterAll(async () => {
    cluster?.runners[0]?.child.kill("SIGCONT")
    await runtime?.dispose()
    await cluster?.close()
  })

  const turn = (session: string, input: string) =>
    runtime.runPromise(Effect.gen(function*() {
      return yield* (yield* AgentLoop).turn(session, input)
    }))
  /** How many messages of the session the log holds (its other records, such as turn outcomes, aside). */
  const logged = async (session: string) =>
    (await cluster.pg.psql(
      `SELECT count(*) FROM agent_loop_entries e JOIN agent_loop_sessions s ON s.session_id = e.session_id WHERE s.session_key = '${session}' AND e.entry::jsonb->>'role' IN ('user', 'assistant', 'tool')`
    )).trim()

  it("a request no runner started is cancelled when its client gives up, and never runs", async () => {
    const runner = cluster.runners[0]!
    runner.child.kill("SIGSTOP")
    let result: Awaited<ReturnType<typeof turn>>
    try {
      result = await turn("stalled", "tools never")
    } finally {
      runner.child.kill("SIGCONT")
    }
    expect([result.status, result.error]).toEqual([
      "failed",
      "the turn made no progress for 3s: no runner had started it, so it was cancelled and will not run"
    ])
    // woken, the runner answers the stored request, unrun
    await waitUntil("the stored request to be answered", async () => (await cluster.pg.psql("SELECT count(*) FROM cluster_messages WHERE kind = 0 AND NOT processed")).trim() === "0", 60_000)
    expect(await cluster.pg.psql("SELECT fate FROM agent_loop_request_fates")).toContain("cancelled")
    expect(await logged("stalled")).toBe("0")
    expect(fs.readFileSync(toolLog, "utf8")).not.toContain("record never")
    // a request whose client cancelled it first (its interrupt lost, say) is refused by its runner, unrun
    await cluster.pg.psql("INSERT INTO agent_loop_request_fates (request_key, fate, decided_at) VALUES ('given-up', 'cancelled', 0)")
    const refused = await runtime.runPromise(Effect.gen(function*() {
      return yield* (yield* AgentLoopCluster.AgentSession.client)("stalled").Turn({ input: "tools refused", key: "given-up" })
    }))
    expect([refused.result.status, refused.result.error]).toEqual(["failed", "the runner refused the request: its client cancelled it (it gave up waiting), so it does not run"])
    expect(await logged("stalled")).toBe("0")
    expect(fs.readFileSync(toolLog, "utf8")).not.toContain("record refused")
    // the session works on
    const next = await turn("stalled", "tools after")
    expect(next.status).toBe("completed")
  }, 180_000)

  it("a turn that runs on its session's runner past the timeout is waited for", async () => {
    const result = await turn("slow", "wait 7000")
    expect([result.status, result.error]).toEqual(["completed", undefined])
    expect(await logged("slow")).toBe("2")
  }, 180_000)
})
