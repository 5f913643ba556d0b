import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, AgentLoopLive, Message, Scripted, SessionStore, SessionStoreMemory, Tool, ToolError, ToolRegistryLive } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { echo } from "../support/fixtures.ts"

describe("runTurn: event order", () => {
  it.effect("a text-only turn", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const result = yield* loop.turn("s1", "hello")
      expect(result.status).toBe("completed")
      expect(result.finalMessage?.content).toBe("Hi there")
      const all = yield* events
      expect(Testing.kinds(all)).toEqual(["TurnStart", "LLMRequest", "LLMDelta", "LLMDelta", "LLMResponse", "TurnEnd"])
      expect(new Set(all.map((e) => e.turnId))).toEqual(new Set([result.turnId]))
      const end = all.at(-1)!
      expect(end._tag === "TurnEnd" && end.status).toBe("completed")
      expect(end._tag === "TurnEnd" && end.iterations).toBe(1)
    }).pipe(Effect.provide(Testing.layer({ script: [{ content: ["Hi", " there"] }] }))))

  it.effect("one tool call, then a final answer", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const result = yield* loop.turn("s1", "say hi")
      const all = yield* events
      expect(Testing.kinds(all)).toEqual([
        "TurnStart",
        "LLMRequest",
        "LLMDelta",
        "LLMResponse",
        "ToolExecStart",
        "ToolExecEnd",
        "LLMRequest",
        "LLMDelta",
        "LLMResponse",
        "TurnEnd"
      ])
      expect(new Set(all.map((e) => e.turnId)).size).toBe(1)
      const end = all.at(-1)!
      expect(end._tag === "TurnEnd" && [end.status, end.iterations]).toEqual(["completed", 2])
      expect(result.iterations).toBe(2)
      expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"])
      expect(result.messages[2]).toMatchObject({ role: "tool", content: "echo: hi", toolCallId: "call_0_0" })
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      expect(requests[1]!.messages.at(-1)).toMatchObject({ role: "tool", content: "echo: hi" })
      expect(requests[0]!.tools.map((t) => t.name)).toEqual(["echo"])
      const stored = yield* (yield* SessionStore).load("s1")
      expect(stored).toEqual(result.messages)
    }).pipe(Effect.provide(Testing.layer({
      tools: [echo],
      script: [{ toolCalls: [{ name: "echo", arguments: { text: "hi" } }] }, { content: "done" }]
    }))))

  it.effect("usage is summed over the turn's calls", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.usage).toEqual({ inputTokens: 30, outputTokens: 7 })
      const end = (yield* events).find((e) => e._tag === "TurnEnd")!
      expect(end._tag === "TurnEnd" && end.usage).toEqual({ inputTokens: 30, outputTokens: 7 })
    }).pipe(Effect.provide(Testing.layer({
      tools: [echo],
      script: [
        { toolCalls: [{ name: "echo", arguments: { text: "a" } }], usage: { inputTokens: 10, outputTokens: 5 } },
        { content: "ok", usage: { inputTokens: 20, outputTokens: 2 } }
      ]
    }))))

  it.effect("stops at maxIterations with status max_iterations", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "loop forever")
      expect(result.status).toBe("max_iterations")
      expect(result.iterations).toBe(3)
      expect(result.messages.filter((m) => m.role === "tool")).toHaveLength(3)
    }).pipe(Effect.provide(Testing.layer({
      tools: [echo],
      config: { maxIterations: 3 },
      script: () => ({ toolCalls: [{ name: "echo", arguments: { text: "again" } }] })
    }))))
})

const sleeper = (name: string, readOnly: boolean, log: Array<string>) =>
  Tool.make({
    name,
    description: `sleeps 100ms (${readOnly ? "read-only" : "mutating"})`,
    parameters: Schema.Struct({ ms: Schema.Number }),
    readOnly,
    execute: ({ ms }, ctx) =>
      Effect.gen(function*() {
        log.push(`start ${ctx.toolCallId}`)
        yield* Effect.sleep(ms)
        log.push(`end ${ctx.toolCallId}`)
        return `${ctx.toolCallId} slept ${ms}`
      })
  })

