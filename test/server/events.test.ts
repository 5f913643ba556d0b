/**
 * The server's events over real HTTP: every event has an `id:`; a client cut at many points that
 * reconnects with `Last-Event-ID` misses none and gets none twice (against a client never cut);
 * a reconnect past the replay buffer is told how many it missed; a session's stream carries only
 * that session. A client that stops reading gets a `gap` with the count once it reads again
 * (the feed alone, where the buffer's bound is exact).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Stream } from "effect"
import type { AgentEvent } from "effect-agent-loop"
import { EventFeed, type Frame } from "../../src/server/eventFeed.ts"
import { call, connectEvents, type ServerFixture, type SseFrame, startServer } from "../support/server.ts"
import { waitUntil } from "../support/waitUntil.ts"

let f: ServerFixture

beforeAll(async () => {
  f = await startServer({ replayEvents: 100_000 })
})

afterAll(() => f?.close())

const turnDone = (turnId: string) => async () => ((await (await call(f, "GET", `/v1/turns/${turnId}`)).json()) as any).status === "done"

/** Starts `count` turns in each of `sessions` and returns their ids. */
const startTurns = async (sessions: ReadonlyArray<string>, count: number) => {
  const ids: Array<string> = []
  for (let i = 0; i < count; i++) {
    for (const key of sessions) {
      const response = await call(f, "POST", `/v1/sessions/${key}/turns`, { message: `echo ${key} ${i}` })
      ids.push(((await response.json()) as { turnId: string }).turnId)
    }
  }
  return ids
}

/** A client that cuts its connection after every few frames (1 to `most`) and reconnects with the last id it read. */
const cuttingClient = (route: string, most: number, seed: number) => {
  const received: Array<SseFrame> = []
  let stopped = false
  let cuts = 0
  let random = seed
  const next = () => {
    random = (random * 1103515245 + 12345) % 2147483648
    return 1 + (random % most)
  }
  let current: { close: () => void } | undefined
  const done = (async () => {
    let lastId: string | undefined
    while (!stopped) {
      const client = await connectEvents(f, route, lastId === undefined ? {} : { "last-event-id": lastId })
      current = client
      const want = next()
      try {
        await client.until((frames) => stopped || frames.length >= want)
      } finally {
        client.close()
      }
      for (const frame of client.frames.slice(0, want)) {
        received.push(frame)
        if (frame.id !== undefined) lastId = frame.id
      }
      // frames past `want` were read from the socket but are dropped: the reconnect must bring them again
      cuts++
    }
  })()
  return {
    received,
    cuts: () => cuts,
    stop: async () => {
      stopped = true
      current?.close()
      await done.catch(() => undefined)
    }
  }
}

