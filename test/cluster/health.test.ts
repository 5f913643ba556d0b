/**
 * Unit tests of the cluster's edges in one process: a client waiting for a runner (on the
 * `TestClock`, against Effect's in-memory runner storage), the handshake against a real loopback
 * server, and the CLI log line that says what caused a logged error.
 */
import { describe, expect, it } from "@effect/vitest"
import * as net from "node:net"
import { Cause, Data, Effect, Exit, Fiber, Redacted } from "effect"
import { Runner, RunnerAddress, RunnerStorage } from "effect/cluster"
import { TestClock } from "effect/testing"
import { acceptPeer } from "../../src/cluster/auth.ts"
import { awaitRunner, NoRunnerUp } from "../../src/cluster/health.ts"
import * as CliLogger from "../../src/cli/runtime/logger.ts"
import { causeText } from "../../src/cli/runtime/logger.ts"
import * as Screen from "../../src/cli/terminal/screen.ts"

const register = (host: string, port: number, healthy = true) =>
  Effect.flatMap(Effect.service(RunnerStorage.RunnerStorage), (storage) =>
    storage.register(Runner.make({ address: RunnerAddress.make(host, port), groups: ["default"], weight: 1 }), healthy))

/** A loopback server that greets every connection with the runner's side of the handshake. */
const runnerPort = (secret?: string) =>
  Effect.acquireRelease(
    Effect.callback<net.Server>((resume) => {
      const server = net.createServer((conn) => {
        conn.pause()
        Effect.runFork(Effect.ignore(acceptPeer(conn, secret === undefined ? undefined : Redacted.make(secret))))
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  ).pipe(Effect.map((server) => (server.address() as net.AddressInfo).port))

/** A port nothing listens on. */
const closedPort = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const server = net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  }))

describe("awaitRunner: a client waits for a runner by a deadline", () => {
  it.effect("fails with NoRunnerUp at the deadline, not before, when no runner is registered", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(awaitRunner({ deadline: "30 seconds" }))
      yield* TestClock.adjust("29999 millis")
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 millis")
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit)).toBe(true)
      const error = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : undefined
      expect(error?._tag === "Some" && error.value).toBeInstanceOf(NoRunnerUp)
      expect(error?._tag === "Some" && error.value.message).toBe("no runner of the cluster is up (waited 30s): start one with agent-loop serve")
    }).pipe(Effect.provide(RunnerStorage.layerMemory)))

  it.live("says why a registered runner could not be reached when the deadline passes", () =>
    Effect.gen(function*() {
      const dead = yield* closedPort
      yield* register("127.0.0.1", dead)
      const error = yield* Effect.flip(awaitRunner({ deadline: "5 seconds" }))
      expect(error._tag).toBe("NoRunnerUp")
      expect(error.message).toMatch(new RegExp(`^no runner of the cluster could be reached \\(waited 5s\\): cannot reach the runner at 127\\.0\\.0\\.1:${dead}: connect ECONNREFUSED`))
    }).pipe(Effect.provide(RunnerStorage.layerMemory)))

  it.effect("keeps waiting while the only runner is unhealthy", () =>
    Effect.gen(function*() {
      const port = yield* runnerPort()
      yield* register("127.0.0.1", port, false)
      const fiber = yield* Effect.forkChild(awaitRunner({ deadline: "10 seconds" }))
      yield* TestClock.adjust("10 seconds")
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit) && Cause.squash(exit.cause)).toBeInstanceOf(NoRunnerUp)
    }).pipe(Effect.provide(RunnerStorage.layerMemory)))

  it.live("succeeds with the address of a registered runner that passes the handshake", () =>
    Effect.gen(function*() {
      const dead = yield* closedPort
      yield* register("127.0.0.1", dead)
      const port = yield* runnerPort("s3cret")
      yield* register("127.0.0.1", port)
      const address = yield* awaitRunner({ deadline: "20 seconds", security: { secret: Redacted.make("s3cret") } })
      expect(address).toBe(`127.0.0.1:${port}`)
    }).pipe(Effect.scoped, Effect.provide(RunnerStorage.layerMemory)))

  it.live("fails at once, with the runner's reason, when a runner refuses this process", () =>
    Effect.gen(function*() {
      const port = yield* runnerPort("s3cret")
      yield* register("127.0.0.1", port)
      const error = yield* Effect.flip(awaitRunner({ deadline: "1 hour", security: { secret: Redacted.make("wrong") } }))
      expect(error._tag).toBe("ClusterAuthError")
      expect(error.message).toBe("the runner refused this process: its cluster secret is not the runner's")
    }).pipe(Effect.scoped, Effect.provide(RunnerStorage.layerMemory)))
})

class StorageDown extends Data.TaggedError("StorageDown")<{ readonly message: string; readonly cause: unknown }> {}

describe("the CLI's log lines say what caused an error", () => {
  it("an error's tag and message, then what lies beneath it", () => {
    const cause = Cause.fail(new StorageDown({ message: "lock refresh failed", cause: new Error("connection terminated unexpectedly") }))
    expect(causeText(cause)).toBe("StorageDown: lock refresh failed <- Error: connection terminated unexpectedly")
    expect(causeText(Cause.die("boom"))).toBe("boom")
    expect(causeText(Cause.empty)).toBe("")
  })
})

describe("a runner's log lines", () => {
  it.effect("start with their ISO time and end with their cause, as the cluster's own errors are logged", () =>
    Effect.gen(function*() {
      let stderr = ""
      const screen = Screen.make({ stdout: { write: () => true }, stderr: { write: (text: string) => (stderr += text) }, stdinIsTTY: false, env: {} })
      yield* TestClock.setTime(Date.UTC(2026, 4, 4, 10, 0, 0))
      // as Effect Cluster logs it when a shard lock refresh fails
      yield* Effect.logError("Shard lock storage is unhealthy", Cause.fail(new StorageDown({ message: "refresh timed out", cause: new Error("pool exhausted") }))).pipe(
        Effect.provide(CliLogger.layer(screen, { timestamps: true }))
      )
      expect(stderr).toBe("2026-05-04T10:00:00.000Z agent-loop: error: Shard lock storage is unhealthy (cause: StorageDown: refresh timed out <- Error: pool exhausted)\n")
    }))
})
