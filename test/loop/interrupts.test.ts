import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, type AgentEvent, Hook, Message, Scripted, SessionStore, Tool } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { INTERRUPT_HINT } from "../../src/programs/internal/runTurn.ts"

const slowTool = (name: string, ms = 50) =>
  Tool.make({
    name,
    description: `takes ${ms}ms`,
    parameters: Schema.Struct({}),
    execute: () => Effect.as(Effect.sleep(ms), `${name} done`)
  })

const twoTools = [
  { toolCalls: [{ id: "c1", name: "tool_one" }, { id: "c2", name: "tool_two" }] },
  { content: "ok" }
]

const started = (events: Effect.Effect<ReadonlyArray<AgentEvent.AgentEvent>>, toolName: string) =>
  Testing.settled(Effect.map(events, (all) => all.some((e) => e._tag === "ToolExecStart" && e.toolName === toolName)))

const kinds = (all: ReadonlyArray<AgentEvent.AgentEvent>) => all.map((e) => e._tag)

const shape = (messages: ReadonlyArray<Message.Message>) =>
  messages.map((m) => m.role === "assistant" ? `assistant:${m.content}:${(m.toolCalls ?? []).map((c) => c.name).join(",")}` : `${m.role}:${m.content}`)

/** Starts a turn, steers "change course" 10 ms into tool_one, and returns what happened. */
const steerWhileToolOneRuns = Effect.gen(function*() {
  const events = (yield* Testing.recordEvents).all
  const loop = yield* AgentLoop
  const turn = yield* Effect.forkChild(loop.turn("s", "start"))
  yield* started(events, "tool_one")
  yield* TestClock.adjust("10 millis")
  yield* loop.injectSteering("s", "change course")
  yield* TestClock.adjust("100 millis")
  const result = yield* Fiber.join(turn)
  return { events, result, requests: yield* (yield* Scripted.ScriptedLog).requests }
})

