/**
 * The hooks runner when hooks misbehave: a hook that takes too long times out, one that throws
 * or fails counts as continue, and an `onEvent` observer that stalls or fails loses only its own
 * events; each names itself in an `Error` event.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { type AgentEvent, EventBus, Hook, Hooks } from "effect-agent-loop"
import { ofKind } from "../support/fixtures.ts"
import { call, context, points, TestLayer } from "../support/hooksRunner.ts"

const errorsOf = (events: ReadonlyArray<AgentEvent.AgentEvent>) => ofKind(events, "Error")

describe("Hooks runner: slow, failing and observing hooks", () => {
  it.effect("a hook that takes 5 s times out, counts as continue and names itself in an Error event", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const sub = yield* (yield* EventBus).subscribe({ capacity: 64 })
      let after = 0
      yield* hooks.register({ beforeTool: () => Effect.never }, { name: "slow", priority: 200 })
      yield* hooks.register({ beforeTool: () => void after++ })
      const pending = yield* Effect.forkChild(hooks.beforeTool({ context, call }))
      yield* TestClock.adjust(4_999)
      expect(pending.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(1)
      expect(yield* Fiber.join(pending)).toEqual({ _tag: "Continue", arguments: call.arguments })
      expect(after).toBe(1)
      expect(errorsOf(yield* sub.takeAll)).toEqual([{
        _tag: "Error",
        turnId: "t1",
        sessionKey: "s1",
        iteration: 2,
        depth: 1,
        parentTurnId: "p0",
        at: 5_000,
        stage: "beforeTool",
        message: "beforeTool timed out after 5000ms",
        hook: "slow"
      }])
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("a per-registration timeout replaces hookTimeout", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      yield* hooks.register({ beforeTool: () => Effect.as(Effect.sleep("20 seconds"), Hook.deny("late")) }, { timeout: "30 seconds" })
      const pending = yield* Effect.forkChild(hooks.beforeTool({ context, call }))
      yield* TestClock.adjust("20 seconds")
      expect(yield* Fiber.join(pending)).toMatchObject({ _tag: "Deny", reason: "late" })
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("a throwing or failing hook counts as continue and publishes an Error event", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const sub = yield* (yield* EventBus).subscribe({ capacity: 64 })
      yield* hooks.register({ beforeTool: () => { throw new Error("boom") } }, { name: "thrower" })
      yield* hooks.register({ sessionStart: () => Effect.fail("nope") }, { name: "failer" })
      expect(yield* hooks.beforeTool({ context, call })).toEqual({ _tag: "Continue", arguments: call.arguments })
      expect(yield* hooks.sessionStart({ sessionKey: "s9" })).toEqual(Hook.continue)
      const errors = errorsOf(yield* sub.takeAll)
      expect(errors.map((e) => [e.stage, e.hook, e.message])).toEqual([
        ["beforeTool", "thrower", "beforeTool died: boom"],
        ["sessionStart", "failer", "sessionStart failed: nope"]
      ])
      expect(errors[1]).toMatchObject({ turnId: "", sessionKey: "s9", iteration: 0, depth: 0 })
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("onEvent observers receive published events through their own subscription", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const bus = yield* EventBus
      const seen: Array<string> = []
      const done = yield* Deferred.make<void>()
      yield* hooks.register({
        onEvent: (event) =>
          Effect.suspend(() => {
            seen.push(event._tag)
            return seen.length >= 2 ? Deferred.succeed(done, undefined) : Effect.void
          })
      })
      const base = { turnId: "t", sessionKey: "s", iteration: 0, depth: 0, at: 0 }
      yield* bus.publish({ _tag: "TurnStart", ...base, input: "hi" })
      yield* bus.publish({ _tag: "SteeringInjected", ...base, count: 1 })
      yield* Deferred.await(done)
      expect(seen).toEqual(["TurnStart", "SteeringInjected"])
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("a stalled observer loses its own events and never blocks publish", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const bus = yield* EventBus
      const stuck = yield* Deferred.make<void>()
      const never = yield* Deferred.make<void>()
      yield* hooks.register({ onEvent: () => Effect.andThen(Deferred.succeed(stuck, undefined), Deferred.await(never)) })
      const base = { turnId: "t", sessionKey: "s", iteration: 0, depth: 0, at: 0 }
      yield* bus.publish({ _tag: "TurnStart", ...base, input: "hi" })
      yield* Deferred.await(stuck)
      for (let i = 0; i < 40; i++) yield* bus.publish({ _tag: "SteeringInjected", ...base, count: i })
      // the buffer (capacity 16) is full: the rest were dropped, and publish never waited
      expect((yield* bus.dropped).SteeringInjected).toBe(40 - 16)
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("an observer that fails reports once, and never on its own reports", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const bus = yield* EventBus
      const sub = yield* bus.subscribe({ capacity: 64 })
      yield* hooks.register({ onEvent: () => Effect.fail("broken") }, { name: "bad" })
      yield* hooks.register({ onEvent: () => { throw new Error("also broken") } }, { name: "worse" })
      yield* bus.publish({ _tag: "SteeringInjected", turnId: "t", sessionKey: "s", iteration: 3, depth: 0, at: 0, count: 1 })
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      const events = yield* sub.takeAll
      const errors = errorsOf(events)
      expect(errors.map((e) => [e.stage, e.hook, e.message, e.iteration])).toEqual([
        ["onEvent", "bad", "onEvent failed: broken", 3],
        ["onEvent", "worse", "onEvent died: also broken", 3]
      ])
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))
})
