/**
 * The HTTP API on a cluster: three real `agent-loop serve --database-url … --api-port 0` runners
 * on a throwaway Postgres, each with its own loopback model. A turn posted to one runner's API runs
 * on its session's runner, wherever that is; that runner is killed (SIGKILL) while the model call
 * is in flight; the turn completes on another runner, the runner it was posted to answers its
 * result, the log holds it once, and clients following its events see it end (no hang): one on
 * the server's stream, one on the session's stream, and one whose runner died under it and that
 * reconnects to another runner with `Last-Event-ID`, missing nothing and getting nothing twice.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { isolatedEnv, launcher, root, tempDir } from "../support/cliProcess.ts"
import { type ServeProcess, startServe, waitUntil } from "../support/cluster.ts"
import { gate, type OpenAiServer, type Received, start } from "../support/openaiServer.ts"
import { freePort, postgresProbe, postgresSuite, type PostgresServer, startPostgres } from "../support/postgres.ts"
import { openEventStream, type SseFrame } from "../support/sse.ts"

const TOKEN = "cluster-api-token-0123456789"
const headers = { authorization: `Bearer ${TOKEN}` }
const RUNNERS = 3
/** Effect Cluster's shards of the default group. */
const SHARDS = 300

/** The text of the request's last user message. */
const lastUser = (request: Received): string => {
  const users = (request.body?.messages ?? []).filter((m: any) => m.role === "user")
  const content = users.at(-1)?.content
  return typeof content === "string" ? content : Array.isArray(content) ? content.map((part: any) => part.text ?? "").join("") : ""
}

interface Runner {
  readonly serve: ServeProcess
  readonly model: OpenAiServer
  readonly api: string
}

