/**
 * A real cluster for tests and benchmarks: a throwaway Postgres (`postgres.ts`), runner processes
 * (`clusterRunner.ts`) on free loopback ports sharing one sessions directory, and a client layer for
 * this process. Every wait polls a condition against a deadline.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Duration, Layer, Redacted } from "effect"
import type { Sharding } from "effect/cluster"
// the sources, not the package name: benchmarks (bench/) run this under plain Node, without the tests' alias
import * as AgentLoopCluster from "../../src/cluster/AgentLoopCluster.ts"
import type { AgentLoop } from "../../src/services/AgentLoop.ts"
import * as Transport from "../../src/cluster/transport.ts"
import { freePort, type PostgresServer, startPostgres } from "./postgres.ts"
import { waitUntil } from "./waitUntil.ts"

export { waitUntil }

const runnerScript = fileURLToPath(new URL("./clusterRunner.ts", import.meta.url))

/**
 * Fast cluster timings for tests: a stopped runner's sessions move within a few seconds. Storage
 * calls time out after the lock refresh interval, so it stays at two seconds: shorter, and moving
 * a hundred shards on a busy machine times out.
 */
export const fastTimingsMs: Readonly<Record<string, number>> = {
  runnerHealthCheckInterval: 1000,
  shardLockRefreshInterval: 2000,
  shardLockExpiration: 6000,
  refreshAssignmentsInterval: 500,
  entityMessagePollInterval: 500,
  sendRetryInterval: 50
}

/** A runner process. */
export interface RunnerProcess {
  readonly port: number
  readonly child: ChildProcessWithoutNullStreams
  readonly output: () => string
  /** The session keys whose turns started on this runner. */
  readonly sessions: () => ReadonlySet<string>
  /** The turns that ended on this runner, in order. */
  readonly ends: () => ReadonlyArray<{ readonly sessionKey: string; readonly turnId: string; readonly status: string }>
  readonly exited: Promise<void>
}

/** A cluster of `runners` processes on a fresh database. */
export interface TestCluster {
  readonly pg: PostgresServer
  readonly sessionsDir: string
  readonly runners: Array<RunnerProcess>
  readonly startRunner: () => Promise<RunnerProcess>
  /** `AgentLoop` over the cluster for this process, plus its `Sharding`; `security` as the client's own. */
  readonly client: (options?: AgentLoopCluster.ClientOptions, security?: AgentLoopCluster.ClusterSecurity) => Layer.Layer<AgentLoop | Sharding.Sharding, unknown>
  readonly close: () => Promise<void>
}

/** Shards of the default group (Effect's default, which the runners keep). */
const SHARDS = 300

const sharding = (timingsMs: Readonly<Record<string, number>>) =>
  Object.fromEntries(Object.entries(timingsMs).map(([name, ms]) => [name, Duration.millis(ms)]))

/** How the runners of `startCluster` guard their port, and how fast their model is. */
export interface RunnerSetup {
  /** How long the runners' scripted model takes to answer an ordinary prompt (default: at once). */
  readonly modelDelayMs?: number
  /** The cluster secret, given to the runners in `AGENT_LOOP_CLUSTER_SECRET`. */
  readonly secret?: string
  /** PEM files: the runners listen with TLS. */
  readonly tls?: { readonly cert: string; readonly key: string; readonly ca: string }
}

/** Starts Postgres and `count` runners, each ready; `toolLog` gives the runners their tools (`clusterRunner.ts`). */
export const startCluster = async (
  count: number,
  timingsMs = fastTimingsMs,
  options: { readonly store?: "jsonl" | "sql"; readonly retentionMs?: number; readonly retentionIntervalMs?: number; readonly toolLog?: string } & RunnerSetup = {}
): Promise<TestCluster> => {
  const { secret, ...setup } = options
  const pg = await startPostgres()
  const sessionsDir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-cluster-"))
  const runners: Array<RunnerProcess> = []
  const startRunner = async (): Promise<RunnerProcess> => {
    const port = await freePort()
    // the secret goes in the environment, never on the command line
    const spec = { databaseUrl: pg.url(), port, sessionsDir, timingsMs, ...setup }
    const { AGENT_LOOP_CLUSTER_SECRET: _inherited, ...inherited } = process.env
    const env = { ...inherited, ...(secret === undefined ? {} : { AGENT_LOOP_CLUSTER_SECRET: secret }) }
    const child = spawn(process.execPath, [runnerScript, JSON.stringify(spec)], { stdio: ["pipe", "pipe", "pipe"], env })
    let output = ""
    const sessions = new Set<string>()
    const ends: Array<{ sessionKey: string; turnId: string; status: string }> = []
    let pending = ""
    child.stdout.on("data", (chunk) => {
      output += chunk
      // whole lines only: a chunk may end mid-line
      const lines = (pending + String(chunk)).split("\n")
      pending = lines.pop()!
      for (const line of lines) {
        const started = /^turn (\S+) /.exec(line)
        if (started) sessions.add(started[1]!)
        const ended = /^end (\S+) (\S+) (\S+)/.exec(line)
        if (ended) ends.push({ sessionKey: ended[1]!, turnId: ended[2]!, status: ended[3]! })
      }
    })
    child.stderr.on("data", (chunk) => (output += chunk))
    // closing the stdin of a runner a test killed fails with EPIPE: expected, not an error of the test
    child.stdin.on("error", () => {})
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
    const runner = { port, child, output: () => output, sessions: () => sessions, ends: () => ends, exited }
    runners.push(runner)
    await waitUntil(`runner on port ${port} to be ready (output so far: ${output})`, () => /^ready$/m.test(output) || child.exitCode !== null)
    if (child.exitCode !== null) throw new Error(`runner on port ${port} exited: ${output}`)
    return runner
  }
  /** Every shard held, by every runner: until then shards are still moving and may cut turns short. */
  const balanced = async () => {
    const rows = await pg.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted GROUP BY pid")
    const perRunner = rows.split("\n").filter((line) => line !== "").map(Number)
    return perRunner.length >= runners.filter((r) => r.child.exitCode === null).length && perRunner.reduce((a, b) => a + b, 0) >= SHARDS
  }
  try {
    for (let i = 0; i < count; i++) await startRunner()
    await waitUntil("the shards to be shared out among the runners", balanced, 60_000)
  } catch (error) {
    for (const runner of runners) runner.child.stdin.end()
    await pg.stop()
    throw error
  }
  const client = (options: AgentLoopCluster.ClientOptions = {}, clientSecurity: AgentLoopCluster.ClusterSecurity = {}) =>
    AgentLoopCluster.layerClientWith(options).pipe(
      Layer.provideMerge(Transport.layerClient({ sharding: sharding(timingsMs), security: clientSecurity })),
      Layer.provide(PgClient.layer({ url: Redacted.make(pg.url()) }))
    )
  const close = async () => {
    for (const runner of runners) runner.child.stdin.end()
    await Promise.all(runners.map((runner) => Promise.race([runner.exited, new Promise((r) => setTimeout(r, 5000))])))
    for (const runner of runners) if (runner.child.exitCode === null) runner.child.kill("SIGKILL")
    await pg.stop()
    fs.rmSync(sessionsDir, { recursive: true, force: true })
  }
  return { pg, sessionsDir, runners, startRunner, client, close }
}

