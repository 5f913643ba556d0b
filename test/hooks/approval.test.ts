/**
 * Tool approval through real turns: an approver's decision is what the model sees, the time a
 * human takes to answer is not the tool's, and no answer within the approval timeout denies.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, Hook, Message, Tool } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { ofKind } from "../support/fixtures.ts"

const guardedRuns: Array<string> = []
const guarded = Tool.make({
  name: "guarded",
  description: "Needs approval",
  parameters: Schema.Struct({}),
  requiresApproval: true,
  execute: (_, ctx) => Effect.sync(() => guardedRuns.push(ctx.toolCallId)).pipe(Effect.as("guarded ran"))
})

const guardedCall = [{ toolCalls: [{ id: "g1", name: "guarded" }] }, { content: "done" }]

describe("approval through a turn", () => {
  it.effect("an approver's deny is the result the model sees", () =>
    Effect.gen(function*() {
      guardedRuns.length = 0
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook({ approveTool: () => Hook.deny("not on Fridays") }, { name: "approver" })
      yield* loop.turn("s", "go")
      const text = "Tool execution denied by approval: not on Fridays"
      expect(guardedRuns).toEqual([])
      expect((yield* Testing.requests)[1]!.messages.at(-1)).toEqual(Message.toolResult({ id: "g1", name: "guarded" }, text, true))
      expect(ofKind(yield* events, "ToolExecSkipped").map((e) => e.reason)).toEqual([text])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ tools: [guarded], script: guardedCall }))))

  it.effect("a tool that requires approval, with no approver, is denied", () =>
    Effect.gen(function*() {
      guardedRuns.length = 0
      const events = (yield* Testing.recordEvents).all
      yield* (yield* AgentLoop).turn("s", "go")
      expect(guardedRuns).toEqual([])
      const skipped = ofKind(yield* events, "ToolExecSkipped")
      expect(skipped.map((e) => e.reason)).toEqual(["Tool execution denied by approval: no approver registered"])
    }).pipe(Effect.provide(Testing.layer({ tools: [guarded], script: guardedCall }))))

  it.effect("with autoApprove it runs", () =>
    Effect.gen(function*() {
      guardedRuns.length = 0
      yield* (yield* AgentLoop).turn("s", "go")
      expect(guardedRuns).toEqual(["g1"])
      expect((yield* Testing.requests)[1]!.messages.at(-1)?.content).toBe("guarded ran")
    }).pipe(Effect.provide(Testing.layer({ tools: [guarded], script: guardedCall, config: { autoApprove: true } }))))

  it.effect("a tool's duration excludes the wait for approval: 10 s to approve, 1 s to run, 1 s", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook({ approveTool: () => Effect.as(Effect.sleep("10 seconds"), Hook.approve) }, { name: "pondering-human" })
      const turn = yield* Effect.forkChild(loop.turn("s", "go"))
      yield* TestClock.adjust("10 seconds")
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("completed")
      const all = yield* events
      expect(ofKind(all, "ToolExecStart").map((e) => e.at)).toEqual([10_000])
      expect(ofKind(all, "ToolExecEnd").map((e) => [e.at, e.durationMs])).toEqual([[11_000, 1_000]])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({
      tools: [Tool.make({
        name: "slow",
        description: "Takes a second",
        parameters: Schema.Struct({}),
        requiresApproval: true,
        execute: () => Effect.as(Effect.sleep("1 second"), "slow ran")
      })],
      script: [{ toolCalls: [{ id: "s1", name: "slow" }] }, { content: "done" }]
    }))))

  it.effect("an approver that never answers denies at exactly 60 s", () =>
    Effect.gen(function*() {
      guardedRuns.length = 0
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      let asked = false
      yield* loop.registerHook({ approveTool: () => Effect.sync(() => (asked = true)).pipe(Effect.andThen(Effect.never)) }, {
        name: "slow-human"
      })
      const turn = yield* Effect.forkChild(loop.turn("s", "go"))
      yield* Testing.settled(Effect.sync(() => asked))
      yield* TestClock.adjust(59_999)
      expect(Testing.kinds(yield* events, ["ToolExecStart", "ToolExecSkipped", "TurnEnd"])).toEqual([])
      yield* TestClock.adjust(1)
      const result = yield* Fiber.join(turn)
      expect(guardedRuns).toEqual([])
      const all = yield* events
      const skipped = ofKind(all, "ToolExecSkipped")
      expect(skipped.map((e) => [e.at, e.reason])).toEqual([[
        60_000,
        "Tool execution denied by approval: approval by slow-human: approveTool timed out after 60000ms"
      ]])
      expect(ofKind(all, "Error").map((e) => [e.stage, e.hook])).toEqual([["approveTool", "slow-human"]])
      expect(result.status).toBe("completed")
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ tools: [guarded], script: guardedCall }))))
})
