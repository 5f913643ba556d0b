/**
 * `agent-loop run --cluster` when the runner running its turn stops: the CLI says the turn was
 * aborted because its runner stopped, and exits 1 — not 130, which means Ctrl-C. Two runner
 * processes on a throwaway Postgres (fast cluster timings), the real CLI as the client.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LOST_TURN_ERROR } from "../../src/cluster/entity.ts"
import { isolatedEnv, spawnCli, tempDir } from "../support/cliProcess.ts"
import { startCluster, type TestCluster, waitUntil } from "../support/cluster.ts"
import { postgresProbe, postgresSuite } from "../support/postgres.ts"

describe.skipIf(!postgresProbe.ok)(postgresSuite("run --cluster when its runner stops"), () => {
  let cluster: TestCluster

  beforeAll(async () => {
    cluster = await startCluster(2)
  }, 120_000)

  afterAll(async () => {
    await cluster?.close()
  })

  it("a turn lost with its runner is reported as such and exits 1", async () => {
    const key = "lost-on-runner"
    // the runners' scripted model never finishes a prompt starting with "hang"
    const cli = spawnCli(["run", "--cluster", cluster.pg.url(), "--session", key, "hang until the runner stops"], { env: isolatedEnv(tempDir()) })
    await waitUntil("the turn to start on a runner", () => cluster.runners.some((runner) => runner.sessions().has(key)), 60_000)
    const owner = cluster.runners.find((runner) => runner.sessions().has(key))!
    owner.child.kill("SIGKILL")
    await owner.exited
    const { code } = await Promise.race([
      cli.exited,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`the CLI did not end: ${cli.stderr()}`)), 90_000))
    ])
    expect(cli.stderr()).toContain(`agent-loop: turn aborted: ${LOST_TURN_ERROR}\n`)
    expect(code).toBe(1)
  }, 150_000)
})
