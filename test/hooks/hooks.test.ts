import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope } from "effect"
import { TestClock } from "effect/testing"
import { type AgentEvent, EventBus, Hook, Hooks, Message } from "effect-agent-loop"
import { ofKind } from "../support/fixtures.ts"
import { call, context, layerWith, points, TestLayer, turnResult } from "../support/hooksRunner.ts"

const errorsOf = (events: ReadonlyArray<AgentEvent.AgentEvent>) => ofKind(events, "Error")

describe("Hooks runner", () => {
  it.effect("runs by priority, ties in registration order; list shows run order", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const log: Array<string> = []
      const tracer = (name: string) => Hook.make({ beforeTool: () => void log.push(name), afterTurn: () => undefined })
      yield* hooks.register(tracer("a"), { name: "a" })
      yield* hooks.register(tracer("b"), { name: "b", priority: 200 })
      yield* hooks.register(tracer("c"), { name: "c" })
      yield* hooks.register(tracer("low"), { priority: 1, source: "/x/HOOK.md" })
      yield* hooks.beforeTool({ context, call })
      expect(log).toEqual(["b", "a", "c", "low"])
      const list = yield* hooks.list
      expect(list.map((h) => h.name)).toEqual(["b", "a", "c", "hook-4"])
      expect(list[0]).toEqual({ name: "b", priority: 200, source: "code", handlers: ["beforeTool", "afterTurn"] })
      expect(list[3]!.source).toBe("/x/HOOK.md")
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("closing the registration scope removes the hook", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const bus = yield* EventBus
      let calls = 0
      let observed = 0
      const scope = yield* Scope.make()
      yield* hooks.register({ beforeTool: () => void calls++, onEvent: () => void observed++ }, { name: "temp" }).pipe(
        Scope.provide(scope)
      )
      yield* hooks.beforeTool({ context, call })
      expect((yield* hooks.list).map((h) => h.name)).toEqual(["temp"])
      yield* Scope.close(scope, Exit.void)
      yield* hooks.beforeTool({ context, call })
      yield* bus.publish({ _tag: "SteeringInjected", turnId: "t", sessionKey: "s", iteration: 0, depth: 0, at: 0, count: 1 })
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      expect(calls).toBe(1)
      expect(observed).toBe(0)
      expect(yield* hooks.list).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("beforeTurn: messages accumulate, system prompt last writer wins, each sees the changes so far", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const seen: Array<[number, string | undefined]> = []
      yield* hooks.register({
        beforeTurn: ({ messages, systemPrompt }) => {
          seen.push([messages.length, systemPrompt])
          return Hook.modify({ addMessages: [Message.user("A")], systemPrompt: "p1" })
        }
      })
      yield* hooks.register({
        beforeTurn: ({ messages, systemPrompt }) => {
          seen.push([messages.length, systemPrompt])
          return Effect.succeed(Hook.modify({ addMessages: [Message.user("B")], systemPrompt: "p2" }))
        }
      })
      yield* hooks.register({ beforeTurn: ({ systemPrompt }) => void seen.push([-1, systemPrompt]) })
      const outcome = yield* hooks.beforeTurn({ context, input: "hi", messages: [Message.user("old")], systemPrompt: "p0" })
      expect(seen).toEqual([[1, "p0"], [2, "p1"], [-1, "p2"]])
      expect(outcome).toEqual({ _tag: "Continue", addMessages: [Message.user("A"), Message.user("B")], systemPrompt: "p2" })
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("beforeTurn: the first block wins and stops the chain", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      let later = 0
      yield* hooks.register({ beforeTurn: () => Hook.modify({ addMessages: [Message.user("A")] }) })
      yield* hooks.register({ beforeTurn: () => Hook.block("not today") }, { name: "gate" })
      yield* hooks.register({ beforeTurn: () => void later++ })
      const outcome = yield* hooks.beforeTurn({ context, input: "hi", messages: [], systemPrompt: undefined })
      expect(outcome).toEqual({ _tag: "Block", reason: "not today", hook: "gate" })
      expect(later).toBe(0)
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("beforeLLMRequest: each sees the previous output; an abort stops", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const request = { model: "m", messages: [Message.user("hi")], tools: [] }
      const tool = { name: "t", description: "d", parameters: {} }
      const seenModels: Array<string> = []
      yield* hooks.register({ beforeLLMRequest: () => Hook.modify({ model: "big" }) })
      yield* hooks.register({
        beforeLLMRequest: ({ request }) => {
          seenModels.push(request.model)
          return Hook.modify({ tools: [tool] })
        }
      })
      const outcome = yield* hooks.beforeLLMRequest({ context, request })
      expect(seenModels).toEqual(["big"])
      expect(outcome).toEqual({ _tag: "Continue", request: { ...request, model: "big", tools: [tool] } })

      let after = 0
      yield* hooks.register({ beforeLLMRequest: () => Hook.hardAbort("stop") }, { name: "killer", priority: 50 })
      yield* hooks.register({ beforeLLMRequest: () => void after++ }, { priority: 10 })
      expect(yield* hooks.beforeLLMRequest({ context, request })).toEqual({ _tag: "HardAbort", reason: "stop", hook: "killer" })
      expect(after).toBe(0)
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("afterLLMResponse: chained modifications; an abort stops", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const response = { content: "hello", toolCalls: [], finishReason: "stop" as const }
      yield* hooks.register({ afterLLMResponse: ({ response }) => Hook.modify({ content: response.content + "!" }) })
      yield* hooks.register({ afterLLMResponse: ({ response }) => Hook.modify({ content: response.content + "?" }) })
      expect(yield* hooks.afterLLMResponse({ context, response })).toEqual({
        _tag: "Continue",
        response: { ...response, content: "hello!?" }
      })
      yield* hooks.register({ afterLLMResponse: () => Hook.abortTurn("bad") }, { name: "critic", priority: 150 })
      expect(yield* hooks.afterLLMResponse({ context, response })).toEqual({ _tag: "AbortTurn", reason: "bad", hook: "critic" })
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("beforeTool: modified arguments are seen by later hooks and returned; the first deny stops", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const seen: Array<unknown> = []
      yield* hooks.register({ beforeTool: () => Hook.modify({ arguments: { cmd: "ls -la" } }) })
      yield* hooks.register({ beforeTool: ({ call }) => void seen.push(call.arguments) })
      expect(yield* hooks.beforeTool({ context, call })).toEqual({ _tag: "Continue", arguments: { cmd: "ls -la" } })
      expect(seen).toEqual([{ cmd: "ls -la" }])

      yield* hooks.register({ beforeTool: () => Hook.deny("no") }, { name: "first", priority: 20 })
      yield* hooks.register({ beforeTool: () => Hook.abortTurn("never reached") }, { priority: 10 })
      expect(yield* hooks.beforeTool({ context, call })).toEqual({ _tag: "Deny", reason: "no", hook: "first" })
      expect(seen).toHaveLength(2)
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("approveTool: any deny denies with its reason, and approvers after it are not asked", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const ran: Array<string> = []
      yield* hooks.register({ approveTool: () => (ran.push("yes"), Hook.approve) })
      expect(yield* hooks.approveTool({ context, call })).toEqual(Hook.approve)
      yield* hooks.register({ approveTool: () => (ran.push("no1"), Hook.deny("first no")) }, { name: "n1" })
      yield* hooks.register({ approveTool: () => (ran.push("no2"), Hook.deny("second no")) }, { name: "n2" })
      expect(yield* hooks.approveTool({ context, call })).toEqual({ _tag: "Deny", reason: "first no", hook: "n1" })
      expect(ran).toEqual(["yes", "yes", "no1"])
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("approveTool: approvers that all abstain deny, unless autoApprove", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      yield* hooks.register({ approveTool: () => undefined })
      expect(yield* hooks.approveTool({ context, call })).toEqual({ _tag: "Deny", reason: "no approver decided", hook: "" })
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("approveTool: abstaining approvers fall back to autoApprove", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      yield* hooks.register({ approveTool: () => undefined })
      expect(yield* hooks.approveTool({ context, call })).toEqual(Hook.approve)
    }).pipe(Effect.scoped, Effect.provide(layerWith({ autoApprove: true }))))

  it.effect("approveTool: no approver denies", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      yield* hooks.register({ beforeTool: () => undefined })
      expect(yield* hooks.approveTool({ context, call })).toEqual({ _tag: "Deny", reason: "no approver registered", hook: "" })
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("approveTool: no approver approves with autoApprove", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      expect(yield* hooks.approveTool({ context, call })).toEqual(Hook.approve)
    }).pipe(Effect.scoped, Effect.provide(layerWith({ autoApprove: true }))))

  it.effect("approveTool: an approver that does not answer denies at exactly 60 s (fail closed)", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const sub = yield* (yield* EventBus).subscribe({ capacity: 64 })
      yield* hooks.register({ approveTool: () => Effect.never }, { name: "human" })
      const pending = yield* Effect.forkChild(hooks.approveTool({ context, call }))
      yield* TestClock.adjust(59_999)
      expect(pending.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(1)
      const decision = yield* Fiber.join(pending)
      expect(decision._tag).toBe("Deny")
      expect(decision._tag === "Deny" && decision.reason).toContain("timed out after 60000ms")
      const [error] = errorsOf(yield* sub.takeAll)
      expect(error).toMatchObject({ stage: "approveTool", hook: "human", turnId: "t1", at: 60_000 })
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("approveTool: a failing approver denies", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      yield* hooks.register({ approveTool: () => Hook.approve })
      yield* hooks.register({ approveTool: () => Effect.fail("prompt closed") }, { name: "tty" })
      const decision = yield* hooks.approveTool({ context, call })
      expect(decision).toMatchObject({ _tag: "Deny", hook: "tty" })
      expect(decision._tag === "Deny" && decision.reason).toContain("prompt closed")
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("afterTool / onToolFailure: patches accumulate, each sees the result so far; `failed` picks the handler", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const seen: Array<string> = []
      yield* hooks.register({ afterTool: ({ result }) => Hook.patch({ content: result.content + " [a]" }) })
      yield* hooks.register({
        afterTool: ({ result }) => (seen.push(Message.textOf(result.content)), Hook.patch({ isError: true })),
        onToolFailure: () => Hook.patch({ content: "failure seen" })
      })
      yield* hooks.register({ afterTool: () => Hook.continue })
      const result = { content: "out", isError: false }
      expect(yield* hooks.afterTool({ context, call, result, failed: false })).toEqual({ content: "out [a]", isError: true })
      expect(seen).toEqual(["out [a]"])
      expect(yield* hooks.afterTool({ context, call, result: { content: "x", isError: true }, failed: true })).toEqual({
        content: "failure seen",
        isError: true
      })
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("beforeStop, beforeCompact, beforeSubTurn, sessionStart: the first stop wins", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const ran: Array<string> = []
      const subTurn = { childTurnId: "c", model: "m", prompt: "p", async: false, critical: false }
      yield* hooks.register({
        beforeStop: ({ stopHookActive }) => (ran.push(`stop:${stopHookActive}`), Hook.continue),
        beforeCompact: () => void ran.push("compact"),
        beforeSubTurn: () => void ran.push("sub"),
        sessionStart: () => void ran.push("session")
      }, { priority: 300 })
      yield* hooks.register({
        beforeStop: () => Hook.block("add tests"),
        beforeCompact: () => Hook.abortTurn("keep it"),
        beforeSubTurn: () => Hook.block("no children"),
        sessionStart: () => Hook.block("closed")
      }, { name: "gate", priority: 200 })
      yield* hooks.register({
        beforeStop: () => void ran.push("late"),
        beforeCompact: () => void ran.push("late"),
        beforeSubTurn: () => void ran.push("late"),
        sessionStart: () => void ran.push("late")
      })
      const finalMessage = Message.assistant("done")
      expect(yield* hooks.beforeStop({ context, finalMessage, stopHookActive: true })).toEqual({
        _tag: "Block",
        reason: "add tests",
        hook: "gate"
      })
      expect(yield* hooks.beforeCompact({ context, reason: "overflow", messages: [] })).toEqual({
        _tag: "AbortTurn",
        reason: "keep it",
        hook: "gate"
      })
      expect(yield* hooks.beforeSubTurn({ context, subTurn })).toEqual({ _tag: "Block", reason: "no children", hook: "gate" })
      expect(yield* hooks.sessionStart({ sessionKey: "s1" })).toEqual({ _tag: "Block", reason: "closed", hook: "gate" })
      expect(ran).toEqual(["stop:true", "compact", "sub", "session"])
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("points that may only stop continue when nobody stops them", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      yield* hooks.register({ beforeStop: () => Hook.continue, sessionStart: () => undefined })
      expect(yield* hooks.beforeStop({ context, finalMessage: Message.assistant("x"), stopHookActive: false })).toEqual(Hook.continue)
      expect(yield* hooks.sessionStart({ sessionKey: "s" })).toEqual(Hook.continue)
      expect(yield* hooks.beforeCompact({ context, reason: "budget", messages: [] })).toEqual(Hook.continue)
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("afterCompact, afterSubTurn, afterTurn, sessionEnd: every hook runs", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const ran: Array<string> = []
      const subTurn = { childTurnId: "c", model: "m", prompt: "p", async: true, critical: false }
      for (const name of ["x", "y"]) {
        yield* hooks.register({
          afterCompact: ({ dropped }) => void ran.push(`${name}:compact:${dropped}`),
          afterSubTurn: () => Effect.sync(() => void ran.push(`${name}:sub`)),
          afterTurn: ({ result }) => void ran.push(`${name}:turn:${result.status}`),
          sessionEnd: () => void ran.push(`${name}:end`)
        })
      }
      yield* hooks.afterCompact({ context, reason: "summary", dropped: 3, remaining: 4 })
      yield* hooks.afterSubTurn({ context, subTurn, result: turnResult })
      yield* hooks.afterTurn({ context, result: turnResult })
      yield* hooks.sessionEnd({ sessionKey: "s1" })
      expect(ran).toEqual([
        "x:compact:3",
        "y:compact:3",
        "x:sub",
        "y:sub",
        "x:turn:completed",
        "y:turn:completed",
        "x:end",
        "y:end"
      ])
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))
})

describe("Hooks runner: points", () => {
  it.effect("handles(point) follows registration; a point with no handler returns its input at once", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      expect(hooks.handles("beforeStop")).toBe(false)
      const finalMessage = Message.assistant("done")
      const gate = (stopHookActive: boolean) => hooks.beforeStop({ context, finalMessage, stopHookActive })
      const input = { context, call }
      const outcome = yield* hooks.run("beforeTool", input)
      expect(outcome._tag === "Continue" && outcome.input).toBe(input)

      const scope = yield* Scope.make()
      yield* hooks.register({ beforeStop: () => Hook.block("more") }, { name: "gate" }).pipe(Scope.provide(scope))
      expect(hooks.handles("beforeStop")).toBe(true)
      expect(hooks.handles("beforeTool")).toBe(false)
      expect(yield* gate(false)).toEqual({ _tag: "Block", reason: "more", hook: "gate" })
      yield* Scope.close(scope, Exit.void)
      expect(hooks.handles("beforeStop")).toBe(false)
      expect(yield* gate(false)).toEqual({ _tag: "Continue" })
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("run(point, input): the input as the handlers left it and who changed it, or the named decision that ended the point", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      expect(yield* hooks.run("beforeTool", { context, call })).toEqual({ _tag: "Continue", input: { context, call } })
      yield* hooks.register({ beforeTool: ({ call }) => Hook.modify({ arguments: { ...(call.arguments as object), n: 1 } }) }, { name: "adds-n" })
      yield* hooks.register({ beforeTool: () => Hook.continue }, { name: "looks" })
      const changed = yield* hooks.run("beforeTool", { context, call })
      expect(changed).toEqual({
        _tag: "Continue",
        input: { context, call: { ...call, arguments: { cmd: "ls", n: 1 } } },
        changedBy: ["adds-n"]
      })
      yield* hooks.register({ beforeTool: () => Hook.deny("no") }, { name: "guard", priority: 1 })
      expect(yield* hooks.run("beforeTool", { context, call })).toEqual({ _tag: "Deny", reason: "no", hook: "guard" })
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.effect("a decision its point does not know (from untyped code) counts as continue", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      let later = 0
      yield* hooks.register({ beforeTurn: (() => Hook.deny("wrong point")) as unknown as NonNullable<Hook.Hook["beforeTurn"]> })
      yield* hooks.register({ afterTool: (() => Hook.block("wrong point")) as unknown as NonNullable<Hook.Hook["afterTool"]> })
      yield* hooks.register({ beforeTurn: () => void later++, afterTool: () => void later++ })
      const opening = yield* hooks.beforeTurn({ context, input: "hi", messages: [], systemPrompt: undefined })
      expect(opening).toEqual({ _tag: "Continue", addMessages: [], systemPrompt: undefined })
      const result = { content: "ok", isError: false }
      expect(yield* hooks.afterTool({ context, call, result, failed: false })).toEqual(result)
      expect(later).toBe(2)
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))
})