describe("runTurn: tool groups", () => {
  const log: Array<string> = []
  it.effect("[r1, r2, w1, r3, w2] runs {r1,r2} in parallel, then w1, {r3}, w2; results in call order", () =>
    Effect.gen(function*() {
      log.length = 0
      const events = (yield* Testing.recordEvents).all
      const fiber = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* TestClock.adjust("100 millis")
      expect(log).toEqual(["start r1", "start r2", "end r1", "end r2", "start w1"])
      yield* TestClock.adjust("100 millis")
      expect(log.slice(5)).toEqual(["end w1", "start r3"])
      yield* TestClock.adjust("200 millis")
      const result = yield* Fiber.join(fiber)
      expect(log.slice(7)).toEqual(["end r3", "start w2", "end w2"])
      expect(result.messages.filter((m) => m.role === "tool").map((m) => m.role === "tool" && m.toolCallId))
        .toEqual(["r1", "r2", "w1", "r3", "w2"])
      const ends = (yield* events).filter((e) => e._tag === "ToolExecEnd")
      const endOf = (id: string) => ends.find((e) => e._tag === "ToolExecEnd" && e.toolCallId === id)!
      expect(endOf("r1").at).toBe(100)
      expect(endOf("r2").at).toBe(100)
      expect(endOf("w1").at).toBe(200)
      expect(endOf("r3").at).toBe(300)
      expect(endOf("w2").at).toBe(400)
      for (const e of ends) expect(e._tag === "ToolExecEnd" && e.durationMs).toBe(100)
    }).pipe(Effect.provide(Testing.layer({
      tools: [sleeper("read", true, log), sleeper("write", false, log)],
      script: [
        {
          toolCalls: [
            { id: "r1", name: "read", arguments: { ms: 100 } },
            { id: "r2", name: "read", arguments: { ms: 100 } },
            { id: "w1", name: "write", arguments: { ms: 100 } },
            { id: "r3", name: "read", arguments: { ms: 100 } },
            { id: "w2", name: "write", arguments: { ms: 100 } }
          ]
        },
        { content: "done" }
      ]
    }))))

  it.effect("results keep call order when a later parallel call finishes first", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* TestClock.adjust("300 millis")
      const result = yield* Fiber.join(fiber)
      expect(result.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual(["slow slept 300", "fast slept 10"])
    }).pipe(Effect.provide(Testing.layer({
      tools: [sleeper("read", true, [])],
      script: [
        { toolCalls: [{ id: "slow", name: "read", arguments: { ms: 300 } }, { id: "fast", name: "read", arguments: { ms: 10 } }] },
        { content: "done" }
      ]
    }))))
})

describe("runTurn: bad input never crashes a turn", () => {
  const strict = Tool.make({
    name: "strict",
    description: "needs a path and a count",
    parameters: Schema.Struct({ path: Schema.String, count: Schema.Number }),
    execute: () => Effect.succeed("ran")
  })
  const failing = Tool.make({
    name: "failing",
    description: "fails",
    parameters: Schema.Struct({}),
    execute: () => Effect.fail(new ToolError({ message: "disk is full" }))
  })
  const dying = Tool.make({
    name: "dying",
    description: "throws",
    parameters: Schema.Struct({}),
    execute: () => Effect.sync(() => {
      throw new Error("boom")
    })
  })
  const slow = Tool.make({
    name: "slow",
    description: "takes an hour",
    parameters: Schema.Struct({}),
    timeout: "2 seconds",
    execute: () => Effect.as(Effect.sleep("1 hour"), "finished")
  })
  const calls = [
    { id: "a", name: "missing", arguments: {} },
    { id: "b", name: "strict", arguments: "{not json" },
    { id: "c", name: "strict", arguments: { path: 42 } },
    { id: "d", name: "failing", arguments: {} },
    { id: "e", name: "dying", arguments: {} },
    { id: "f", name: "slow", arguments: {} }
  ]
  it.effect("each case becomes an error result the model sees, and the loop goes on", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* TestClock.adjust("2 seconds")
      const result = yield* Fiber.join(fiber)
      expect(result.status).toBe("completed")
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      expect(requests).toHaveLength(2)
      const seen = requests[1]!.messages.filter((m) => m.role === "tool")
      expect(seen.map((m) => [m.role === "tool" && m.toolCallId, m.content, m.role === "tool" && m.isError])).toEqual([
        ["a", 'Tool "missing" not found', true],
        ["b", 'Invalid arguments for tool "strict": not valid JSON. Received: {not json', true],
        ["c", 'Invalid arguments for tool "strict": path: Expected string; count: Missing key. Received: {"path":42}', true],
        ["d", "disk is full", true],
        ["e", 'Tool "dying" failed: boom', true],
        ["f", 'Tool "slow" timed out after 2000ms', true]
      ])
    }).pipe(Effect.provide(Testing.layer({ tools: [strict, failing, dying, slow], script: [{ toolCalls: calls }, { content: "ok" }] }))))
})

