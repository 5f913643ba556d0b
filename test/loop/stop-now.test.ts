/**
 * Stop now (`AgentLoop.interruptNow`): the in-flight model call and tools are cancelled at once
 * (sub-turns too, finalizers run), what the turn did is kept and closed so providers accept it,
 * the stop is recorded in the session, the turn ends `interrupted`, and no further model call is made.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, type AgentEvent, Hook, type Message, SessionStore, Tool } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { STOPPED_NOTE, STOPPED_RESULT } from "../../src/programs/internal/turnEnd.ts"
import { delegate, isFirstCall, taskOf } from "../support/subTurns.ts"

const seed = { s: [{ role: "user", content: "before" }, { role: "assistant", content: "after" }] as ReadonlyArray<Message.Message> }

const shape = (messages: ReadonlyArray<Message.Message>) =>
  messages.map((m) =>
    m.role === "assistant"
      ? `assistant:${m.content}:${(m.toolCalls ?? []).map((c) => c.name).join(",")}${m.partial ? ":partial" : ""}`
      : `${m.role}:${typeof m.content === "string" ? m.content : "(parts)"}`
  )

const toolStarted = (events: Effect.Effect<ReadonlyArray<AgentEvent.AgentEvent>>, toolName: string) =>
  Testing.settled(Effect.map(events, (all) => all.some((e) => e._tag === "ToolExecStart" && e.toolName === toolName)))

/** What every stop-now test checks at the end: `interrupted`, one `InterruptReceived{now}`, no other model call, the session still usable. */
const endsStopped = (events: Effect.Effect<ReadonlyArray<AgentEvent.AgentEvent>>, calls: number) =>
  Effect.gen(function*() {
    const all = yield* events
    expect(all.filter((e) => e._tag === "InterruptReceived").map((e) => e._tag === "InterruptReceived" && e.kind)).toEqual(["now"])
    expect(all.filter((e) => e._tag === "TurnEnd").map((e) => e._tag === "TurnEnd" && e.status)).toEqual(["interrupted"])
    // time passes: nothing else is asked of the model
    yield* TestClock.adjust("1 minute")
    expect(yield* Testing.requests).toHaveLength(calls)
    expect(yield* (yield* AgentLoop).activeTurn("s")).toBeUndefined()
  })

const finalized: Array<string> = []

/** A tool that runs for a minute and notes when its finalizer runs. */
const slow = (name: string, ms = 60_000) =>
  Tool.make({
    name,
    description: `takes ${ms} ms`,
    parameters: Schema.Struct({}),
    readOnly: true,
    execute: () => Effect.as(Effect.sleep(ms), `${name} done`).pipe(Effect.ensuring(Effect.sync(() => finalized.push(name))))
  })

