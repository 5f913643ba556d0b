import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, CurrentTurn, Hook, Message, Scripted, SessionStore, spawn, subagent, subagentWith, Tool } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { ofKind } from "../support/fixtures.ts"
import { delegate, isFirstCall, taskOf } from "../support/subTurns.ts"

describe("sub-turns: delivery", () => {
  it.effect("a sync result is returned to the tool and not injected into the parent", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.finalMessage?.content).toBe("parent done")
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      const parentSecond = requests.find((r) => taskOf(r) === "go" && !isFirstCall(r))!
      expect(parentSecond.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual(["child answer"])
      expect(parentSecond.messages.some((m) => Message.textOf(m.content).startsWith("[SubTurn Result]"))).toBe(false)
      expect(ofKind(yield* events, "SubTurnResultDelivered")).toEqual([])
    }).pipe(Effect.provide(Testing.layer({
      tools: [subagent],
      script: (request) =>
        taskOf(request) === "go"
          ? isFirstCall(request) ? { toolCalls: [{ name: "subagent", arguments: { task: "child task" } }] } : { content: "parent done" }
          : { content: "child answer" }
    }))))

  it.effect("a sub-turn's tools narrow its parent's, never widen them: a grandchild asking for more gets the intersection", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.finalMessage?.content).toBe("top done")
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      const names = (task: string) => requests.find((r) => taskOf(r) === task)!.tools.map((t) => t.name).sort()
      expect(names("go")).toEqual(["a", "b", "subagent"])
      expect(names("mid")).toEqual(["a", "subagent"])
      expect(names("leaf")).toEqual(["a"])
    }).pipe(Effect.provide(Testing.layer({
      tools: [
        subagent,
        Tool.make({ name: "a", description: "a", parameters: Schema.Struct({}), execute: () => Effect.succeed("a") }),
        Tool.make({ name: "b", description: "b", parameters: Schema.Struct({}), execute: () => Effect.succeed("b") })
      ],
      script: (request) => {
        const task = taskOf(request)
        if (!isFirstCall(request)) return { content: `${task === "go" ? "top" : task} done` }
        if (task === "go") return { toolCalls: [{ name: "subagent", arguments: { task: "mid", tools: ["subagent", "a"] } }] }
        if (task === "mid") return { toolCalls: [{ name: "subagent", arguments: { task: "leaf", tools: ["a", "b"] } }] }
        return { content: "leaf done" }
      }
    }))))

  it.effect("tools: [] means no tools, on a sub-turn as on a turn; without tools a sub-turn has its parent's", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      yield* loop.turn("t", "bare", { tools: [] })
      const result = yield* loop.turn("s", "go")
      expect(result.finalMessage?.content).toBe("top done")
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      const names = (task: string) => requests.find((r) => taskOf(r) === task)!.tools.map((t) => t.name).sort()
      expect(names("bare")).toEqual([])
      expect(names("go")).toEqual(["a", "subagent"])
      expect(names("inherits")).toEqual(["a", "subagent"])
      expect(names("none")).toEqual([])
      expect(names("agent without tools")).toEqual([])
    }).pipe(Effect.provide(Testing.layer({
      tools: [
        subagentWith([{ name: "bare", description: "has no tools", prompt: "Answer from what you know.", tools: [] }]),
        Tool.make({ name: "a", description: "a", parameters: Schema.Struct({}), execute: () => Effect.succeed("a") })
      ],
      script: (request) => {
        const task = taskOf(request)
        if (task === "go" && isFirstCall(request)) {
          return {
            toolCalls: [
              { name: "subagent", arguments: { task: "inherits" } },
              { name: "subagent", arguments: { task: "none", tools: [] } },
              { name: "subagent", arguments: { task: "agent without tools", agent: "bare" } }
            ]
          }
        }
        return { content: `${task === "go" ? "top" : task} done` }
      }
    }))))

  it.effect("an async result is injected into the parent's next call", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* TestClock.adjust("99 millis")
      expect(ofKind(yield* events, "SubTurnSpawn")).toHaveLength(1)
      expect(ofKind(yield* events, "SubTurnEnd")).toHaveLength(0)
      yield* TestClock.adjust("1 millis")
      expect(ofKind(yield* events, "SubTurnEnd")).toHaveLength(1)
      yield* TestClock.adjust("900 millis")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("completed")
      const requests = yield* (yield* Scripted.ScriptedLog).requests
      const parentCalls = requests.filter((r) => taskOf(r) === "go")
      expect(parentCalls).toHaveLength(3)
      expect(parentCalls[1]!.messages.some((m) => Message.textOf(m.content).startsWith("[SubTurn Result]"))).toBe(false)
      expect(parentCalls[2]!.messages.at(-1)).toEqual({ role: "user", content: "[SubTurn Result] child answer" })
      expect(ofKind(yield* events, "SubTurnResultDelivered")).toHaveLength(1)
      expect(result.messages.some((m) => m.content === "[SubTurn Result] child answer")).toBe(true)
    }).pipe(Effect.provide(Testing.layer({
      tools: [spawn, Tool.make({ name: "wait", description: "waits", parameters: Schema.Struct({}), execute: () => Effect.as(Effect.sleep("1 second"), "waited") })],
      script: (request) => {
        if (taskOf(request) !== "go") return { content: "child answer", delay: "100 millis" }
        const calls = request.messages.filter((m) => m.role === "assistant").length
        return calls === 0
          ? { toolCalls: [{ name: "spawn", arguments: { task: "child task" } }] }
          : calls === 1
          ? { toolCalls: [{ name: "wait" }] }
          : { content: "parent done" }
      }
    }))))

  it.effect("a parent that finished first stops its non-critical child: SubTurnEnd{aborted}, no orphan (no result exists), history untouched", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const result = yield* loop.turn("s", "go")
      expect(result.status).toBe("completed")
      yield* TestClock.adjust("1 second")
      const end = ofKind(yield* events, "SubTurnEnd")[0]!
      expect(end._tag === "SubTurnEnd" && [end.status, end.turnId]).toEqual(["aborted", result.turnId])
      expect(ofKind(yield* events, "SubTurnOrphan")).toEqual([])
      const history = yield* (yield* SessionStore).load("s")
      expect(history).toEqual(result.messages)
    }).pipe(Effect.provide(Testing.layer({
      tools: [spawn],
      script: (request) =>
        taskOf(request) !== "go"
          ? { content: "late child", delay: "500 millis" }
          : isFirstCall(request)
          ? { toolCalls: [{ name: "spawn", arguments: { task: "child" } }] }
          : { content: "parent done" }
    }))))

  it.effect("20 async results into a pending queue of 16 with a slow parent: 16 delivered, 4 orphans, no deadlock", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* TestClock.adjust("10 seconds")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("completed")
      const all = yield* events
      expect(ofKind(all, "SubTurnEnd")).toHaveLength(20)
      expect(ofKind(all, "SubTurnResultDelivered")).toHaveLength(16)
      const orphans = ofKind(all, "SubTurnOrphan")
      expect(orphans.map((e) => e._tag === "SubTurnOrphan" && e.reason)).toEqual(["queue_full", "queue_full", "queue_full", "queue_full"])
      const delivered = new Set(ofKind(all, "SubTurnResultDelivered").map((e) => e._tag === "SubTurnResultDelivered" && e.childTurnId))
      for (const o of orphans) expect(delivered.has(o._tag === "SubTurnOrphan" && o.childTurnId)).toBe(false)
    }).pipe(Effect.provide(Testing.layer({
      tools: [Tool.make({
        name: "swarm",
        description: "spawns 20 async sub-turns then keeps the parent busy",
        parameters: Schema.Struct({}),
        execute: () =>
          Effect.gen(function*() {
            const turn = yield* CurrentTurn
            for (let i = 0; i < 20; i++) yield* Effect.orDie(turn.spawnDetached({ model: "m", task: `child ${i}` }))
            yield* Effect.sleep("5 seconds")
            return "swarmed"
          })
      })],
      script: (request) =>
        taskOf(request) !== "go"
          ? { content: `${taskOf(request)} done`, delay: "10 millis" }
          : isFirstCall(request)
          ? { toolCalls: [{ name: "swarm" }] }
          : { content: "all done" }
    }))))
})

