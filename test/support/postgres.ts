/**
 * A throwaway PostgreSQL server for tests: the distribution's own binaries (`initdb`, `postgres`),
 * a fresh data directory under `os.tmpdir()`, a free port on 127.0.0.1, trust authentication for
 * the user `postgres`, and no fsync (nothing here must survive the test).
 *
 * The server refuses to run as root, so under root it runs as the `postgres` user (`runuser`, else
 * `su`), in a directory handed over to that user. It is started by a small shell watchdog whose
 * stdin is a pipe from this process: when this process exits, however it exits (even SIGKILL), the
 * pipe closes, the watchdog stops the server (fast shutdown) and removes the data directory. So no
 * server outlives the test run.
 *
 * Where Postgres is not installed, `postgresProbe` says why, and the tests that need it skip with
 * that reason in their name (`postgresSuite`). Nothing here needs vitest, so benchmarks use it too.
 *
 * @example
 * ```ts
 * import { describe, it } from "vitest"
 * import { postgresProbe, postgresSuite, startPostgres } from "./support/postgres.ts"
 *
 * describe.skipIf(!postgresProbe.ok)(postgresSuite("my store on Postgres"), () => {
 *   it("works", async () => {
 *     const pg = await startPostgres()
 *     try {
 *       // connect to pg.url (postgres://postgres@127.0.0.1:PORT/postgres)
 *       await pg.createDatabase("fresh")
 *     } finally {
 *       await pg.stop()
 *     }
 *   })
 * })
 * ```
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { Context, Effect, Layer, Redacted } from "effect"
import * as PgClient from "@effect/sql-pg/PgClient"

/** Where the server binaries are, or why there are none. */
export type PostgresProbe =
  | { readonly ok: true; readonly bin: string; readonly version: string }
  | { readonly ok: false; readonly reason: string }

const isExecutable = (file: string) => {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}

const hasServer = (dir: string) => isExecutable(path.join(dir, "initdb")) && isExecutable(path.join(dir, "postgres"))

/** Numeric-aware descending order, so `/usr/lib/postgresql/16` comes before `/15` and `/9.6`. */
const byVersionDescending = (a: string, b: string) => b.localeCompare(a, "en", { numeric: true })

/**
 * The directory holding `initdb` and `postgres`: `$PG_BIN` when set, else the first such directory on
 * `PATH`, else the newest `/usr/lib/postgresql/<version>/bin` (Debian, Ubuntu) or
 * `/usr/pgsql-<version>/bin` (RHEL), whatever the version.
 */
export const findPostgresBin = (env: NodeJS.ProcessEnv = process.env): string | undefined => {
  const own = env["PG_BIN"]
  if (own !== undefined && own !== "") return hasServer(own) ? own : undefined
  for (const dir of (env["PATH"] ?? "").split(path.delimiter)) {
    if (dir !== "" && hasServer(dir)) return fs.realpathSync(path.join(dir, "initdb")).replace(/\/initdb$/, "")
  }
  const candidates: Array<string> = []
  const listed = (parent: string, child: (name: string) => string) => {
    try {
      for (const name of fs.readdirSync(parent).sort(byVersionDescending)) candidates.push(child(name))
    } catch {
      // not this distribution's layout
    }
  }
  listed("/usr/lib/postgresql", (version) => path.join("/usr/lib/postgresql", version, "bin"))
  listed("/usr", (name) => (name.startsWith("pgsql-") ? path.join("/usr", name, "bin") : ""))
  return candidates.find((dir) => dir !== "" && hasServer(dir))
}

const isRoot = typeof process.getuid === "function" && process.getuid() === 0

