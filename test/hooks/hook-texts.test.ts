/**
 * A hook (a script from a workspace, a plugin) is outside text: whatever it says enters the turn
 * bounded and without known secrets. A 10 MB deny reason holding an API key reaches the model,
 * the session and the events as at most `Hook.TEXT_LIMIT` characters, key removed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import {
  type AgentEvent,
  AgentLoop,
  EventBus,
  EventBusLive as EventBusLayer,
  Hook,
  Hooks,
  HooksLive as HooksLayer,
  LoopConfigLive,
  Message,
  SecretsLive
} from "effect-agent-loop"
import { limitText } from "../../src/domain/Hook.ts"
import * as Testing from "effect-agent-loop/testing"
import { echo } from "../support/fixtures.ts"
import { points } from "../support/hooksRunner.ts"

const SECRET = "sk-test-9f8e7d6c5b4a"
const HUGE = 10_000_000
/** A text of `HUGE` characters with the secret at its start (kept by any cut) and its end. */
const huge = `${SECRET} ${"x".repeat(HUGE - 2 * SECRET.length - 2)} ${SECRET}`

const runnerLayer = HooksLayer.layer.pipe(
  Layer.provideMerge(EventBusLayer.layer),
  Layer.provideMerge(LoopConfigLive.layer({ model: "m", autoApprove: true })),
  Layer.provide(SecretsLive.layer([SECRET]))
)

const context: Hook.HookContext = { turnId: "t1", sessionKey: "s1", iteration: 1, depth: 0 }
const call: Hook.HookToolCall = { id: "c1", name: "exec", arguments: {}, readOnly: false, requiresApproval: true }

/** Said text: bounded, marked as cut, secret gone; `wrapped` allows for the loop's own few words in front of it. */
const expectSaid = (text: string | undefined, wrapped = false) => {
  expect(text).toBeDefined()
  expect(text!.length).toBeLessThanOrEqual(Hook.TEXT_LIMIT + (wrapped ? 100 : 0))
  expect(text).toMatch(/\n\[hook text cut: \d+ of 9999\d{3} characters removed\]$/)
  expect(text).not.toContain(SECRET)
  expect(text!.includes("<redacted> xxx")).toBe(true)
  if (!wrapped) expect(text!.startsWith("<redacted> xxx")).toBe(true)
}

describe("limitText", () => {
  it("keeps a text of at most the limit, cuts a longer one to the limit with a marker of how much was cut", () => {
    expect(limitText("a".repeat(100), 100)).toBe("a".repeat(100))
    const cut = limitText("a".repeat(1000), 100)
    expect(cut.length).toBeLessThanOrEqual(100)
    const kept = cut.indexOf("\n")
    expect(cut).toBe(`${"a".repeat(kept)}\n[hook text cut: ${1000 - kept} of 1000 characters removed]`)
  })

  it("never keeps half of a surrogate pair", () => {
    const emoji = "😀".repeat(10_000)
    const cut = limitText(emoji, 1000)
    const kept = cut.slice(0, cut.indexOf("\n"))
    expect(kept.length % 2).toBe(0)
    expect(kept).toBe("😀".repeat(kept.length / 2))
  })
})