/** Runs a command and kills it when this process's end closes its stdin, so it never outlives the test. */
const GUARD = `const { spawn } = require("node:child_process")
const child = spawn(process.argv[1], process.argv.slice(2), { stdio: ["ignore", "inherit", "inherit"] })
process.stdin.on("end", () => child.kill("SIGKILL"))
process.stdin.resume()
process.on("SIGTERM", () => child.kill("SIGTERM"))
child.on("exit", (code, signal) => process.exit(code ?? (signal === "SIGTERM" ? 143 : 1)))`

/** A running `agent-loop serve`. */
export interface ServeProcess {
  readonly output: () => string
  readonly exitCode: () => number | null
  /** Stops it (SIGTERM) and waits for its exit. */
  readonly stop: () => Promise<void>
  /** Kills it (SIGKILL, by its guard) and waits for its exit. */
  readonly kill: () => Promise<void>
}

/**
 * Starts `agent-loop serve ARGS` (from the sources, in `cwd`) behind a guard that kills it when this
 * process ends, and waits until it serves.
 */
export const startServe = async (launcher: string, args: ReadonlyArray<string>, options: { readonly cwd: string; readonly env: Record<string, string> }): Promise<ServeProcess> => {
  const child = spawn(process.execPath, ["-e", GUARD, process.execPath, launcher, "serve", ...args], { cwd: options.cwd, env: options.env, stdio: ["pipe", "pipe", "pipe"] })
  // closing the stdin of a guard that already exited fails with EPIPE: expected, not an error of the test
  child.stdin.on("error", () => {})
  let output = ""
  child.stdout.on("data", (chunk) => (output += chunk))
  child.stderr.on("data", (chunk) => (output += chunk))
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  await waitUntil(`serve to start (output: ${output})`, () => output.includes("serving sessions") || child.exitCode !== null, 60_000)
  if (child.exitCode !== null) throw new Error(`serve exited: ${output}`)
  return {
    output: () => output,
    exitCode: () => child.exitCode,
    stop: async () => {
      child.kill("SIGTERM")
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 20_000))])
      child.stdin.end()
    },
    // the guard kills the command with SIGKILL when its stdin closes, then exits with it
    kill: async () => {
      child.stdin.end()
      await exited
    }
  }
}

/** A CA, and a certificate it signed for 127.0.0.1 (openssl). */
export const makeCertificates = (dir: string) => {
  const file = (name: string) => path.join(dir, name)
  const run = (args: ReadonlyArray<string>) => {
    const result = spawnSync("openssl", args, { encoding: "utf8" })
    if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr}`)
  }
  run(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", file("ca.key"), "-out", file("ca.pem"), "-days", "1", "-subj", "/CN=test cluster CA"])
  run(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", file("runner.key"), "-out", file("runner.csr"), "-subj", "/CN=127.0.0.1"])
  fs.writeFileSync(file("ext.cnf"), "subjectAltName=IP:127.0.0.1\n")
  run(["x509", "-req", "-in", file("runner.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"), "-CAcreateserial", "-out", file("runner.pem"), "-days", "1", "-extfile", file("ext.cnf")])
  return { cert: file("runner.pem"), key: file("runner.key"), ca: file("ca.pem") }
}

/** Whether `openssl` is installed, to make certificates with. */
export const hasOpenssl = spawnSync("openssl", ["version"]).status === 0