/** How to run a command as the `postgres` user when we are root; `undefined` when not root. */
const asPostgresUser = (): ((argv: ReadonlyArray<string>) => [string, Array<string>]) | string | undefined => {
  if (!isRoot) return undefined
  if (spawnSync("id", ["-u", "postgres"]).status !== 0) return "running as root, and there is no postgres user to run the server as"
  if (isExecutable("/usr/sbin/runuser") || spawnSync("runuser", ["--help"]).status === 0) {
    return (argv) => ["runuser", ["-u", "postgres", "--", ...argv]]
  }
  return (argv) => ["su", ["postgres", "-s", "/bin/sh", "-c", argv.map(shellQuote).join(" ")]]
}

const shellQuote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`

/** Whether a throwaway server can be started here, and with which binaries. Computed once. */
export const postgresProbe: PostgresProbe = (() => {
  const bin = findPostgresBin()
  if (bin === undefined) {
    return { ok: false, reason: "Postgres is not installed (apt-get install -y postgresql, or set PG_BIN)" }
  }
  const runAs = asPostgresUser()
  if (typeof runAs === "string") return { ok: false, reason: runAs }
  const version = spawnSync(path.join(bin, "postgres"), ["--version"], { encoding: "utf8" })
  if (version.status !== 0) return { ok: false, reason: `${bin}/postgres --version failed: ${version.stderr.trim()}` }
  return { ok: true, bin, version: version.stdout.trim() }
})()

/**
 * The name of a suite that needs Postgres: as given where it is installed, and elsewhere saying why
 * it is skipped. Use with `describe.skipIf(!postgresProbe.ok)(postgresSuite("..."), ...)`.
 */
export const postgresSuite = (name: string): string =>
  postgresProbe.ok ? name : `${name}: SKIPPED because ${postgresProbe.reason}`

/** A running throwaway server. */
export interface PostgresServer {
  readonly host: "127.0.0.1"
  readonly port: number
  readonly user: "postgres"
  /** The database that exists from the start. */
  readonly database: "postgres"
  /** The server's temporary directory (data, log, socket); removed when it stops. */
  readonly dir: string
  /** `postgres://postgres@127.0.0.1:PORT/DATABASE` (no password: trust authentication). */
  readonly url: (database?: string) => string
  /** Creates an empty database (e.g. one per test). */
  readonly createDatabase: (name: string) => Promise<void>
  /** Runs SQL through `psql` and returns its unaligned, tuples-only output. */
  readonly psql: (sql: string, database?: string) => Promise<string>
  /** Stops the server (fast shutdown) and removes its directory; safe to call twice. */
  readonly stop: () => Promise<void>
  /**
   * Restarts the server as `pg_ctl restart -m fast` does: every connection is closed (SQLSTATE
   * `57P01`), the server stops and starts again on the same port and data; resolves once it
   * accepts connections again.
   */
  readonly restart: (options?: RestartOptions) => Promise<void>
}

/** How `restart` goes. */
export interface RestartOptions {
  /** Runs once the server has stopped, before it starts again: the database is down meanwhile. */
  readonly whileDown?: () => Promise<void>
}

/** Starting or talking to the server went wrong; `log` is the server's own log so far. */
export class PostgresHarnessError extends Error {
  readonly log: string
  constructor(message: string, log = "") {
    super(log === "" ? message : `${message}\n--- server log ---\n${log}`)
    this.log = log
  }
}

/** A port that was free a moment ago on 127.0.0.1. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))))
    })
  })

/**
 * The watchdog: starts the server in the background; when its stdin closes (a `stop()` or the death
 * of the test process) it stops the server (fast shutdown); when the server has exited (stopped or
 * failed) it leaves `exited` beside the log; once both have happened it removes the directory. A
 * server that exits while the file `restart` is beside it (`restart()`) is started again instead.
 * Background jobs of a non-interactive shell get /dev/null as stdin, hence the copy on fd 3.
 */