describe("sub-turns on TestClock", () => {
  const wait = Tool.make({
    name: "wait",
    description: "waits a second",
    parameters: Schema.Struct({ seconds: Schema.Number }),
    execute: ({ seconds }) => Effect.as(Effect.sleep(`${seconds} seconds`), "waited")
  })
  it.effect("a forked turn and one TestClock.adjust: every sleep of every descendant (async children and grandchildren) fires", () =>
    Effect.gen(function*() {
      const events = yield* Testing.recordEvents
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "root"))
      yield* Testing.advance("2 seconds")
      const all = yield* events.all
      expect(all.filter((e) => e._tag === "SubTurnEnd").map((e) => [e.depth, e.at])).toEqual([[1, 200], [0, 1300]])
      expect(all.filter((e) => e._tag === "SubTurnResultDelivered").map((e) => [e.depth, e.at])).toEqual([[1, 1200], [0, 2000]])
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("completed")
      expect(result.finalMessage?.content).toBe("root done")
      const requests = yield* Testing.requests
      expect(requests.filter((r) => taskOf(r) === "child").at(-1)!.messages.at(-1)?.content).toBe("[SubTurn Result] grandchild done")
      expect(requests.filter((r) => taskOf(r) === "root").at(-1)!.messages.at(-1)?.content).toBe("[SubTurn Result] child done")
    }).pipe(Effect.provide(Testing.layer({
      tools: [spawn, wait],
      script: (request) => {
        const task = taskOf(request)
        const calls = request.messages.filter((m) => m.role === "assistant").length
        if (task === "grandchild") return { content: "grandchild done", delay: "100 millis" }
        if (task === "child") {
          const step = [{ toolCalls: [{ name: "spawn", arguments: { task: "grandchild" } }] }, { toolCalls: [{ name: "wait", arguments: { seconds: 1 } }] }][calls]
          return { ...(step ?? { content: "child done" }), delay: "100 millis" }
        }
        return [{ toolCalls: [{ name: "spawn", arguments: { task: "child" } }] }, { toolCalls: [{ name: "wait", arguments: { seconds: 2 } }] }][calls] ??
          { content: "root done" }
      }
    }))))
})