describe.skipIf(!postgresProbe.ok)(postgresSuite("the HTTP API on a cluster"), () => {
  let pg: PostgresServer
  const runners: Array<Runner> = []
  const home = tempDir()
  const workspace = path.join(home, "ws")
  /** The model call of the first `hold` turn never answers: its runner is killed during it. */
  const held = gate()
  let holding = false

  beforeAll(async () => {
    fs.mkdirSync(workspace)
    pg = await startPostgres()
    const env = isolatedEnv(home, { AGENT_LOOP_SERVER_TOKEN: TOKEN })
    for (let i = 0; i < RUNNERS; i++) {
      const model = await start((request) => {
        const text = lastUser(request)
        if (text.startsWith("hold") && !holding) {
          holding = true
          return { before: held.promise, text: "never sent" }
        }
        return { text: `answered: ${text}` }
      })
      const port = await freePort()
      const serve = await startServe(launcher, [
        "--database-url", pg.url(), "--host", "127.0.0.1", "--port", String(port), "--api-port", "0",
        "--shard-lock-refresh", "2", "--shard-lock-expiration", "6",
        "--base-url", model.url, "--model", "fake-model", "--workspace", workspace, "--no-settings", "--no-context-files"
      ], { cwd: root, env })
      const api = /API at (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(serve.output())?.[1]
      expect(api, serve.output()).toBeDefined()
      runners.push({ serve, model, api: api! })
    }
    // every shard held: until then shards are still moving between the runners
    await waitUntil("the shards to be shared out among the runners", async () => {
      const rows = await pg.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted GROUP BY pid")
      const held = rows.split("\n").filter((line) => line !== "").map(Number)
      return held.length >= RUNNERS && held.reduce((a, b) => a + b, 0) >= SHARDS
    }, 120_000)
  }, 240_000)

  afterAll(async () => {
    held.open()
    for (const runner of runners) await runner.serve.stop()
    for (const runner of runners) await runner.model.close()
    await pg?.stop()
  }, 120_000)

  const call = async (api: string, method: string, route: string, body?: unknown) => {
    const response = await fetch(`${api}${route}`, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(90_000)
    })
    return { status: response.status, body: await response.json() as any }
  }
  /** The runner whose model was asked `text`: the one that ran the turn. */
  const ranOn = (text: string) => runners.findIndex((runner) => runner.model.requests.some((request) => lastUser(request) === text))
  const events = (frames: ReadonlyArray<SseFrame>) => frames.filter((frame) => frame.event === undefined).map((frame) => ({ id: frame.id, event: JSON.parse(frame.data) }))

  it("a turn posted to one runner, whose own runner is killed mid-call, completes on another; its followers see it end", async () => {
    // a session that lives on another runner than the one the turn is posted to (runner 0)
    let key = ""
    for (let i = 0; i < 12 && key === ""; i++) {
      const probe = `probe ${i}`
      const posted = await call(runners[0]!.api, "POST", `/v1/sessions/api-failover-${i}/turns`, { message: probe })
      expect(posted.status).toBe(202)
      const done = await call(runners[0]!.api, "GET", `/v1/turns/${posted.body.turnId}?wait=60`)
      expect(done.body).toMatchObject({ status: "done", result: { status: "completed" } })
      if (ranOn(probe) > 0) key = `api-failover-${i}`
    }
    expect(key).not.toBe("")
    const owner = runners[ranOn(`probe ${key.slice("api-failover-".length)}`)]!
    const other = runners.find((runner) => runner !== owner && runner !== runners[0])!
    const stream = (api: string, route: string, extra: Record<string, string> = {}) => openEventStream(`${api}${route}`, { ...headers, ...extra }, 240_000)
    // followers: the session's stream on the runner the turn is posted to and on the one that will die, the server's stream
    const session = await stream(runners[0]!.api, `/v1/sessions/${key}/events`)
    const doomed = await stream(owner.api, `/v1/sessions/${key}/events`)
    const all = await stream(runners[0]!.api, "/v1/events")
    const message = `hold ${key}`
    const posted = await call(runners[0]!.api, "POST", `/v1/sessions/${key}/turns`, { message })
    expect(posted.status).toBe(202)
    await waitUntil("the session's runner to ask its model", () => owner.model.requests.some((request) => lastUser(request) === message))
    // the turn's start is in the journal: the doomed follower has an id to resume from
    await doomed.until((frames) => events(frames).some(({ event }) => event._tag === "TurnStart"))
    await owner.serve.kill()
    await expect(doomed.until(() => false)).rejects.toThrow()
    const lastSeen = events(doomed.frames).at(-1)!.id!
    const resumed = await stream(other.api, `/v1/sessions/${key}/events`, { "last-event-id": lastSeen })

    let state: any
    await waitUntil("the turn to end on another runner", async () => {
      state = (await call(runners[0]!.api, "GET", `/v1/turns/${posted.body.turnId}?wait=30`)).body
      return state.status === "done"
    }, 180_000)
    expect(state.result).toMatchObject({ status: "completed", finalMessage: { content: `answered: ${message}` } })
    const turnId: string = state.result.turnId
    const endOf = (frames: ReadonlyArray<SseFrame>) => events(frames).some(({ event }) => event._tag === "TurnEnd" && event.turnId === turnId)
    // every follower sees the turn end: none hangs
    await session.until(endOf)
    await resumed.until(endOf)
    await all.until(endOf)
    const ended = events(session.frames).find(({ event }) => event._tag === "TurnEnd" && event.turnId === turnId)!.event
    expect(ended).toMatchObject({ sessionKey: key, status: "completed" })

    // the session's ids are one sequence across the runners: the follower that moved missed none and got none twice
    const ids = (frames: ReadonlyArray<SseFrame>) => events(frames).map((frame) => Number(frame.id))
    const seen = [...ids(doomed.frames), ...ids(resumed.frames)]
    const reference = ids(session.frames)
    expect(seen.length).toBeGreaterThan(1)
    expect(seen).toEqual(reference.slice(reference.indexOf(seen[0]!), reference.indexOf(seen[0]!) + seen.length))
    expect(new Set(seen).size).toBe(seen.length)

    // the log holds the turn once: its input and its answer
    const history = await call(other.api, "GET", `/v1/sessions/${key}`)
    const entries = history.body.entries as ReadonlyArray<any>
    expect(entries.filter((entry) => entry.role === "user" && entry.content === message)).toHaveLength(1)
    expect(entries.filter((entry) => entry.role === "assistant" && entry.content === `answered: ${message}`)).toHaveLength(1)
    // the model call cut short ran on the killed runner; the turn ran again, once, on a live one
    expect(runners.filter((runner) => runner !== owner).flatMap((runner) => runner.model.requests).filter((request) => lastUser(request) === message)).toHaveLength(1)
    for (const follower of [session, resumed, all]) follower.close()
  }, 300_000)
})