const WATCHDOG = `
exec 3<&0
bin=$1 dir=$2 port=$3
start() {
  "$bin/postgres" -D "$dir/data" -h 127.0.0.1 -p "$port" -k "$dir" -c fsync=off -c synchronous_commit=off \\
    -c full_page_writes=off -c max_connections=200 -c shared_buffers=32MB </dev/null >>"$dir/server.log" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/server.pid"
}
start
( cat <&3 >/dev/null; : >"$dir/stopping"; kill -INT "$(cat "$dir/server.pid")" 2>/dev/null ) &
exec 3<&-
while :; do
  wait "$pid"
  if [ -e "$dir/restart" ] && [ ! -e "$dir/stopping" ]; then
    while [ -e "$dir/hold" ] && [ ! -e "$dir/stopping" ]; do sleep 0.05; done
    rm -f "$dir/restart"; start
  else break; fi
done
: >"$dir/exited"
wait
rm -rf "$dir"
`

const run = (argv: ReadonlyArray<string>, options: { readonly input?: string } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve, reject) => {
    const runAs = asPostgresUser()
    const [command, args] = typeof runAs === "function" ? runAs(argv) : [argv[0]!, argv.slice(1)]
    const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"] })
    // a command that exits before reading its input closes the pipe: its exit code says what happened
    child.stdin.on("error", () => {})
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(options.input ?? "")
  })

const readIfExists = (file: string) => {
  try {
    return fs.readFileSync(file, "utf8")
  } catch {
    return ""
  }
}

const canConnect = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port })
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Options of `startPostgres`. */
export interface StartOptions {
  /** How long the server may take to accept connections; default 60 s (initdb included). */
  readonly timeoutMs?: number
}

/**
 * Starts a fresh server; resolves once it accepts connections. Always `stop()` it (the harness also
 * stops it when this process exits).
 */
