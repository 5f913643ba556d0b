/**
 * The edges of `agent-loop serve` and `run --cluster` as their users meet them: a runner process
 * with a cluster secret, a small database pool and its HTTP port (the demo cassette as its model),
 * a throwaway Postgres, and the CLI as the client: refused without the secret or with a wrong one,
 * served with it; connections counted in `pg_stat_activity`; `/healthz`; timestamped logs; and a
 * client that finds no runner failing by its deadline.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { isolatedEnv, launcher, root, runCli, tempDir } from "../support/cliProcess.ts"
import { hasOpenssl, makeCertificates, type ServeProcess, startServe, waitUntil } from "../support/cluster.ts"
import { freePort, postgresProbe, postgresSuite, type PostgresServer, startPostgres } from "../support/postgres.ts"

const demoPrompt = "What is in this workspace, and what is the project about?"
const SECRET = "a cluster secret for the edges"
const POOL = 3

describe.skipIf(!postgresProbe.ok)(postgresSuite("serve and run --cluster at their edges"), () => {
  let pg: PostgresServer
  let serve: ServeProcess
  let port = 0
  let httpPort = 0
  const home = tempDir()
  const env = isolatedEnv(home)
  const secretFile = path.join(home, "cluster.secret")
  /** Connections to the cluster's database other than this query's own. */
  const connections = async (application?: string) =>
    Number(await pg.psql(
      `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()${
        application === undefined ? "" : ` AND application_name = '${application}'`
      }`
    ))

  beforeAll(async () => {
    pg = await startPostgres()
    port = await freePort()
    httpPort = await freePort()
    fs.writeFileSync(secretFile, `${SECRET}\n`)
    serve = await startServe(launcher, [
      "--database-url", pg.url(), "--host", "127.0.0.1", "--port", String(port), "--metrics-port", String(httpPort), "--db-pool-size", String(POOL),
      "--replay", path.join(root, "examples", "demo.cassette.jsonl"), "--workspace", path.join(root, "examples", "demo-workspace"),
      "--tools", "list_dir,read_file", "--no-settings", "--no-context-files"
    ], { cwd: root, env: { ...env, AGENT_LOOP_CLUSTER_SECRET: SECRET } })
  })

  afterAll(async () => {
    await serve?.stop()
    await pg?.stop()
  })

  it("logs with ISO timestamps, and says the runner authenticates its peers", () => {
    expect(serve.output()).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z agent-loop: runner 127\\.0\\.0\\.1:${port} serving sessions \\(model demo-model\\) .*, peers authenticated$`, "m"))
    expect(serve.output()).not.toContain(SECRET)
  })

  it("GET /healthz: the runner's address, the shards it holds, the turns in flight, its storage", async () => {
    await waitUntil("the runner to hold its shards", async () => {
      const body = await (await fetch(`http://127.0.0.1:${httpPort}/healthz`, { signal: AbortSignal.timeout(10_000) })).json() as { shards: number }
      return body.shards === 300
    })
    const response = await fetch(`http://127.0.0.1:${httpPort}/healthz`, { signal: AbortSignal.timeout(10_000) })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toBe("application/json")
    expect(await response.json()).toEqual({ healthy: true, runner: `127.0.0.1:${port}`, shards: 300, sessionsInFlight: 0, lockStorage: { healthy: true } })
  })

  it("a wrong database password: says authentication failed (SQLSTATE 28P01), the password masked, not that the database cannot be reached", async () => {
    await pg.psql("CREATE ROLE agent LOGIN PASSWORD 'the right one'")
    const hba = path.join(pg.dir, "data", "pg_hba.conf")
    fs.writeFileSync(hba, `host all agent 127.0.0.1/32 scram-sha-256\n${fs.readFileSync(hba, "utf8")}`)
    await pg.psql("SELECT pg_reload_conf()")
    const url = `postgres://agent:wrong-password@127.0.0.1:${pg.port}/postgres`
    const wrong = await runCli(["run", "--session", "s", "hi"], { env: { ...env, AGENT_LOOP_CLUSTER_URL: url } })
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toContain(`the cluster's database postgres://agent:***@127.0.0.1:${pg.port}/postgres refused the connection: authentication failed (password authentication failed, SQLSTATE 28P01)`)
    expect(wrong.stderr).not.toContain("cannot be reached")
    expect(wrong.stderr).not.toContain("wrong-password")
  })

  it("refuses a client without the secret, and one with a wrong secret, saying why; nothing is stored", async () => {
    // the cluster named by the variable, then by a file: the forms that keep a password off the command line
    const none = await runCli(["run", "--session", "anonymous", demoPrompt], { env: { ...env, AGENT_LOOP_CLUSTER_URL: pg.url() } })
    expect(none.code).toBe(1)
    expect(none.stderr).toContain(`the cluster's runner at 127.0.0.1:${port} did not accept this client: the runner requires the cluster secret`)
    const wrongFile = path.join(home, "wrong.secret")
    fs.writeFileSync(wrongFile, "not the cluster secret at all\n")
    const urlFile = path.join(home, "cluster.url")
    fs.writeFileSync(urlFile, `${pg.url()}\n`)
    const wrong = await runCli(["run", "--cluster-file", urlFile, "--cluster-secret-file", wrongFile, "--session", "impostor", demoPrompt], { env })
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toContain("did not accept this client: the runner refused this process: its cluster secret is not the runner's")
    await waitUntil("the runner to log the refused peer", () => /Z agent-loop: warn: cluster: refused a connection from 127\.0\.0\.1:\d+: the peer did not prove/.test(serve.output()))
    expect(await pg.psql("SELECT count(*) FROM cluster_messages")).toBe("0")
  })

  it("runs the turn of a client with the secret, on one database connection; the runner stays within its pool", async () => {
    const client = runCli(["run", "--cluster", pg.url(), "--cluster-secret-file", secretFile, "--session", "demo", "--output-format", "json", demoPrompt], { env })
    let most = 0
    let mostRunner = 0
    let done = false
    // what the client's connection ran: a client holds no shard locks, so it reserves no lock
    // connection (which on a one-connection pool would stall every other query until the
    // database closed it)
    const clientQueries = new Set<string>()
    void client.then(() => (done = true))
    while (!done) {
      most = Math.max(most, await connections("agent-loop run --cluster"))
      mostRunner = Math.max(mostRunner, await connections("agent-loop serve"))
      const seen = await pg.psql("SELECT query FROM pg_stat_activity WHERE application_name = 'agent-loop run --cluster'")
      if (seen !== "") clientQueries.add(seen)
    }
    expect(clientQueries.size).toBeGreaterThan(0)
    expect([...clientQueries].filter((query) => /advisory|idle_session_timeout/.test(query))).toEqual([])
    const result = await client
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ status: "completed", sessionKey: "demo", iterations: 3 })
    // sampled: a short run may end between two samples of the count, but never holds two
    // connections (that it connected at all, its queries above show)
    expect(most).toBeLessThanOrEqual(1)
    expect(mostRunner).toBeGreaterThan(0)
    expect(mostRunner).toBeLessThanOrEqual(POOL)
    // the sessions are in the same database, on the same pool: nothing else is connected
    const shown = await runCli(["sessions", "show", "demo", "--store", "postgres", "--database-url", pg.url()], { env })
    expect(shown.stdout).toContain("Lighthouse")
    await waitUntil("only the runner's pool to be connected", async () => (await connections()) === (await connections("agent-loop serve")))
    expect(await connections()).toBeLessThanOrEqual(POOL)
  })

  it("/healthz says 503 while the cluster's database is down, 200 once it is back, and a turn then reaches the runner", async () => {
    const health = async () => {
      const response = await fetch(`http://127.0.0.1:${httpPort}/healthz`, { signal: AbortSignal.timeout(10_000) })
      return { status: response.status, body: await response.json() as { healthy: boolean; lockStorage: { healthy: boolean; error?: string } } }
    }
    expect((await health()).status).toBe(200)
    await pg.restart({
      whileDown: async () => {
        const down = await health()
        expect(down.status).toBe(503)
        expect(down.body.healthy).toBe(false)
        expect(down.body.lockStorage.healthy).toBe(false)
        expect(down.body.lockStorage.error).toBeDefined()
      }
    })
    await waitUntil("the runner to be healthy again", async () => (await health()).status === 200, 60_000)
    const after = await runCli(["run", "--cluster", pg.url(), "--cluster-secret-file", secretFile, "--session", "after-blip", "--output-format", "json", demoPrompt], { env })
    // the runner takes the turn to its model (whose cassette the earlier turn used up when this runs after it)
    expect(after.code === 0 || /ReplayMismatch: .* call #\d+ is extra/.test(after.stderr), after.stderr).toBe(true)
  }, 120_000)

  it("with no runner up, run --cluster fails by its deadline saying so", async () => {
    await pg.createDatabase("no_runners")
    const result = await runCli(["run", "--cluster", pg.url("no_runners"), "--cluster-wait", "2", "--session", "alone", "hello"], { env })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("agent-loop: no runner of the cluster is up (waited 2s): start one with agent-loop serve")
    expect(await pg.psql("SELECT count(*) FROM cluster_messages", "no_runners")).toBe("0")
  })
})