describe("interruptNow", () => {
  it.effect("mid-stream: the model call is cancelled, the streamed text kept as partial, the stop recorded", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* TestClock.adjust("25 millis")
      yield* Testing.settled(Effect.map(events, (all) => all.filter((e) => e._tag === "LLMDelta").length >= 2 || undefined))
      yield* loop.interruptNow("s")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("interrupted")
      expect(result.finalMessage).toBeUndefined()
      const stored = yield* (yield* SessionStore).load("s")
      expect(shape(stored)).toEqual(["user:before", "assistant:after:", "user:start", "assistant:Half of ::partial", `user:${STOPPED_NOTE}`])
      yield* endsStopped(events, 1)
      // the next turn sees the whole conversation, well formed
      yield* Effect.forkChild(loop.turn("s", "go on"))
      yield* TestClock.adjust("1 minute")
      const requests = yield* Testing.requests
      expect(shape(requests[1]!.messages).slice(-3)).toEqual(["assistant:Half of ::partial", `user:${STOPPED_NOTE}`, "user:go on"])
    }).pipe(Effect.provide(Testing.layer({
      sessions: seed,
      script: [{ content: ["Half ", "of ", "an ", "answer"], chunkDelay: "10 millis" }, { content: "resumed" }]
    }))))

  it.effect("mid-tool: running tools are cancelled (finalizers run), finished ones keep their results, the others get the stop's", () =>
    Effect.gen(function*() {
      finalized.length = 0
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* toolStarted(events, "long")
      yield* TestClock.adjust("10 millis")
      yield* Testing.settled(Effect.map(events, (all) => all.some((e) => e._tag === "ToolExecEnd" && e.toolName === "quick")))
      yield* loop.interruptNow("s")
      // the tool's finalizer ran before interruptNow returned
      expect(finalized).toEqual(["quick", "long"])
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("interrupted")
      const stored = yield* (yield* SessionStore).load("s")
      expect(shape(stored.slice(2))).toEqual([
        "user:start",
        "assistant::quick,long,later",
        "tool:quick done",
        `tool:${STOPPED_RESULT}`,
        `tool:${STOPPED_RESULT}`,
        `user:${STOPPED_NOTE}`
      ])
      const skipped = (yield* events).filter((e) => e._tag === "ToolExecSkipped").map((e) => e._tag === "ToolExecSkipped" && e.toolName)
      expect(skipped).toEqual(["long", "later"])
      yield* endsStopped(events, 1)
    }).pipe(Effect.provide(Testing.layer({
      sessions: seed,
      tools: [slow("quick", 5), slow("long"), Tool.make({ name: "later", description: "mutates", parameters: Schema.Struct({}), execute: () => Effect.succeed("ran") })],
      script: [{ toolCalls: [{ name: "quick" }, { name: "long" }, { name: "later" }] }, { content: "never" }]
    }))))

  it.effect("mid-hook: a hook that never returns is cancelled; what the turn did before is kept", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      let hookRunning = false
      yield* loop.registerHook(Hook.make({
        afterTool: () => Effect.sync(() => (hookRunning = true)).pipe(Effect.andThen(Effect.never))
      }))
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* Testing.settled(Effect.sync(() => hookRunning))
      yield* loop.interruptNow("s")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("interrupted")
      const stored = yield* (yield* SessionStore).load("s")
      expect(shape(stored.slice(2))).toEqual(["user:start", "assistant::fast", `tool:${STOPPED_RESULT}`, `user:${STOPPED_NOTE}`])
      yield* endsStopped(events, 1)
    }).pipe(
      Effect.scoped,
      Effect.provide(Testing.layer({
        sessions: seed,
        tools: [Tool.make({ name: "fast", description: "fast", parameters: Schema.Struct({}), execute: () => Effect.succeed("fast done") })],
        script: [{ toolCalls: [{ name: "fast" }] }, { content: "never" }]
      }))
    ))

  it.effect("with a sub-turn running: the sub-turn is cancelled too (its tool's finalizer runs) and the parent makes no further call", () =>
    Effect.gen(function*() {
      finalized.length = 0
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* toolStarted(events, "long")
      yield* loop.interruptNow("s")
      expect(finalized).toEqual(["long"])
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("interrupted")
      const all = yield* events
      // the child ended (rolled back, as sub-turns cut short by their parent are) before the parent
      expect(all.filter((e) => e._tag === "TurnEnd").map((e) => e._tag === "TurnEnd" && e.depth)).toEqual([1, 0])
      const stored = yield* (yield* SessionStore).load("s")
      expect(shape(stored)).toEqual(["user:start", "assistant::delegate", `tool:${STOPPED_RESULT}`, `user:${STOPPED_NOTE}`])
      yield* TestClock.adjust("1 minute")
      // one call of the parent, one of the child
      expect(yield* Testing.requests).toHaveLength(2)
      expect(yield* loop.activeTurns).toEqual([])
    }).pipe(Effect.provide(Testing.layer({
      tools: [delegate, slow("long")],
      script: (request) =>
        taskOf(request) === "dig"
          ? (isFirstCall(request) ? { toolCalls: [{ name: "long" }] } : { content: "child never answers" })
          : isFirstCall(request)
          ? { toolCalls: [{ name: "delegate", arguments: { task: "dig" } }] }
          : { content: "never" }
    }))))

  it.effect("returns NoActiveTurn when no turn runs, and a stop asked twice is announced once", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      expect((yield* Effect.flip(loop.interruptNow("s")))._tag).toBe("NoActiveTurn")
      const turn = yield* Effect.forkChild(loop.turn("s", "start"))
      yield* Testing.settled(Effect.map(events, (all) => all.some((e) => e._tag === "LLMRequest")))
      yield* Effect.all([loop.interruptNow("s"), Effect.ignore(loop.interruptNow("s"))], { concurrency: 2 })
      expect((yield* Fiber.join(turn)).status).toBe("interrupted")
      // nothing had been produced but the input: kept, with the stop recorded
      expect(shape((yield* (yield* SessionStore).load("s")))).toEqual(["user:start", `user:${STOPPED_NOTE}`])
      yield* endsStopped(events, 1)
    }).pipe(Effect.provide(Testing.layer({ script: [{ content: "slow", delay: "1 minute" }] }))))
})
