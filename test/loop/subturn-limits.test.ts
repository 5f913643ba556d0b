/**
 * Sub-turns at their limits: the depth limit, the concurrency limit and its wait, and the
 * validation of a sub-turn's config (typed refusals the spawning tool reports), the sub-turn
 * timeout, and the bound of an ephemeral session.
 */
import { describe, expect, it } from "@effect/vitest"
import { type Duration, Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, CurrentTurn, Message, type ProviderTypes, type Scripted, Tool } from "effect-agent-loop"
import { ephemeralSession } from "../../src/programs/internal/subTurn.ts"
import * as Testing from "effect-agent-loop/testing"
import { ofKind } from "../support/fixtures.ts"
import { delegate, isFirstCall, taskOf } from "../support/subTurns.ts"

describe("sub-turns: limits and validation", () => {
  it.effect("a depth-3 turn cannot spawn: DepthLimitExceeded, no spawn event", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "level 0")
      expect(result.status).toBe("completed")
      const all = yield* events
      expect(ofKind(all, "SubTurnSpawn").map((e) => e.depth)).toEqual([0, 1, 2])
      const failed = ofKind(all, "ToolExecEnd").find((e) => e._tag === "ToolExecEnd" && e.depth === 3)
      expect(failed?._tag === "ToolExecEnd" && [failed.isError, failed.result]).toEqual([true, "DepthLimitExceeded 4"])
      expect(ofKind(all, "SubTurnEnd").map((e) => e._tag === "SubTurnEnd" && e.status)).toEqual(["completed", "completed", "completed"])
      const depths = new Set(all.filter((e) => e._tag === "TurnStart").map((e) => `${e.depth}:${e.parentTurnId ?? "-"}`))
      expect(depths.size).toBe(4)
    }).pipe(Effect.provide(Testing.layer({
      tools: [delegate],
      script: (request) => {
        const level = Number(taskOf(request).replace("level ", ""))
        return isFirstCall(request)
          ? { toolCalls: [{ name: "delegate", arguments: { task: `level ${level + 1}` } }] }
          : { content: `done at ${level}` }
      }
    }))))

  it.effect("an empty model is InvalidSubTurnConfig", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      yield* (yield* AgentLoop).turn("s", "go")
      const end = ofKind(yield* events, "ToolExecEnd")[0]
      expect(end?._tag === "ToolExecEnd" && end.result).toMatch(/^InvalidSubTurnConfig .*model/)
      expect(ofKind(yield* events, "SubTurnSpawn")).toEqual([])
    }).pipe(Effect.provide(Testing.layer({
      tools: [delegate],
      script: [{ toolCalls: [{ name: "delegate", arguments: { task: "x", model: "" } }] }, { content: "ok" }]
    }))))

  const fanOut = Tool.make({
    name: "fan",
    description: "spawns six sub-turns at once",
    parameters: Schema.Struct({}),
    execute: () =>
      Effect.gen(function*() {
        const turn = yield* CurrentTurn
        const outcomes = yield* Effect.forEach(
          [1, 2, 3, 4, 5, 6],
          (i) =>
            turn.spawnSubTurn({ model: "m", task: `child ${i}` }).pipe(
              Effect.map((r) => `${i}:${r.status}`),
              Effect.catchTag("ConcurrencyTimeout", () => Effect.succeed(`${i}:ConcurrencyTimeout`)),
              Effect.orDie
            ),
          { concurrency: "unbounded" }
        )
        return outcomes.join(",")
      })
  })
  const fanScript = (childDelay: Duration.Input) => (request: ProviderTypes.ProviderRequest): Scripted.ScriptedResponse =>
    taskOf(request) === "go"
      ? isFirstCall(request) ? { toolCalls: [{ name: "fan" }] } : { content: "fanned" }
      : { content: `${taskOf(request)} done`, delay: childDelay }

  it.effect("5 children hold the slots; a 6th waits and fails at exactly 30 s", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const turn = yield* Effect.forkChild(loop.turn("s", "go"))
      yield* TestClock.adjust("29999 millis")
      expect(ofKind(yield* events, "SubTurnSpawn")).toHaveLength(5)
      expect((yield* loop.activeTurn("s"))?.childTurnIds).toHaveLength(5)
      yield* TestClock.adjust("1 millis")
      yield* TestClock.adjust("1 minute")
      yield* Fiber.join(turn)
      const end = ofKind(yield* events, "ToolExecEnd")[0]
      expect(end?._tag === "ToolExecEnd" && end.result).toBe("1:completed,2:completed,3:completed,4:completed,5:completed,6:ConcurrencyTimeout")
      expect(ofKind(yield* events, "SubTurnSpawn")).toHaveLength(5)
    }).pipe(Effect.provide(Testing.layer({ tools: [fanOut], script: fanScript("1 minute") }))))

  it.effect("the 6th succeeds when a slot frees before 30 s", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* TestClock.adjust("9999 millis")
      expect(ofKind(yield* events, "SubTurnSpawn")).toHaveLength(5)
      yield* TestClock.adjust("1 millis")
      expect(ofKind(yield* events, "SubTurnSpawn")).toHaveLength(6)
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(turn)
      const end = ofKind(yield* events, "ToolExecEnd")[0]
      expect(end?._tag === "ToolExecEnd" && end.result).toBe("1:completed,2:completed,3:completed,4:completed,5:completed,6:completed")
    }).pipe(Effect.provide(Testing.layer({ tools: [fanOut], script: fanScript("10 seconds") }))))

  it.effect("a sub-turn times out at 5 minutes of Clock time", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* TestClock.adjust("299999 millis")
      expect(ofKind(yield* events, "SubTurnSpawn")).toHaveLength(1)
      expect(ofKind(yield* events, "SubTurnEnd")).toEqual([])
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(turn)
      const all = yield* events
      expect(ofKind(all, "SubTurnEnd").map((e) => e._tag === "SubTurnEnd" && e.status)).toEqual(["aborted"])
      const end = ofKind(all, "ToolExecEnd")[0]
      expect(end?._tag === "ToolExecEnd" && end.result).toBe("aborted: Sub-turn timed out after 300000ms")
    }).pipe(Effect.provide(Testing.layer({
      tools: [delegate],
      script: (request) =>
        taskOf(request) === "go"
          ? isFirstCall(request) ? { toolCalls: [{ name: "delegate", arguments: { task: "slow" } }] } : { content: "ok" }
          : { content: "never", delay: "1 hour" }
    }))))

  it("the ephemeral session keeps the newest 50 messages", () =>
    Effect.runSync(Effect.gen(function*() {
      const session = ephemeralSession(50)
      for (let i = 1; i <= 70; i++) yield* session.commit([Message.user(`m${i}`)])
      const messages = yield* session.load
      expect(messages).toHaveLength(50)
      expect(messages[0]!.content).toBe("m21")
      expect(messages.at(-1)!.content).toBe("m70")
    })))
})