describe.skipIf(!postgresProbe.ok || !hasOpenssl)(postgresSuite("serve with TLS on the runner port, and run --cluster"), () => {
  let pg: PostgresServer
  let serve: ServeProcess
  let port = 0
  const home = tempDir()
  const env = isolatedEnv(home)
  const files = makeCertificates(tempDir("agent-loop-tls-"))
  const secretFile = path.join(home, "cluster.secret")

  beforeAll(async () => {
    pg = await startPostgres()
    port = await freePort()
    fs.writeFileSync(secretFile, SECRET)
    serve = await startServe(launcher, [
      "--database-url", pg.url(), "--host", "127.0.0.1", "--port", String(port), "--cluster-secret-file", secretFile,
      "--cluster-tls-cert", files.cert, "--cluster-tls-key", files.key, "--cluster-tls-ca", files.ca,
      "--replay", path.join(root, "examples", "demo.cassette.jsonl"), "--workspace", path.join(root, "examples", "demo-workspace"),
      "--tools", "list_dir,read_file", "--no-settings", "--no-context-files"
    ], { cwd: root, env })
  })

  afterAll(async () => {
    await serve?.stop()
    await pg?.stop()
  })

  it("says so, and serves a client that trusts its CA and has the secret", async () => {
    expect(serve.output()).toMatch(/serving sessions .*, peers authenticated, TLS$/m)
    const result = await runCli(["run", "--cluster", pg.url(), "--cluster-secret-file", secretFile, "--cluster-tls-ca", files.ca, "--session", "tls", "--output-format", "json", demoPrompt], { env })
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ status: "completed", sessionKey: "tls" })
  })

  it("a client without TLS is told to check whether the runner uses it", async () => {
    const result = await runCli(["run", "--cluster", pg.url(), "--cluster-secret-file", secretFile, "--session", "plain", demoPrompt], { env })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`the cluster's runner at 127.0.0.1:${port} did not accept this client: no handshake answer within 5s (is the runner using TLS?)`)
  })
})
