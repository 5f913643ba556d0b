/**
 * Finding sessions in the inspector: full-text search over what a session holds, the filters of
 * the list, its cache of what each log says, and the running sessions the store does not list yet.
 */
import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import { AgentEvent, type SessionLog } from "effect-agent-loop"
import * as Find from "../../src/inspector/find.ts"
import type * as Model from "../../src/inspector/model.ts"
import { Recorder } from "../../src/inspector/recorder.ts"

const log: ReadonlyArray<SessionLog.SessionEntry> = [
  { role: "user", content: "tidy the build" },
  { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "grep_files", arguments: "{\"pattern\":\"TODO\"}" }] },
  { role: "tool", toolCallId: "c1", toolName: "grep_files", content: "src/a.ts: TODO remove the flux capacitor", isError: true },
  { role: "assistant", content: "Done." },
  { role: "outcome", turnId: "t1", status: "failed", model: "gpt-4.1-mini", startedAt: 0, endedAt: 5, iterations: 2, usage: { inputTokens: 1, outputTokens: 1 }, error: { _tag: "ProviderRejected", message: "quota exhausted" } }
]
const rows: ReadonlyArray<Model.SessionRow> = [
  { sessionKey: "a", updatedAt: Date.parse("2026-03-02T10:00:00Z"), messages: 4, preview: "tidy the build", status: "failed" },
  { sessionKey: "b", updatedAt: Date.parse("2026-03-05T10:00:00Z"), messages: 2, preview: "hello", status: "completed" }
]

describe("finding sessions", () => {
  it("searches messages, tool names and output, and errors, with a snippet where it matched; reads each log once", async () => {
    const reads: Array<string> = []
    const logOf = (key: string) => Effect.sync(() => { reads.push(key); return key === "a" ? log : [] })
    const finder = Find.makeFinder()
    const find = (q: string, filters: Find.Filters = {}) => Effect.runPromise(finder.find(rows, q, filters, logOf))
    const flux = await find("FLUX capacitor")
    expect(flux.map((r) => r.sessionKey)).toEqual(["a"])
    expect(flux[0]!.match).toContain("grep_files src/a.ts: TODO remove the flux capacitor Done.")
    expect(flux[0]!.match!.startsWith("…")).toBe(true)
    expect((await find("grep_files")).map((r) => r.sessionKey)).toEqual(["a"])
    expect((await find("quota exhausted")).map((r) => r.sessionKey)).toEqual(["a"])
    expect((await find("ProviderRejected")).map((r) => r.sessionKey)).toEqual(["a"])
    // the key, workspace and first prompt match without a snippet
    expect(await find("hello")).toEqual([rows[1]])
    expect(await find("nowhere")).toEqual([])
    expect(reads.toSorted()).toEqual(["a", "b"])
    // a changed session is read again
    await Effect.runPromise(finder.find([{ ...rows[0]!, messages: 5 }], "flux", {}, logOf))
    expect(reads.filter((k) => k === "a")).toHaveLength(2)
    // no query and no model filter: no log is read
    reads.length = 0
    expect(await find("")).toEqual(rows)
    expect(reads).toEqual([])
  })

  it("filters by status, model and day (the last day included), from the page's query", async () => {
    const logOf = (key: string) => Effect.succeed(key === "a" ? log : [])
    const finder = Find.makeFinder()
    const find = (query: string) => Effect.runPromise(finder.find(rows, "", Find.filtersOf(new URLSearchParams(query)), logOf)).then((found) => found.map((r) => r.sessionKey))
    expect(await find("status=failed")).toEqual(["a"])
    expect(await find("status=running")).toEqual([])
    expect(await find("model=GPT-4.1")).toEqual(["a"])
    expect(await find("model=claude")).toEqual([])
    expect(await find("from=2026-03-03")).toEqual(["b"])
    expect(await find("to=2026-03-02")).toEqual(["a"])
    expect(await find("from=2026-03-01&to=2026-03-05")).toEqual(["a", "b"])
    expect(Find.filtersOf(new URLSearchParams("from=yesterday&status="))).toEqual({})
  })

  it("a running turn's timeline reaches the present; one that ended keeps its end", () => {
    expect(Find.inFlight({ end: 10 }, 50)).toEqual({ end: 50 })
    expect(Find.inFlight({ end: 10, status: "running" }, 50)).toEqual({ end: 50, status: "running" })
    expect(Find.inFlight({ end: 10, status: "completed" }, 50)).toEqual({ end: 10, status: "completed" })
    expect(Find.inFlight(undefined, 50)).toBeUndefined()
  })
})

describe("running sessions in the list", () => {
  const place = (sessionKey: string, turnId: string) => ({ turnId, sessionKey, iteration: 1, depth: 0 })
  it("a session whose first turn runs is listed before the store has it; a stored one is marked running while a turn runs", () => {
    const recorder = new Recorder({ replay: 100, turns: 100 })
    recorder.record(AgentEvent.make("TurnStart", place("new", "t1"), 1000, { input: "first words" }))
    recorder.record(AgentEvent.make("TurnStart", place("b", "t2"), 2000, { input: "again" }))
    recorder.record(AgentEvent.make("TurnStart", place("done", "t3"), 500, { input: "quick" }))
    recorder.record(AgentEvent.make("TurnEnd", place("done", "t3"), 600, { status: "completed", iterations: 1, durationMs: 100, usage: { inputTokens: 1, outputTokens: 1 } }))
    const listed = recorder.withLive(rows)
    expect(listed.map((r) => [r.sessionKey, r.status])).toEqual([["a", "failed"], ["b", "running"], ["new", "running"]])
    expect(listed.find((r) => r.sessionKey === "new")).toEqual({ sessionKey: "new", updatedAt: 1000, status: "running", turns: 1, preview: "first words" })
    expect(listed.find((r) => r.sessionKey === "b")!.updatedAt).toBe(rows[1]!.updatedAt)
  })
})
