/**
 * Two session-level controls of the public `AgentLoop`, on TestClock: a turn's `tools` option
 * narrows the registered tools for that turn and its sub-turns (never widening), and `compact`
 * summarises a session now, keeping its log, waiting for the turn that runs.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import {
  AgentLoop,
  CompactionFailed,
  Message,
  ProviderRejected,
  type ProviderTypes,
  Scripted,
  SessionLog,
  SessionStore,
  spawn,
  subagent,
  Tool
} from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { ofKind } from "../support/fixtures.ts"

const plain = (name: string) =>
  Tool.make({ name, description: name, parameters: Schema.Struct({}), execute: () => Effect.succeed(name) })

const offered = (request: ProviderTypes.ProviderRequest) => request.tools.map((tool) => tool.name).sort()
const taskOf = (request: ProviderTypes.ProviderRequest) => Message.textOf(request.messages.find((m) => m.role === "user")?.content ?? "")

describe("TurnOptions.tools", () => {
  it.effect("narrows the registered tools for one turn; unknown names add nothing, an empty list offers none, no option offers all", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      yield* loop.turn("s", "one", { tools: ["a", "not-registered"] })
      yield* loop.turn("s", "two", { tools: [] })
      yield* loop.turn("s", "three")
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      expect(requests.map(offered)).toEqual([["a"], [], ["a", "b", "c"]])
    }).pipe(Effect.provide(Testing.layer({ tools: [plain("a"), plain("b"), plain("c")], script: () => ({ content: "ok" }) }))))

  let ran = 0
  const counted = Tool.make({ name: "b", description: "b", parameters: Schema.Struct({}), execute: () => Effect.sync(() => String(++ran)) })

  it.effect("a call of a registered tool left out is refused like an unknown tool, and nothing runs", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go", { tools: ["a"] })
      expect(result.status).toBe("completed")
      expect(ran).toBe(0)
      const toolMessage = result.messages.find((m) => m.role === "tool")
      expect(toolMessage?.role === "tool" && toolMessage.isError).toBe(true)
    }).pipe(Effect.provide(Testing.layer({
      tools: [plain("a"), counted],
      script: (request) => request.messages.some((m) => m.role === "tool") ? { content: "done" } : { toolCalls: [{ name: "b", arguments: {} }] }
    }))))

  it.effect("sub-turns inherit the narrowing and cannot widen it", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go", { tools: ["subagent", "a"] })
      expect(result.finalMessage?.content).toBe("go done")
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      const names = (task: string) => offered(requests.find((r) => taskOf(r) === task)!)
      expect(names("go")).toEqual(["a", "subagent"])
      expect(names("child")).toEqual(["a"])
    }).pipe(Effect.provide(Testing.layer({
      tools: [subagent, spawn, plain("a"), plain("b")],
      script: (request) => {
        const task = taskOf(request)
        const first = !request.messages.some((m) => m.role === "assistant")
        if (!first) return { content: `${task} done` }
        if (task === "go") return { toolCalls: [{ name: "subagent", arguments: { task: "child", tools: ["a", "b", "spawn"] } }] }
        return { content: "child done" }
      }
    }))))
})

const history = [
  Message.user("first question"),
  Message.assistant("first answer"),
  Message.user("second question"),
  Message.assistant("second answer")
]
const isSummaryCall = (request: ProviderTypes.ProviderRequest) => request.tools.length === 0 && request.messages[0]?.role === "system"

describe("AgentLoop.compact", () => {
  it.effect("replaces the older messages with one summary, keeps the newest and the whole log", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).compact("s", { keepMessages: 2 })
      expect(result).toEqual({ sessionKey: "s", summarized: 2, remaining: 3 })
      const store = yield* SessionStore
      expect(yield* store.load("s")).toEqual([
        Message.system(`${SessionLog.SUMMARY_PREFIX}\nThey asked two questions.`),
        ...history.slice(2)
      ])
      const log = yield* store.log("s")
      expect(log.filter((entry) => entry.role !== "compaction")).toEqual(history)
      expect(ofKind(yield* events, "SessionSummarize").map((e) => [e.summarized, e.remaining])).toEqual([[2, 3]])
      const [call] = yield* (yield* Scripted.ScriptedLog).requests
      expect(Message.textOf(call!.messages[1]!.content)).toContain("user: first question")
      expect(Message.textOf(call!.messages[1]!.content)).not.toContain("second question")
    }).pipe(Effect.provide(Testing.layer({ sessions: { s: history }, script: () => ({ content: "They asked two questions." }) }))))

  it.effect("keepMessages 0 summarises everything; with nothing older than the kept messages nothing is appended", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      expect(yield* loop.compact("s")).toEqual({ sessionKey: "s", summarized: 0, remaining: 4 })
      expect(yield* (yield* Scripted.ScriptedLog).requests).toEqual([])
      expect(yield* loop.compact("s", { keepMessages: 0 })).toEqual({ sessionKey: "s", summarized: 4, remaining: 1 })
      // a view that is only the summary has nothing more to summarise
      expect(yield* loop.compact("s", { keepMessages: 0 })).toEqual({ sessionKey: "s", summarized: 0, remaining: 1 })
      expect(yield* loop.compact("empty")).toEqual({ sessionKey: "empty", summarized: 0, remaining: 0 })
      expect((yield* (yield* SessionStore).log("s")).filter((entry) => entry.role === "compaction")).toHaveLength(1)
    }).pipe(Effect.provide(Testing.layer({ sessions: { s: history }, script: () => ({ content: "All of it." }) }))))

  it.effect("a keepMessages that is not a count of messages is a CompactionFailed, and nothing is summarised", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      for (const keepMessages of [-1, 1.5, Number.NaN]) {
        const failure = yield* Effect.flip(loop.compact("s", { keepMessages }))
        expect(failure).toBeInstanceOf(CompactionFailed)
        expect(failure.message).toBe(`keepMessages is a number of messages, 0 or more, not ${keepMessages}; history kept`)
      }
      expect(yield* (yield* SessionStore).log("s")).toEqual(history)
    }).pipe(Effect.provide(Testing.layer({ sessions: { s: history }, script: () => ({ content: "All of it." }) }))))

  it.effect("a provider failure is a CompactionFailed and appends nothing", () =>
    Effect.gen(function*() {
      const failure = yield* Effect.flip((yield* AgentLoop).compact("s", { keepMessages: 0 }))
      expect(failure).toBeInstanceOf(CompactionFailed)
      expect(failure.message).toBe("ProviderRejected: no summaries today; history kept")
      expect(yield* (yield* SessionStore).log("s")).toEqual(history)
    }).pipe(Effect.provide(Testing.layer({
      sessions: { s: history },
      script: () => ({ error: new ProviderRejected({ message: "no summaries today", status: 400 }) })
    }))))

  it.effect("waits for the session's running turn, then summarises what it added", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "third question"))
      yield* Testing.settled(loop.activeTurn("s"))
      const compaction = yield* Effect.forkChild(loop.compact("s", { keepMessages: 0 }))
      yield* Testing.advance("1 second")
      expect((yield* Fiber.join(turn)).status).toBe("completed")
      expect(yield* Fiber.join(compaction)).toEqual({ sessionKey: "s", summarized: 6, remaining: 1 })
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      expect(requests.map(isSummaryCall)).toEqual([false, true])
    }).pipe(Effect.provide(Testing.layer({
      sessions: { s: history },
      script: (request) => isSummaryCall(request) ? { content: "Three questions." } : { content: "third answer", delay: "1 second" }
    }))))
})