describe("server-sent events with replay", () => {
  it("a client cut at many points misses nothing and gets nothing twice", async () => {
    const steady = await connectEvents(f, "/v1/events")
    const steadySession = await connectEvents(f, "/v1/sessions/cut-a/events")
    const cutting = cuttingClient("/v1/events", 5, 7)
    const sessionCutting = cuttingClient("/v1/sessions/cut-a/events", 3, 11)
    const turnIds = await startTurns(["cut-a", "cut-b", "cut-c"], 10)
    for (const id of turnIds) await waitUntil("the turns to end", turnDone(id))
    const ends = (frames: ReadonlyArray<SseFrame>) => frames.filter((fr) => JSON.parse(fr.data)._tag === "TurnEnd").length
    await steady.until((frames) => ends(frames) === turnIds.length)
    const reference = steady.frames
    steady.close()
    await steadySession.until((frames) => ends(frames) >= 10)
    steadySession.close()
    // up to the session's 10th turn's end: the turns compared
    const tenth = steadySession.frames.filter((fr) => JSON.parse(fr.data)._tag === "TurnEnd")[9]!
    const sessionReference = steadySession.frames.slice(0, steadySession.frames.indexOf(tenth) + 1)
    const last = Number(reference.at(-1)!.id)
    // more events after the last one compared, so that each client reads past it whatever its next cut
    for (const id of await startTurns(["cut-a", "tail"], 3)) await waitUntil("the tail turns to end", turnDone(id))
    await waitUntil("the cutting client to catch up", () => cutting.received.some((fr) => Number(fr.id) >= last))
    const lastSession = Number(sessionReference.at(-1)!.id)
    await waitUntil("the session's cutting client to catch up", () => sessionCutting.received.some((fr) => Number(fr.id) > lastSession))
    await cutting.stop()
    await sessionCutting.stop()
    // ids: one more per event, none missing, none twice
    const ids = reference.map((fr) => Number(fr.id))
    expect(ids).toEqual(ids.map((_, i) => ids[0]! + i))
    const got = cutting.received.filter((fr) => Number(fr.id) <= last)
    expect(got.map((fr) => fr.id)).toEqual(reference.map((fr) => fr.id))
    expect(got.map((fr) => fr.data)).toEqual(reference.map((fr) => fr.data))
    expect(cutting.cuts()).toBeGreaterThan(20)
    // the session's stream, numbered by its journal from 1: the same events as the whole feed's for that session, in order, each once
    const sessionIds = sessionReference.map((fr) => Number(fr.id))
    expect(sessionIds).toEqual(sessionIds.map((_, i) => i + 1))
    const sessionOnly = reference.filter((fr) => JSON.parse(fr.data).sessionKey === "cut-a")
    expect(sessionReference.map((fr) => fr.data)).toEqual(sessionOnly.map((fr) => fr.data))
    const sessionGot = sessionCutting.received.filter((fr) => Number(fr.id) <= lastSession)
    expect(sessionGot.map((fr) => fr.id)).toEqual(sessionReference.map((fr) => fr.id))
    expect(sessionGot.map((fr) => fr.data)).toEqual(sessionReference.map((fr) => fr.data))
    expect(sessionCutting.cuts()).toBeGreaterThan(10)
    expect(reference.some((fr) => fr.event === "gap")).toBe(false)
  })

  it("a reconnect from an id the replay buffer no longer reaches gets a gap with the count, then what is kept", async () => {
    const small = await startServer({ replayEvents: 5 })
    try {
      const started = await call(small, "POST", "/v1/sessions/g/turns", { message: "echo this" })
      const { turnId } = await started.json() as { turnId: string }
      await waitUntil("the turn to end", async () => ((await (await call(small, "GET", `/v1/turns/${turnId}`)).json()) as any).status === "done")
      const fresh = await connectEvents(small, "/v1/events")
      fresh.close()
      const client = await connectEvents(small, "/v1/events", { "last-event-id": "1" })
      const frames = await client.until((frames) => frames.length >= 6)
      client.close()
      expect(frames[0]!.event).toBe("gap")
      const gap = JSON.parse(frames[0]!.data)
      expect(gap.cause).toBe("replay")
      const firstKept = Number(frames[1]!.id)
      expect(gap.missed).toBe(firstKept - 2)
      expect(frames.slice(1).map((fr) => Number(fr.id))).toEqual([0, 1, 2, 3, 4].map((i) => firstKept + i))
    } finally {
      await small.close()
    }
  })
})

describe("a session's events across a server restart", () => {
  it("with sessions in SQLite, a client resumes with Last-Event-ID from a new server: the journal kept them beside the log", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-server-restart-"))
    try {
      const first = await startServer({ sqlite: true, dir })
      const all = await connectEvents(first, "/v1/sessions/kept/events")
      const { turnId } = await (await call(first, "POST", "/v1/sessions/kept/turns", { message: "echo before the restart" })).json() as any
      await waitUntil("the turn to end", async () => ((await (await call(first, "GET", `/v1/turns/${turnId}`)).json()) as any).status === "done")
      const before = await all.until((frames) => frames.some((fr) => JSON.parse(fr.data)._tag === "TurnEnd"))
      all.close()
      await first.close()
      const second = await startServer({ sqlite: true, dir })
      try {
        // cut after the second event: the rest of that turn comes from the store, then what happens now
        const resumed = await connectEvents(second, "/v1/sessions/kept/events", { "last-event-id": "2" })
        await call(second, "POST", "/v1/sessions/kept/turns", { message: "echo after the restart" })
        const frames = await resumed.until((frames) => frames.filter((fr) => JSON.parse(fr.data)._tag === "TurnEnd").length === 2)
        resumed.close()
        expect(frames.slice(0, before.length - 2).map((fr) => [fr.id, fr.data])).toEqual(before.slice(2).map((fr) => [fr.id, fr.data]))
        const ids = frames.map((fr) => Number(fr.id))
        expect(ids).toEqual(ids.map((_, i) => i + 3))
      } finally {
        await second.close()
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("the feed's per-client bound", () => {
  const event = (n: number): AgentEvent.AgentEvent => ({ _tag: "SteeringInjected", turnId: "t", sessionKey: "s", iteration: n, depth: 0, at: n, count: 1 })

  it("a client that stops reading is sent a gap with the count, and then every later event", async () => {
    const feed = new EventFeed(1000)
    const frames: Array<Frame> = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      for (let i = 1; i <= 10; i++) feed.record(event(i))
      // a pull-based reader from the start: the replay offers all 10 to a buffer of 4 at once
      const pulled = yield* Stream.toPull(feed.frames({ lastId: 0, buffer: 4, filter: () => true }))
      const out: Array<Frame> = []
      while (out.length < 4) out.push(...(yield* pulled))
      for (let i = 11; i <= 12; i++) feed.record(event(i))
      while (out.length < 7) out.push(...(yield* pulled))
      return out
    })))
    expect(frames.map((fr) => fr._tag === "Event" ? fr.item.id : `gap ${fr.missed}`)).toEqual([1, 2, 3, 4, "gap 6", 11, 12])
  })
})