describe("AgentLoop: sessions", () => {
  it.effect("two turns of one session run one after the other; two sessions overlap", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const events = (yield* Testing.recordEvents).all
      const a1 = yield* Effect.forkChild(loop.turn("a", "first"))
      const a2 = yield* Effect.forkChild(loop.turn("a", "second"))
      const b1 = yield* Effect.forkChild(loop.turn("b", "other"))
      yield* TestClock.adjust("100 millis")
      const ends = () => Effect.map(events, (all) => all.filter((e) => e._tag === "TurnEnd").map((e) => [e.sessionKey, e.at]))
      expect(yield* ends()).toEqual([["a", 100], ["b", 100]])
      yield* TestClock.adjust("100 millis")
      expect(yield* ends()).toEqual([["a", 100], ["b", 100], ["a", 200]])
      const [r1, r2] = [yield* Fiber.join(a1), yield* Fiber.join(a2)]
      yield* Fiber.join(b1)
      const log = yield* (yield* Scripted.ScriptedLog).requests
      const second = log.find((r) => r.messages.some((m) => m.content === "second"))!
      expect(second.messages.map((m) => m.content)).toEqual(["first", "answer", "second"])
      expect(r1.status).toBe("completed")
      expect(r2.status).toBe("completed")
    }).pipe(Effect.provide(Testing.layer({ script: () => ({ content: "answer", delay: "100 millis" }) }))))
})

describe("Scripted: the request log", () => {
  it.effect("each request is kept as it was sent, while consecutive requests share what they have in common", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const first = yield* loop.turn("s", "go")
      expect([first.status, first.iterations]).toEqual(["completed", 31])
      yield* loop.turn("s", "again")
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      expect(requests).toHaveLength(32)
      for (let k = 0; k <= 30; k++) {
        const sent = requests[k]!.messages
        expect(sent).toHaveLength(2 + 2 * k)
        expect(sent[0]).toEqual(Message.system("be brief"))
        expect(sent[1]).toEqual(Message.user("go"))
        if (k > 0) {
          expect(sent.at(-2)).toMatchObject({ role: "assistant", toolCalls: [{ id: `call_${k - 1}_0` }] })
          expect(sent.at(-1)).toMatchObject({ role: "tool", toolCallId: `call_${k - 1}_0`, content: `echo: e${k - 1}` })
        }
      }
      // The next turn's request holds the first turn whole, then its own input.
      const next = requests[31]!.messages
      expect(next).toHaveLength(2 + 2 * 30 + 2)
      expect(next.slice(-2)).toEqual([Message.assistant("done"), Message.user("again")])
      expect(requests[0]!.model).toBe("m")
    }).pipe(Effect.provide(
      AgentLoopLive.layer({ model: "m", systemPrompt: "be brief", maxIterations: 40 }).pipe(
        Layer.provideMerge(Layer.mergeAll(
          Scripted.layer((_, index) =>
            index < 30 ? { toolCalls: [{ name: "echo", arguments: { text: `e${index}` } }] } : { content: "done" }
          ),
          ToolRegistryLive.layer([echo]),
          SessionStoreMemory.layer()
        )),
        Layer.orDie
      )
    )))
})