export const startPostgres = async (options: StartOptions = {}): Promise<PostgresServer> => {
  if (!postgresProbe.ok) throw new PostgresHarnessError(postgresProbe.reason)
  const bin = postgresProbe.bin
  const deadline = Date.now() + (options.timeoutMs ?? 60_000)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-pg-"))
  if (isRoot) spawnSync("chown", ["postgres:", dir])
  const removeDir = () => fs.rmSync(dir, { recursive: true, force: true })
  const init = await run([path.join(bin, "initdb"), "-D", path.join(dir, "data"), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
  if (init.code !== 0) {
    removeDir()
    throw new PostgresHarnessError(`initdb failed (exit ${init.code})`, init.stdout + init.stderr)
  }
  // a port can be taken between probing it and the server binding it: try a few
  for (let attempt = 1; ; attempt++) {
    const port = await freePort()
    const started = await launch(bin, dir, port, deadline)
    if (started.ok) return serverFor(bin, dir, port, started.child)
    const portTaken = /could not bind|Address already in use/.test(started.log)
    if (!portTaken || attempt === 3 || Date.now() > deadline) {
      removeDir()
      throw new PostgresHarnessError(`postgres did not start: ${started.reason}`, started.log)
    }
  }
}

type Launch = { readonly ok: true; readonly child: ChildProcess } | { readonly ok: false; readonly reason: string; readonly log: string }

const launch = async (bin: string, dir: string, port: number, deadline: number): Promise<Launch> => {
  const runAs = asPostgresUser()
  const argv = ["sh", "-c", WATCHDOG, "watchdog", bin, dir, String(port)]
  const [command, args] = typeof runAs === "function" ? runAs(argv) : [argv[0]!, argv.slice(1)]
  // detached: Ctrl-C in a terminal reaches the test runner, which closes the pipe; the server itself
  // is never signalled by anyone but the watchdog
  const child = spawn(command, args, { stdio: ["pipe", "ignore", "ignore"], detached: true })
  // ending the stdin of a watchdog that already exited fails with EPIPE: the server is gone either way
  child.stdin?.on("error", () => {})
  child.unref()
  let exited = false
  child.once("exit", () => (exited = true))
  const log = () => readIfExists(path.join(dir, "server.log"))
  while (Date.now() < deadline) {
    if (exited || fs.existsSync(path.join(dir, "exited"))) return { ok: false, reason: "the server exited", log: log() }
    const pid = readIfExists(path.join(dir, "data", "postmaster.pid")).split("\n")
    // line 8 of postmaster.pid is the server's status once it is up
    if (pid[7]?.trim() === "ready" && pid[3]?.trim() === String(port) && (await canConnect(port))) return { ok: true, child }
    await delay(50)
  }
  child.stdin?.end()
  return { ok: false, reason: "no connection before the deadline", log: log() }
}

const serverFor = (bin: string, dir: string, port: number, child: ChildProcess): PostgresServer => {
  const url = (database = "postgres") => `postgres://postgres@127.0.0.1:${port}/${database}`
  const psql = async (sql: string, database = "postgres") => {
    const result = await run([path.join(bin, "psql"), "-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", database, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
    if (result.code !== 0) throw new PostgresHarnessError(`psql failed: ${result.stderr.trim()}`)
    return result.stdout.trim()
  }
  let stopped: Promise<void> | undefined
  const stop = () => {
    stopped ??= new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      // the watchdog is unreferenced so that a forgotten server never keeps this process alive; while
      // stopping, it must, or the process could exit before the server is gone
      child.ref()
      child.once("exit", () => resolve())
      child.stdin?.end()
    }).then(() => fs.rmSync(dir, { recursive: true, force: true }))
    return stopped
  }
  const restart = async (options: RestartOptions = {}) => {
    const pidFile = path.join(dir, "data", "postmaster.pid")
    const before = readIfExists(pidFile).split("\n")[0]?.trim()
    const hold = path.join(dir, "hold")
    if (options.whileDown !== undefined) fs.writeFileSync(hold, "")
    fs.writeFileSync(path.join(dir, "restart"), "")
    process.kill(Number(readIfExists(path.join(dir, "server.pid")).trim()), "SIGINT")
    if (options.whileDown !== undefined) {
      try {
        const down = Date.now() + 60_000
        // stopped: its pid file is gone, and it accepts no connection
        while (fs.existsSync(pidFile) || (await canConnect(port))) {
          if (Date.now() > down) throw new PostgresHarnessError("postgres did not stop for a restart", readIfExists(path.join(dir, "server.log")))
          await delay(20)
        }
        await options.whileDown()
      } finally {
        fs.rmSync(hold, { force: true })
      }
    }
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline) {
      const pid = readIfExists(pidFile).split("\n")
      if (pid[0]?.trim() !== before && pid[7]?.trim() === "ready" && (await canConnect(port))) return
      await delay(20)
    }
    throw new PostgresHarnessError("postgres did not come back after a restart", readIfExists(path.join(dir, "server.log")))
  }
  return {
    host: "127.0.0.1",
    port,
    restart,
    user: "postgres",
    database: "postgres",
    dir,
    url,
    psql,
    createDatabase: async (name) => {
      await psql(`CREATE DATABASE "${name.replaceAll("\"", "\"\"")}"`)
    },
    stop
  }
}

/** The running server, for Effect tests (see `layer`). */
export class Postgres extends Context.Service<Postgres, PostgresServer>()("test/Postgres") {}

/** A server for the life of the layer. */
export const layer: Layer.Layer<Postgres, PostgresHarnessError> = Layer.effect(
  Postgres,
  Effect.acquireRelease(
    Effect.tryPromise({ try: () => startPostgres(), catch: (e) => (e instanceof PostgresHarnessError ? e : new PostgresHarnessError(String(e))) }),
    (server) => Effect.promise(() => server.stop())
  )
)

/** An `@effect/sql-pg` client (also the `SqlClient`) on the server's `postgres` database. */
export const layerClient = (database = "postgres") =>
  Layer.unwrap(Effect.gen(function*() {
    const server = yield* Postgres
    return PgClient.layer({ url: Redacted.make(server.url(database)) })
  }))