describe("hook texts at the runner", () => {
  it.effect("reasons, feedback, added messages and patched results are scrubbed and cut, at every point", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      yield* hooks.register({
        sessionStart: () => Hook.block(huge),
        beforeTurn: () => Hook.modify({ addMessages: [Message.user(huge), Message.system(huge)] }),
        beforeLLMRequest: () => Hook.hardAbort(huge),
        afterLLMResponse: () => Hook.abortTurn(huge),
        beforeTool: () => Hook.deny(huge),
        afterTool: () => Hook.patch({ content: huge }),
        beforeStop: () => Hook.block(huge),
        beforeCompact: () => Hook.abortTurn(huge),
        beforeSubTurn: () => Hook.block(huge)
      })
      const reasonOf = (outcome: { readonly _tag: string }) => (outcome as { readonly reason?: string }).reason
      expectSaid(reasonOf(yield* hooks.sessionStart({ sessionKey: "s1" })))
      const opening = yield* hooks.beforeTurn({ context, input: "hi", messages: [], systemPrompt: undefined })
      expect(opening._tag).toBe("Continue")
      if (opening._tag === "Continue") opening.addMessages.forEach((m) => expectSaid(Message.textOf(m.content)))
      expectSaid(reasonOf(yield* hooks.beforeLLMRequest({ context, request: { model: "m", messages: [], tools: [] } })))
      expectSaid(reasonOf(yield* hooks.afterLLMResponse({ context, response: { content: "", toolCalls: [], finishReason: "stop" } })))
      expectSaid(reasonOf(yield* hooks.beforeTool({ context, call })))
      expectSaid((yield* hooks.afterTool({ context, call, result: { content: "ok", isError: false }, failed: false })).content as string)
      expectSaid(reasonOf(yield* hooks.beforeStop({ context, finalMessage: Message.assistant("done"), stopHookActive: false })))
      expectSaid(reasonOf(yield* hooks.beforeCompact({ context, reason: "overflow", messages: [] })))
      const subTurn = { childTurnId: "c", model: "m", prompt: "p", async: false, critical: false }
      expectSaid(reasonOf(yield* hooks.beforeSubTurn({ context, subTurn })))
    }).pipe(Effect.scoped, Effect.provide(runnerLayer)))

  it.effect("an approver's deny reason is scrubbed and cut", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      yield* hooks.register({ approveTool: () => Hook.deny(huge) })
      const verdict = yield* hooks.approveTool({ context, call })
      expectSaid(verdict._tag === "Deny" ? verdict.reason : undefined)
    }).pipe(Effect.scoped, Effect.provide(runnerLayer)))

  it.effect("a system prompt or a response a hook substitutes is scrubbed, not cut", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const long = `${SECRET} ${"y".repeat(2 * Hook.TEXT_LIMIT)}`
      yield* hooks.register({
        beforeTurn: () => Hook.modify({ systemPrompt: long }),
        afterLLMResponse: () => Hook.modify({ content: long })
      })
      const scrubbed = long.replace(SECRET, "<redacted>")
      const opening = yield* hooks.beforeTurn({ context, input: "hi", messages: [], systemPrompt: "p" })
      expect(opening._tag === "Continue" && opening.systemPrompt).toBe(scrubbed)
      const reviewed = yield* hooks.afterLLMResponse({ context, response: { content: "", toolCalls: [], finishReason: "stop" } })
      expect(reviewed._tag === "Continue" && reviewed.response.content).toBe(scrubbed)
    }).pipe(Effect.scoped, Effect.provide(runnerLayer)))

  it.effect("a failing hook's message reaches the Error event scrubbed and cut; a failing approver's denial too", () =>
    Effect.gen(function*() {
      const hooks = points(yield* Hooks)
      const sub = yield* (yield* EventBus).subscribe({ capacity: 16, kinds: ["Error"] })
      yield* hooks.register({
        beforeTool: () => Effect.fail(huge),
        approveTool: () => {
          throw new Error(huge)
        }
      }, { name: "broken" })
      expect(yield* hooks.beforeTool({ context, call })).toEqual({ _tag: "Continue", arguments: {} })
      const verdict = yield* hooks.approveTool({ context, call })
      expect(verdict._tag).toBe("Deny")
      expect((verdict as { readonly reason: string }).reason.length).toBeLessThanOrEqual(Hook.TEXT_LIMIT + 100)
      expect((verdict as { readonly reason: string }).reason).not.toContain(SECRET)
      const errors = (yield* sub.takeAll) as ReadonlyArray<AgentEvent.EventOf<"Error">>
      expect(errors.map((e) => e.stage)).toEqual(["beforeTool", "approveTool"])
      errors.forEach((e) => {
        expect(e.message.length).toBeLessThanOrEqual(Hook.TEXT_LIMIT)
        expect(e.message).not.toContain(SECRET)
      })
    }).pipe(Effect.scoped, Effect.provide(runnerLayer)))
})

describe("hook texts through a turn", () => {
  it.effect("a 10 MB deny reason and stop feedback reach the model, the session and the events bounded and scrubbed", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const events = (yield* Testing.recordEvents).all
      let blocked = false
      yield* loop.registerHook({
        beforeTool: () => Hook.deny(huge),
        beforeStop: () => (blocked ? Hook.continue : ((blocked = true), Hook.block(huge)))
      })
      const result = yield* loop.turn("s1", "go")
      expect(result.status).toBe("completed")
      const toolResult = result.messages.find((m) => m.role === "tool")
      expectSaid(toolResult && Message.textOf(toolResult.content), true)
      const feedback = result.messages.filter((m) => m.role === "user").at(-1)
      expectSaid(feedback && Message.textOf(feedback.content))
      const all: ReadonlyArray<AgentEvent.AgentEvent> = yield* events
      const text = JSON.stringify(all) + JSON.stringify(result)
      expect(text).not.toContain(SECRET)
      expect(text.length).toBeLessThan(20 * Hook.TEXT_LIMIT)
    }).pipe(
      Effect.scoped,
      Effect.provide(Testing.layer({
        script: [{ toolCalls: [{ name: "echo", arguments: { text: "hi" } }] }, { content: "first" }, { content: "second" }],
        tools: [echo]
      })),
      Effect.provide(SecretsLive.layer([SECRET]))
    ))
})