describe("steering", () => {
  it.effect("mid-batch (skip-remaining): the rest of the batch is skipped and the steering is in the next call", () =>
    Effect.gen(function*() {
      const { events, requests, result } = yield* steerWhileToolOneRuns
      expect(requests).toHaveLength(2)
      expect(shape(requests[1]!.messages)).toEqual([
        "user:start",
        "assistant::tool_one,tool_two",
        "tool:tool_one done",
        "tool:Skipped due to queued user message.",
        "user:change course"
      ])
      const all = yield* events
      expect(kinds(all)).toContain("InterruptReceived")
      expect(all.filter((e) => e._tag === "ToolExecSkipped").map((e) => e._tag === "ToolExecSkipped" && e.toolName)).toEqual(["tool_two"])
      expect(all.filter((e) => e._tag === "SteeringInjected").map((e) => e._tag === "SteeringInjected" && e.count)).toEqual([1])
      expect(result.status).toBe("completed")
    }).pipe(Effect.provide(Testing.layer({ tools: [slowTool("tool_one"), slowTool("tool_two")], script: twoTools }))))

  it.effect("mid-batch (after-batch): both tools run, then the steering", () =>
    Effect.gen(function*() {
      const { events, requests } = yield* steerWhileToolOneRuns
      expect(requests).toHaveLength(2)
      expect(shape(requests[1]!.messages)).toEqual([
        "user:start",
        "assistant::tool_one,tool_two",
        "tool:tool_one done",
        "tool:tool_two done",
        "user:change course"
      ])
      expect(kinds(yield* events)).not.toContain("ToolExecSkipped")
    }).pipe(Effect.provide(Testing.layer({
      tools: [slowTool("tool_one"), slowTool("tool_two")],
      script: twoTools,
      config: { steeringMode: "after-batch" }
    }))))

  it.effect("steering queued before the first provider call is in that call", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      yield* loop.registerHook(Hook.make({ beforeTurn: () => Effect.sleep("1 second") }))
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* Testing.settled(loop.activeTurn("s"))
      yield* loop.injectSteering("s", "also this")
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(turn)
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      expect(requests).toHaveLength(1)
      expect(shape(requests[0]!.messages)).toEqual(["user:start", "user:also this"])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ script: [{ content: "ok" }] }))))

  it.effect("steering that arrives while the final answer streams gets a second call that sees it", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* TestClock.adjust("10 millis")
      yield* Testing.settled(Effect.map(events, (all) => all.some((e) => e._tag === "LLMDelta")))
      yield* loop.injectSteering("s", "wait, one more thing")
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(turn)
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      expect(requests).toHaveLength(2)
      expect(shape(requests[1]!.messages)).toEqual(["user:start", "assistant:first answer:", "user:wait, one more thing"])
      expect(result.finalMessage?.content).toBe("second answer")
    }).pipe(Effect.provide(Testing.layer({
      script: [{ content: ["first", " answer"], chunkDelay: "10 millis" }, { content: "second answer" }]
    }))))

  it.effect("the steering queue holds 10 messages; the 11th fails SteeringQueueFull", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* Testing.settled(loop.activeTurn("s"))
      for (let i = 0; i < 10; i++) yield* loop.injectSteering("s", `m${i}`)
      const full = yield* Effect.flip(loop.injectSteering("s", "m10"))
      expect(full._tag).toBe("SteeringQueueFull")
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(turn)
      // The turn was already waiting for its first answer: the 10 messages join the next call, in order.
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      expect(requests[1]!.messages.slice(-10).map((m) => m.content)).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`))
    }).pipe(Effect.provide(Testing.layer({ script: [{ content: "ok", delay: "1 second" }, { content: "ok" }] }))))

  it.effect("steering pending at maxIterations becomes follow-ups", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* Testing.settled(Effect.map(events, (all) => all.some((e) => e._tag === "LLMRequest")))
      yield* loop.injectSteering("s", "later please")
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("completed")
      expect(result.followUps).toEqual(["later please"])
      expect(kinds(yield* events)).toContain("FollowUpQueued")
    }).pipe(Effect.provide(Testing.layer({ config: { maxIterations: 1 }, script: [{ content: "ok", delay: "1 second" }] }))))

  it.effect("every control call fails NoActiveTurn when the session has no turn", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const errors = [
        yield* Effect.flip(loop.injectSteering("idle", "x")),
        yield* Effect.flip(loop.injectFollowUp("idle", "x")),
        yield* Effect.flip(loop.interruptGraceful("idle")),
        yield* Effect.flip(loop.interruptHard("idle"))
      ]
      expect(errors.map((e) => e._tag)).toEqual(["NoActiveTurn", "NoActiveTurn", "NoActiveTurn", "NoActiveTurn"])
    }).pipe(Effect.provide(Testing.layer({ script: [] }))))
})

describe("graceful interrupt", () => {
  it.effect("during tool_one of two: tool_two skipped, one last call with no tools and the hint, status interrupted", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* started(events, "tool_one")
      yield* loop.interruptGraceful("s", "The user has to leave.")
      yield* TestClock.adjust("100 millis")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("interrupted")
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      expect(requests).toHaveLength(2)
      expect(requests[1]!.tools).toEqual([])
      expect(requests[1]!.messages.at(-1)).toEqual({ role: "user", content: `${INTERRUPT_HINT}\nThe user has to leave.` })
      expect(shape(requests[1]!.messages.slice(0, -1))).toEqual([
        "user:start",
        "assistant::tool_one,tool_two",
        "tool:tool_one done",
        "tool:Skipped due to graceful interrupt."
      ])
      const all = yield* events
      const interrupt = all.find((e) => e._tag === "InterruptReceived")
      expect(interrupt?._tag === "InterruptReceived" && interrupt.kind).toBe("graceful")
      expect(all.filter((e) => e._tag === "ToolExecSkipped").map((e) => e._tag === "ToolExecSkipped" && e.toolName)).toEqual(["tool_two"])
      expect(yield* loop.activeTurn("s")).toBeUndefined()
      // the hint was sent, not persisted; tool calls of the last reply are ignored
      const stored = yield* (yield* SessionStore).load("s")
      expect(stored.some((m) => Message.textOf(m.content).includes(INTERRUPT_HINT))).toBe(false)
      expect(stored.at(-1)).toEqual({ role: "assistant", content: "summary" })
    }).pipe(Effect.provide(Testing.layer({
      tools: [slowTool("tool_one"), slowTool("tool_two")],
      script: [twoTools[0]!, { content: "summary", toolCalls: [{ name: "tool_one" }] }]
    }))))

  it.effect("during a provider call: that call finishes, then the summary call", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* Testing.settled(Effect.map(events, (all) => all.some((e) => e._tag === "LLMRequest")))
      yield* loop.interruptGraceful("s")
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("interrupted")
      const all = yield* events
      const response = all.find((e) => e._tag === "LLMResponse")
      expect(response?._tag === "LLMResponse" && response.toolCalls.map((c) => c.name)).toEqual(["tool_one"])
      expect(all.filter((e) => e._tag === "ToolExecSkipped")).toHaveLength(1)
      expect((yield* (yield* Scripted.ScriptedLog).requests).map((r) => r.tools.length)).toEqual([1, 0])
    }).pipe(Effect.provide(Testing.layer({
      tools: [slowTool("tool_one")],
      script: [{ toolCalls: [{ name: "tool_one" }], delay: "1 second" }, { content: "summary" }]
    }))))
})

const blocksForever = Tool.make({
  name: "block",
  description: "never returns",
  parameters: Schema.Struct({}),
  execute: () => Effect.never
})

const seed = { s: [{ role: "user", content: "before" }, { role: "assistant", content: "after" }] as ReadonlyArray<Message.Message> }

const expectAbortedAndRolledBack = Effect.gen(function*() {
  const store = yield* SessionStore
  expect(yield* store.load("s")).toEqual(seed.s)
})

describe("hard abort", () => {
  it.effect("a tool that never yields: turn returns aborted, history equals the snapshot, TurnEnd{aborted}", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* started(events, "block")
      yield* loop.interruptHard("s")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("aborted")
      expect(result.messages).toEqual([])
      yield* expectAbortedAndRolledBack
      const all = yield* events
      const ends = all.filter((e) => e._tag === "TurnEnd")
      expect(ends.map((e) => e._tag === "TurnEnd" && e.status)).toEqual(["aborted"])
      expect(all.filter((e) => e._tag === "InterruptReceived").map((e) => e._tag === "InterruptReceived" && e.kind)).toEqual(["hard"])
      expect(yield* loop.activeTurn("s")).toBeUndefined()
      // the session still works afterwards
      const next = yield* loop.turn("s", "again")
      expect(next.status).toBe("completed")
    }).pipe(Effect.provide(Testing.layer({
      sessions: seed,
      tools: [blocksForever],
      script: [{ toolCalls: [{ name: "block" }] }, { content: "fine" }]
    }))))

  it.effect("during a streaming provider call", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* Testing.settled(Effect.map(events, (all) => all.some((e) => e._tag === "LLMDelta")))
      yield* loop.interruptHard("s")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("aborted")
      yield* expectAbortedAndRolledBack
    }).pipe(Effect.provide(Testing.layer({ sessions: seed, script: [{ content: "streaming forever", stall: true }] }))))

  it.effect("during a hook", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      let hookRunning = false
      yield* loop.registerHook(Hook.make({
        beforeLLMRequest: () => Effect.sync(() => (hookRunning = true)).pipe(Effect.andThen(Effect.never))
      }))
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* Testing.settled(Effect.sync(() => hookRunning))
      yield* loop.interruptHard("s")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("aborted")
      yield* expectAbortedAndRolledBack
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ sessions: seed, script: [{ content: "never sent" }] }))))

  it.effect("a hook's hard abort ends the turn the same way", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook(Hook.make({ beforeTool: () => Hook.hardAbort("stop everything") }))
      const result = yield* loop.turn("s", "start")
      expect(result.status).toBe("aborted")
      yield* expectAbortedAndRolledBack
      const all = yield* events
      expect(all.filter((e) => e._tag === "TurnEnd").map((e) => e._tag === "TurnEnd" && e.status)).toEqual(["aborted"])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ sessions: seed, tools: [blocksForever], script: [{ toolCalls: [{ name: "block" }] }] }))))
})
