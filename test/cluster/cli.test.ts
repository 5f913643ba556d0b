/**
 * `agent-loop serve` and `agent-loop run --cluster` end to end: a runner process replaying the
 * demo cassette, a throwaway Postgres as the cluster's database, and the CLI sending it a turn.
 */
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { isolatedEnv, launcher, root, runCli, tempDir } from "../support/cliProcess.ts"
import { type ServeProcess, startServe, waitUntil } from "../support/cluster.ts"
import { jsonSpans, startReceiver } from "../support/otlpReceiver.ts"
import { freePort, postgresProbe, postgresSuite, type PostgresServer, startPostgres } from "../support/postgres.ts"

const demoPrompt = "What is in this workspace, and what is the project about?"

describe.skipIf(!postgresProbe.ok)(postgresSuite("agent-loop serve and run --cluster"), () => {
  let pg: PostgresServer
  let serve: ServeProcess
  let metricsPort = 0
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  const env = isolatedEnv(tempDir())
  /** Both sides export their spans to one receiver, each as its own service. */
  const otel = (service: string) => ({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_SERVICE_NAME: service })

  beforeAll(async () => {
    pg = await startPostgres()
    receiver = await startReceiver()
    const port = await freePort()
    metricsPort = await freePort()
    serve = await startServe(launcher, ["--database-url", pg.url(), "--host", "127.0.0.1", "--port", String(port),
      "--metrics-port", String(metricsPort), "--inspect", "0",
      "--replay", path.join(root, "examples", "demo.cassette.jsonl"), "--workspace", path.join(root, "examples", "demo-workspace"),
      "--tools", "list_dir,read_file", "--no-settings", "--no-context-files"], { cwd: root, env: otel("runner") })
    expect(serve.output()).toContain(`runner 127.0.0.1:${port} serving sessions (model demo-model)`)
    expect(serve.output()).toContain(`agent-loop: metrics at http://127.0.0.1:${metricsPort}/metrics`)
    expect(serve.output()).toMatch(/agent-loop: inspector at http:\/\/127\.0\.0\.1:\d+\/\?token=/)
  })

  afterAll(async () => {
    await serve?.stop()
    await receiver?.close()
    await pg?.stop()
  })

  it("run --cluster sends the turn to the runner, which answers from its provider and tools", async () => {
    const result = await runCli(["run", "--cluster", pg.url(), "--session", "demo", "--output-format", "json", demoPrompt], { env: otel("client") })
    expect(result.code).toBe(0)
    const json = JSON.parse(result.stdout)
    expect(json).toMatchObject({ type: "result", status: "completed", sessionKey: "demo", iterations: 3, error: null })
    expect(json.result).toContain("Lighthouse")
    // the tool calls ran on the runner, and their events reached this terminal
    expect(result.stderr).toMatch(/list_dir[\s\S]*read_file/)
    // serve keeps the sessions in the cluster's database, where every runner finds them
    const shown = await runCli(["sessions", "show", "demo", "--store", "postgres", "--database-url", pg.url()], { env })
    expect(shown.stdout).toMatch(new RegExp(`^user: ${demoPrompt.replace("?", "\\?")}\n[\\s\\S]*Lighthouse`))
    // the runner counted the turn it ran (its observer may take a moment after the answer left)
    const sample = async (pattern: RegExp) => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(10_000) })).text()
      return Number(pattern.exec(text)?.[1])
    }
    await waitUntil("the runner's metrics to count the turn", async () => (await sample(/^agent_loop_turns_total\{status="completed",depth="0"\} (\S+)$/m)) === 1)
    expect(await sample(/^agent_loop_iterations_total (\S+)$/m)).toBe(3)
    expect(await sample(/^agent_loop_tool_calls_total\{tool="list_dir",outcome="ok"\} (\S+)$/m)).toBeGreaterThanOrEqual(1)
    expect(await sample(/^agent_loop_tool_calls_total\{tool="read_file",outcome="ok"\} (\S+)$/m)).toBeGreaterThanOrEqual(1)
    // the turn's spans on the runner join the trace of the client that sent it
    const spans = () => jsonSpans(receiver.received.filter((r) => r.path === "/v1/traces"))
    await waitUntil("the runner's turn span to be exported", () => spans().some((s) => s.name === "invoke_agent agent-loop" && s.resource["service.name"] === "runner"))
    const turn = spans().find((s) => s.name === "invoke_agent agent-loop" && s.resource["service.name"] === "runner")!
    const client = spans().filter((s) => s.resource["service.name"] === "client")
    expect(client.length).toBeGreaterThan(0)
    expect(client.some((s) => s.traceId === turn.traceId)).toBe(true)
    expect(turn.parentSpanId).not.toBe("")
    expect(spans().filter((s) => s.name.startsWith("chat ") && s.traceId === turn.traceId)).toHaveLength(3)
  })

  it("run --cluster --output-format stream-json prints the init line, the runner's events and the result line", async () => {
    // The runner's cassette answers one turn, which the test above may have taken: this one checks the lines, whatever the answer.
    const result = await runCli(["run", "--cluster", pg.url(), "--session", "demo-stream", "--output-format", "stream-json", demoPrompt], { env })
    const lines = result.stdout.trimEnd().split("\n").map((line) => JSON.parse(line))
    expect(lines[0]).toMatchObject({ type: "system", subtype: "init", session_id: "demo-stream", tools: [] })
    const events = lines.slice(1, -1).filter((line) => line.type === "event")
    expect(events.map((line) => line._tag)).toEqual(expect.arrayContaining(["TurnStart", "LLMRequest", "TurnEnd"]))
    expect(lines.slice(1, -1).every((line) => ["event", "assistant", "user"].includes(line.type) && typeof line._tag === "string")).toBe(true)
    const last = lines.at(-1)
    const completed = last.status === "completed"
    expect(last).toMatchObject({
      type: "result",
      _tag: "Result",
      session_id: "demo-stream",
      is_error: !completed,
      subtype: completed ? "success" : "error_during_execution"
    })
    expect(result.code).toBe(completed ? 0 : 1)
  })

  it("serve --inspect shows the cluster's runners and the runner's turns in the inspector", async () => {
    const url = /inspector at (\S+)/.exec(serve.output())![1]!
    const page = await fetch(url, { signal: AbortSignal.timeout(10_000) })
    expect(page.status).toBe(200)
    // the API takes the token as a header, as the page's script sends it
    const token = new URL(url).searchParams.get("token")!
    const api = async (route: string) =>
      (await fetch(new URL(route, url), { headers: { "x-agent-loop-token": token }, signal: AbortSignal.timeout(10_000) })).json() as Promise<any>
    const cluster = await api("/api/cluster")
    expect(cluster.runners).toEqual([expect.objectContaining({ address: expect.stringContaining(":"), healthy: true })])
    expect(Array.isArray(cluster.sessions)).toBe(true)
    // the turns this runner ran were seen by its inspector: their timelines have times
    const session = await api("/api/session/demo")
    expect(session.turns.some((t: any) => t.source === "events")).toBe(true)
  })

  it("refuses flags that only the runners decide, and a database that is not Postgres", async () => {
    const tools = await runCli(["run", "--cluster", pg.url(), "--tools", "exec", "hello"], { env })
    expect(tools.code).toBe(1)
    expect(tools.stderr).toContain("--tools: the cluster's runners decide this (agent-loop serve), not run --cluster")
    const url = await runCli(["run", "--cluster", "mysql://user:hunter22@db/x", "hello"], { env })
    expect(url.code).toBe(1)
    expect(url.stderr).toContain("must be a postgres:// URL")
    expect(url.stderr).not.toContain("hunter22")
    // a lock that could expire before two renewals were tried is refused, before anything starts
    const replay = ["--replay", path.join(root, "examples", "demo.cassette.jsonl"), "--no-settings"]
    const timings = await runCli(["serve", "--database-url", pg.url(), ...replay, "--shard-lock-refresh", "5", "--shard-lock-expiration", "10"], { env })
    expect(timings.code).toBe(1)
    expect(timings.stderr).toContain("--shard-lock-expiration must be at least three times --shard-lock-refresh")
    const negative = await runCli(["serve", "--database-url", pg.url(), ...replay, "--retention", "-1"], { env })
    expect(negative.code).toBe(1)
    expect(negative.stderr).toContain("--retention must be a positive number of seconds")
    const shortWindow = await runCli(["serve", "--database-url", pg.url(), ...replay, "--retention", "5"], { env })
    expect(shortWindow.code).toBe(1)
    expect(shortWindow.stderr).toContain("--retention must be at least --shard-lock-expiration")
    // the default retention (600 s) too, against a longer lock expiry
    const longLock = await runCli(["serve", "--database-url", pg.url(), ...replay, "--shard-lock-expiration", "900"], { env })
    expect(longLock.code).toBe(1)
    expect(longLock.stderr).toContain("--retention must be at least --shard-lock-expiration (the retention is 600 s)")
  })

  it("stops on SIGTERM", async () => {
    await serve.stop()
    expect(serve.exitCode()).toBe(143)
  })
})
