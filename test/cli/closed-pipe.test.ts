/**
 * A reader that stops early (`agent-loop models | head -1`) closes the pipe under the CLI: it stops
 * quietly with 141 (128 + SIGPIPE, as Unix tools end), not with an unhandled EPIPE stack trace.
 */
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, spawnCli, tempDir } from "../support/cliProcess.ts"

describe("stdout closed by its reader", () => {
  it("models into a closed pipe exits 141 without a stack trace", async () => {
    const cli = spawnCli(["models"], { env: isolatedEnv(tempDir()) })
    // the reading end goes away before the CLI has written anything
    cli.child.stdout!.destroy()
    const { code } = await cli.exited
    expect(cli.stderr()).not.toMatch(/EPIPE|Unhandled|at /)
    expect(code).toBe(141)
  })
})