describe("sub-turns: lifecycle", () => {
  const blocker = Tool.make({ name: "block", description: "never returns", parameters: Schema.Struct({}), execute: () => Effect.never })
  it.effect("a hard abort of the root cascades to child and grandchild", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "root"))
      yield* TestClock.adjust(0)
      expect((yield* events).some((e) => e._tag === "ToolExecStart" && e.toolName === "block")).toBe(true)
      expect((yield* loop.activeTurns).map((t) => t.depth).sort()).toEqual([0, 1, 2])
      yield* loop.interruptHard("s")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("aborted")
      const all = yield* events
      expect(ofKind(all, "SubTurnEnd").map((e) => e._tag === "SubTurnEnd" && [e.depth, e.status]).sort()).toEqual([[0, "aborted"], [1, "aborted"]])
      expect(ofKind(all, "TurnEnd").map((e) => e._tag === "TurnEnd" && [e.depth, e.status]).sort()).toEqual([[0, "aborted"], [1, "aborted"], [2, "aborted"]])
      expect(yield* loop.activeTurns).toEqual([])
    }).pipe(Effect.provide(Testing.layer({
      tools: [delegate, blocker],
      script: (request) =>
        taskOf(request) === "grandchild"
          ? { toolCalls: [{ name: "block" }] }
          : { toolCalls: [{ name: "delegate", arguments: { task: taskOf(request) === "root" ? "child" : "grandchild" } }] }
    }))))

  const spawnTwo = Tool.make({
    name: "spawn_two",
    description: "spawns a critical and a non-critical sub-turn",
    parameters: Schema.Struct({}),
    execute: () =>
      Effect.gen(function*() {
        const turn = yield* CurrentTurn
        const critical = yield* Effect.orDie(turn.spawnDetached({ model: "m", task: "critical", critical: true }))
        const plain = yield* Effect.orDie(turn.spawnDetached({ model: "m", task: "plain" }))
        return `${critical} ${plain}`
      })
  })
  it.effect("a critical child outlives its parent's normal end (its result an orphan); a non-critical child is stopped (no orphan)", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.status).toBe("completed")
      expect(ofKind(yield* events, "SubTurnEnd")).toHaveLength(1)
      const stopped = ofKind(yield* events, "SubTurnEnd")[0]!
      expect(stopped._tag === "SubTurnEnd" && stopped.status).toBe("aborted")
      yield* TestClock.adjust("29999 millis")
      expect(ofKind(yield* events, "SubTurnEnd")).toHaveLength(1)
      yield* TestClock.adjust("1 millis")
      expect(ofKind(yield* events, "SubTurnEnd")).toHaveLength(2)
      const all = yield* events
      const ends = ofKind(all, "SubTurnEnd").map((e) => e._tag === "SubTurnEnd" && e.status)
      expect(ends).toEqual(["aborted", "completed"])
      const orphans = ofKind(all, "SubTurnOrphan").map((e) => e._tag === "SubTurnOrphan" && [e.reason, e.content])
      expect(orphans).toEqual([["parent_ended", "critical finished"]])
    }).pipe(Effect.provide(Testing.layer({
      tools: [spawnTwo],
      script: (request) =>
        taskOf(request) === "go"
          ? isFirstCall(request) ? { toolCalls: [{ name: "spawn_two" }] } : { content: "parent done" }
          : { content: `${taskOf(request)} finished`, delay: "30 seconds" }
    }))))

  it.effect("a provider that dies inside a child: the parent's tool gets an error result, SubTurnEnd{failed}", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.status).toBe("completed")
      const all = yield* events
      expect(ofKind(all, "SubTurnEnd").map((e) => e._tag === "SubTurnEnd" && e.status)).toEqual(["failed"])
      const end = ofKind(all, "ToolExecEnd").find((e) => e.depth === 0)
      expect(end?._tag === "ToolExecEnd" && end.isError).toBe(true)
      expect(end?._tag === "ToolExecEnd" && end.result).toMatch(/^Sub-agent ended failed: .*provider exploded/)
    }).pipe(Effect.provide(Testing.layer({
      tools: [subagent],
      script: (request) =>
        taskOf(request) === "go"
          ? isFirstCall(request) ? { toolCalls: [{ name: "subagent", arguments: { task: "child" } }] } : { content: "parent done" }
          : { die: new Error("provider exploded") }
    }))))
})

