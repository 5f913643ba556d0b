/**
 * Hooks through real turns (DESIGN §6, "Hooks"): what each handler changes reaches the provider,
 * the tools, the events and the stored history; time limits, failures, aborts, the quality gate,
 * priority order and scoped registration.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, Hook, Message, SessionStore, Tool, ToolError } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { ofKind } from "../support/fixtures.ts"

const echoRuns: Array<string> = []
const echo = Tool.make({
  name: "echo",
  description: "Echoes its text",
  parameters: Schema.Struct({ text: Schema.String }),
  readOnly: true,
  execute: ({ text }) => Effect.sync(() => echoRuns.push(text)).pipe(Effect.as(`echo: ${text}`))
})

const failing = Tool.make({
  name: "failing",
  description: "Always fails",
  parameters: Schema.Struct({}),
  execute: () => Effect.fail(new ToolError({ message: "disk is full" }))
})

const echoThenDone = [{ toolCalls: [{ id: "c1", name: "echo", arguments: { text: "hi" } }] }, { content: "done" }]

describe("beforeLLMRequest through a turn", () => {
  it.effect("a switched model reaches the provider for that call only", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook({
        beforeLLMRequest: ({ context }) => context.iteration === 1 ? Hook.modify({ model: "big-model" }) : Hook.continue
      })
      const result = yield* loop.turn("s", "go")
      expect(result.status).toBe("completed")
      expect((yield* Testing.requests).map((r) => r.model)).toEqual(["big-model", "test-model"])
      expect(ofKind(yield* events, "LLMRequest").map((e) => e.model)).toEqual(["big-model", "test-model"])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ tools: [echo], script: echoThenDone }))))

  it.effect("changed messages and tools reach the provider, and are not persisted", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      yield* loop.registerHook({
        beforeLLMRequest: ({ request }) =>
          Hook.modify({ messages: [...request.messages, Message.user("(be terse)")], tools: [] })
      })
      const result = yield* loop.turn("s", "go")
      const [sent] = yield* Testing.requests
      expect(sent!.messages).toEqual([Message.user("go"), Message.user("(be terse)")])
      expect(sent!.tools).toEqual([])
      expect(yield* (yield* SessionStore).load("s")).toEqual([Message.user("go"), Message.assistant("ok")])
      expect(result.messages).toEqual([Message.user("go"), Message.assistant("ok")])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ tools: [echo], script: [{ content: "ok" }] }))))
})

describe("afterLLMResponse through a turn", () => {
  it.effect("rewritten content is the reply: finalMessage, stored history, LLMResponse", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook({ afterLLMResponse: ({ response }) => Hook.modify({ content: response.content.toUpperCase() }) })
      const result = yield* loop.turn("s", "go")
      expect(result.finalMessage?.content).toBe("LOUD")
      expect(yield* (yield* SessionStore).load("s")).toEqual([Message.user("go"), Message.assistant("LOUD")])
      expect(ofKind(yield* events, "LLMResponse").map((e) => e.content)).toEqual(["LOUD"])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ script: [{ content: "loud" }] }))))

  it.effect("rewritten tool calls change what runs; the history pairs the rewritten call with its result", () =>
    Effect.gen(function*() {
      echoRuns.length = 0
      const loop = yield* AgentLoop
      const replaced = { id: "x1", name: "echo", arguments: JSON.stringify({ text: "rewritten" }) }
      yield* loop.registerHook({
        afterLLMResponse: ({ response }) => response.toolCalls.length > 0 ? Hook.modify({ toolCalls: [replaced] }) : Hook.continue
      })
      const result = yield* loop.turn("s", "go")
      expect(echoRuns).toEqual(["rewritten"])
      const second = (yield* Testing.requests)[1]!
      expect(second.messages.slice(1)).toEqual([
        Message.assistant("", [replaced]),
        Message.toolResult(replaced, "echo: rewritten")
      ])
      expect(result.messages[1]).toEqual(Message.assistant("", [replaced]))
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ tools: [echo], script: echoThenDone }))))

  it.effect("removing every tool call turns the response into the final answer", () =>
    Effect.gen(function*() {
      echoRuns.length = 0
      const loop = yield* AgentLoop
      yield* loop.registerHook({ afterLLMResponse: () => Hook.modify({ content: "no tools today", toolCalls: [] }) })
      const result = yield* loop.turn("s", "go")
      expect(echoRuns).toEqual([])
      expect(result.finalMessage).toEqual(Message.assistant("no tools today"))
      expect((yield* Testing.requests)).toHaveLength(1)
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ tools: [echo], script: echoThenDone }))))
})

describe("tool hooks through a turn", () => {
  it.effect("beforeTool's arguments reach the tool; an afterTool patch reaches the model and the history", () =>
    Effect.gen(function*() {
      echoRuns.length = 0
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook({ beforeTool: () => Hook.modify({ arguments: { text: "from hook" } }) })
      yield* loop.registerHook({
        afterTool: ({ result }) => Hook.patch({ content: `${result.content} [checked]` }),
        onToolFailure: () => Hook.patch({ content: "never" })
      })
      const result = yield* loop.turn("s", "go")
      expect(echoRuns).toEqual(["from hook"])
      const seen = (yield* Testing.requests)[1]!.messages.at(-1)
      expect(seen).toEqual(Message.toolResult({ id: "c1", name: "echo" }, "echo: from hook [checked]"))
      expect(result.messages[2]).toEqual(seen)
      expect((yield* (yield* SessionStore).load("s"))[2]).toEqual(seen)
      const all = yield* events
      expect(ofKind(all, "ToolExecStart")[0]!.arguments).toBe(JSON.stringify({ text: "from hook" }))
      expect(ofKind(all, "ToolExecEnd")[0]!.result).toBe("echo: from hook [checked]")
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ tools: [echo], script: echoThenDone }))))

  it.effect("onToolFailure patches a failing tool's result (content and isError)", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      let afterToolCalls = 0
      yield* loop.registerHook({
        afterTool: () => void afterToolCalls++,
        onToolFailure: ({ result }) => Hook.patch({ content: `recovered from: ${result.content}`, isError: false })
      })
      yield* loop.turn("s", "go")
      expect((yield* Testing.requests)[1]!.messages.at(-1)).toEqual(
        Message.toolResult({ id: "f1", name: "failing" }, "recovered from: disk is full")
      )
      expect(afterToolCalls).toBe(0)
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({
      tools: [failing],
      script: [{ toolCalls: [{ id: "f1", name: "failing" }] }, { content: "done" }]
    }))))

  it.effect("a beforeTool deny is the result the model sees, with ToolExecSkipped", () =>
    Effect.gen(function*() {
      echoRuns.length = 0
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook({ beforeTool: () => Hook.deny("no echoing") })
      const result = yield* loop.turn("s", "go")
      const text = "Tool execution denied by hook: no echoing"
      expect(echoRuns).toEqual([])
      expect((yield* Testing.requests)[1]!.messages.at(-1)).toEqual(Message.toolResult({ id: "c1", name: "echo" }, text, true))
      const all = yield* events
      expect(ofKind(all, "ToolExecSkipped").map((e) => [e.toolCallId, e.reason])).toEqual([["c1", text]])
      expect(Testing.kinds(all, ["ToolExecStart", "ToolExecEnd"])).toEqual([])
      expect(result.status).toBe("completed")
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ tools: [echo], script: echoThenDone }))))
})

describe("failing hooks fail open", () => {
  it.effect("a hook over its 5 s limit counts as continue, with an Error event naming it", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      let entered = false
      yield* loop.registerHook({ beforeLLMRequest: () => Effect.sync(() => (entered = true)).pipe(Effect.andThen(Effect.never)) }, {
        name: "sleepy"
      })
      const turn = yield* Effect.forkChild(loop.turn("s", "go"))
      yield* Testing.settled(Effect.sync(() => entered))
      yield* TestClock.adjust(4_999)
      expect(Testing.kinds(yield* events, ["LLMRequest"])).toEqual([])
      yield* TestClock.adjust(1)
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("completed")
      expect(result.finalMessage?.content).toBe("ok")
      const errors = ofKind(yield* events, "Error")
      expect(errors.map((e) => [e.at, e.stage, e.hook, e.message])).toEqual([
        [5_000, "beforeLLMRequest", "sleepy", "beforeLLMRequest timed out after 5000ms"]
      ])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ script: [{ content: "ok" }] }))))

  it.effect("a throwing hook counts as continue, with an Error event naming it", () =>
    Effect.gen(function*() {
      echoRuns.length = 0
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook({
        beforeTool: () => {
          throw new Error("hook bug")
        }
      }, { name: "buggy" })
      const result = yield* loop.turn("s", "go")
      expect(result.status).toBe("completed")
      expect(echoRuns).toEqual(["hi"])
      const errors = ofKind(yield* events, "Error")
      expect(errors.map((e) => [e.stage, e.hook, e.message])).toEqual([["beforeTool", "buggy", "beforeTool died: hook bug"]])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ tools: [echo], script: echoThenDone }))))
})

describe("hooks that stop a turn", () => {
  it.effect("abort from beforeTool: status failed, an Error event naming the hook and stage, the tool never runs", () =>
    Effect.gen(function*() {
      echoRuns.length = 0
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook({ beforeTool: () => Hook.abortTurn("forbidden") }, { name: "police" })
      const result = yield* loop.turn("s", "go")
      expect(result.status).toBe("failed")
      expect(result.error).toBe('Hook "police" aborted the turn at beforeTool: forbidden')
      expect(echoRuns).toEqual([])
      const all = yield* events
      expect(ofKind(all, "Error").map((e) => [e.stage, e.hook])).toEqual([["beforeTool", "police"]])
      expect(ofKind(all, "TurnEnd").map((e) => e.status)).toEqual(["failed"])
      expect((yield* Testing.requests)).toHaveLength(1)
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ tools: [echo], script: echoThenDone }))))

  it.effect("abort from beforeLLMRequest: status failed before any provider call", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook({ beforeLLMRequest: () => Hook.abortTurn("over budget") }, { name: "budget" })
      const result = yield* loop.turn("s", "go")
      expect(result.status).toBe("failed")
      expect(result.error).toContain("over budget")
      expect(ofKind(yield* events, "Error").map((e) => [e.stage, e.hook])).toEqual([["beforeLLMRequest", "budget"]])
      expect(yield* Testing.requests).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ script: [{ content: "never" }] }))))

  it.effect("abort from afterLLMResponse: status failed, the response is not the reply", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      yield* loop.registerHook({ afterLLMResponse: () => Hook.abortTurn("unsafe output") }, { name: "filter" })
      const result = yield* loop.turn("s", "go")
      expect(result.status).toBe("failed")
      expect(result.finalMessage).toBeUndefined()
      expect(result.messages).toEqual([Message.user("go")])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ script: [{ content: "bad words" }] }))))

  it.effect("a beforeTurn block: status blocked, no provider call, nothing stored", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      yield* loop.registerHook({ beforeTurn: () => Hook.block("maintenance") }, { name: "gate" })
      const result = yield* loop.turn("s", "go")
      expect(result.status).toBe("blocked")
      expect(result.error).toContain("maintenance")
      expect(yield* Testing.requests).toEqual([])
      expect(yield* (yield* SessionStore).load("s")).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ script: [{ content: "never" }] }))))

  it.effect("beforeTurn adds messages and replaces the system prompt", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      let seenPrompt: string | undefined
      yield* loop.registerHook({
        beforeTurn: ({ systemPrompt }) => {
          seenPrompt = systemPrompt
          return Hook.modify({ addMessages: [Message.user("Today is Monday.")], systemPrompt: "You are terse." })
        }
      })
      yield* loop.turn("s", "go")
      expect(seenPrompt).toBe("You are helpful.")
      expect((yield* Testing.requests)[0]!.messages).toEqual([
        Message.system("You are terse."),
        Message.user("Today is Monday."),
        Message.user("go")
      ])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ script: [{ content: "ok" }], config: { systemPrompt: "You are helpful." } }))))
})

describe("beforeStop quality gate", () => {
  it.effect("blocks twice then allows: three final-answer calls, feedback as user messages", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const active: Array<boolean> = []
      yield* loop.registerHook({
        beforeStop: ({ stopHookActive }) => {
          active.push(stopHookActive)
          return active.length <= 2 ? Hook.block(`add tests (${active.length})`) : Hook.continue
        }
      })
      const result = yield* loop.turn("s", "go")
      expect(active).toEqual([false, true, true])
      const sent = yield* Testing.requests
      expect(sent).toHaveLength(3)
      expect(sent[2]!.messages).toEqual([
        Message.user("go"),
        Message.assistant("answer 0"),
        Message.user("add tests (1)"),
        Message.assistant("answer 1"),
        Message.user("add tests (2)")
      ])
      expect(result.status).toBe("completed")
      expect(result.finalMessage?.content).toBe("answer 2")
      expect(result.messages).toHaveLength(6)
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ script: (_, i) => ({ content: `answer ${i}` }) }))))

  it.effect("a gate that always blocks stops after 8 blocks: 9 provider calls, status completed", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      let blocks = 0
      yield* loop.registerHook({ beforeStop: () => Hook.block(`again ${++blocks}`) })
      const result = yield* loop.turn("s", "go")
      expect(blocks).toBe(8)
      expect(yield* Testing.requests).toHaveLength(9)
      expect(result.status).toBe("completed")
      expect(result.finalMessage?.content).toBe("answer 8")
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ script: (_, i) => ({ content: `answer ${i}` }) }))))
})

describe("registration", () => {
  it.effect("handlers run by priority, higher first, each seeing the previous one's request", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const log: Array<string> = []
      const tracer = (name: string) =>
        Hook.make({
          beforeLLMRequest: ({ request }) => {
            log.push(`${name}:${request.model}`)
            return Hook.modify({ model: `${request.model}+${name}` })
          },
          beforeTool: () => void log.push(`${name}:tool`)
        })
      yield* loop.registerHook(tracer("default"), { name: "default" })
      yield* loop.registerHook(tracer("low"), { name: "low", priority: 10 })
      yield* loop.registerHook(tracer("high"), { name: "high", priority: 500 })
      yield* loop.turn("s", "go")
      expect(log.slice(0, 6)).toEqual([
        "high:test-model",
        "default:test-model+high",
        "low:test-model+high+default",
        "high:tool",
        "default:tool",
        "low:tool"
      ])
      expect((yield* Testing.requests).map((r) => r.model)).toEqual(["test-model+high+default+low", "test-model+high+default+low"])
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ tools: [echo], script: echoThenDone }))))

  it.effect("after the registering scope closes, the hook no longer runs", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const seen: Array<string> = []
      yield* Effect.scoped(Effect.gen(function*() {
        yield* loop.registerHook({ beforeTurn: ({ input }) => void seen.push(Message.textOf(input)) })
        yield* loop.turn("s", "first")
      }))
      yield* loop.turn("s", "second")
      expect(seen).toEqual(["first"])
      expect(yield* Testing.requests).toHaveLength(2)
    }).pipe(Effect.provide(Testing.layer({ script: () => ({ content: "ok" }) }))))
})