describe("sub-turns: hooks", () => {
  it.effect("beforeSubTurn may block (no spawn); afterSubTurn sees each child's result", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const events = (yield* Testing.recordEvents).all
      const seen: Array<string> = []
      yield* loop.registerHook({
        beforeSubTurn: ({ subTurn }) => subTurn.prompt === "forbidden" ? Hook.block("not this one") : Hook.continue,
        afterSubTurn: ({ result, subTurn }) => void seen.push(`${subTurn.prompt}:${result.status}:${result.finalMessage?.content}`)
      }, { name: "gate" })
      yield* loop.turn("s", "go")
      const results = ofKind(yield* events, "ToolExecEnd").filter((e) => e.depth === 0)
      expect(results.map((e) => e._tag === "ToolExecEnd" && e.result)).toEqual(["SubTurnBlocked not this one", "completed: allowed done"])
      expect(ofKind(yield* events, "SubTurnSpawn")).toHaveLength(1)
      expect(seen).toEqual(["allowed:completed:allowed done"])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({
      tools: [delegate],
      script: (request) =>
        taskOf(request) !== "go"
          ? { content: `${taskOf(request)} done` }
          : isFirstCall(request)
          ? {
            toolCalls: [
              { name: "delegate", arguments: { task: "forbidden" } },
              { name: "delegate", arguments: { task: "allowed" } }
            ]
          }
          : { content: "ok" }
    }))))
})
