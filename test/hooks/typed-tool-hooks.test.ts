/**
 * Hooks on one tool with its decoded arguments' type (`Hook.forTool`), arguments rewritten by a
 * hook into ones the tool's Schema rejects (the hook is named, the model is not blamed), and
 * `ToolExecStart` showing the arguments that ran beside the model's own.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { AgentLoop, Hook, Message, Tool, ToolError } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { ofKind } from "../support/fixtures.ts"

const runs: Array<unknown> = []

const echo = Tool.make({
  name: "echo",
  description: "Echoes its text",
  parameters: Schema.Struct({ text: Schema.String }),
  readOnly: true,
  execute: ({ text }) => Effect.sync(() => runs.push(text)).pipe(Effect.as(`echo: ${text}`))
})

/** A tool whose decoded arguments differ from what the model sends: `count` arrives as a string. */
const repeat = Tool.make({
  name: "repeat",
  description: "Repeats a word",
  parameters: Schema.Struct({ word: Schema.String, count: Schema.NumberFromString.check(Schema.isInt()) }),
  readOnly: true,
  execute: ({ count, word }) => Effect.sync(() => runs.push(count)).pipe(Effect.as(Array(count).fill(word).join(" ")))
})

const script = (calls: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }>) => [
  { toolCalls: calls.map((call, i) => ({ id: `c${i + 1}`, ...call })) },
  { content: "done" }
]

const resultOf = (messages: ReadonlyArray<Message.Message>, id: string) =>
  messages.find((m): m is Message.ToolResultMessage => m.role === "tool" && m.toolCallId === id)

describe("Hook.forTool", () => {
  it.effect("its handlers see the tool's decoded arguments, typed, and only that tool's calls", () =>
    Effect.gen(function*() {
      runs.length = 0
      const seen: Array<number> = []
      const loop = yield* AgentLoop
      yield* loop.registerHook(Hook.forTool(repeat, {
        // `args.count` is a number here (the model sent "2"): the Schema decoded it
        beforeTool: ({ args }) => {
          seen.push(args.count)
          return Hook.modify({ arguments: { ...args, count: args.count + 1 } })
        },
        afterTool: ({ args, result }) => Hook.patch({ content: `${result.content} (${args.count} times)` })
      }))
      const result = yield* loop.turn("s", "go")
      expect(seen).toEqual([2])
      // the rewrite, in the decoded type, was encoded back for the tool's Schema: "3" → 3
      expect(runs).toEqual([3, "hi"])
      expect(resultOf(result.messages, "c1")?.content).toBe("ab ab ab (3 times)")
      expect(resultOf(result.messages, "c2")?.content).toBe("echo: hi")
    }).pipe(
      Effect.scoped,
      Effect.provide(Testing.layer({
        tools: [repeat, echo],
        script: script([{ name: "repeat", arguments: { word: "ab", count: "2" } }, { name: "echo", arguments: { text: "hi" } }])
      }))
    ))

  it.effect("arguments the tool's Schema rejects never reach a typed handler: the model is told, as without the hook", () =>
    Effect.gen(function*() {
      let called = 0
      const loop = yield* AgentLoop
      yield* loop.registerHook(Hook.forTool(echo, { beforeTool: () => void called++ }))
      const result = yield* loop.turn("s", "go")
      expect(called).toBe(0)
      expect(resultOf(result.messages, "c1")?.content).toMatch(/^Invalid arguments for tool "echo": text: Expected string/)
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ tools: [echo], script: script([{ name: "echo", arguments: { text: 1 } }]) }))))

  it.effect("approveTool and onToolFailure get the typed arguments too", () =>
    Effect.gen(function*() {
      const asked: Array<string> = []
      const loop = yield* AgentLoop
      yield* loop.registerHook(Hook.forTool(guarded, {
        approveTool: ({ args }) => (asked.push(args.path), args.path.startsWith("/tmp/") ? Hook.approve : Hook.deny("outside /tmp")),
        onToolFailure: ({ args, result }) => Hook.patch({ content: `${result.content} [${args.path}]` })
      }))
      const result = yield* loop.turn("s", "go")
      expect(asked).toEqual(["/tmp/a", "/etc/b"])
      expect(resultOf(result.messages, "c1")?.content).toBe("cannot remove /tmp/a [/tmp/a]")
      expect(resultOf(result.messages, "c2")?.content).toBe("Tool execution denied by approval: outside /tmp")
    }).pipe(
      Effect.scoped,
      Effect.provide(Testing.layer({
        tools: [guarded],
        script: script([{ name: "remove", arguments: { path: "/tmp/a" } }, { name: "remove", arguments: { path: "/etc/b" } }])
      }))
    ))
})

const guarded = Tool.make({
  name: "remove",
  description: "Removes a file",
  parameters: Schema.Struct({ path: Schema.String }),
  requiresApproval: true,
  execute: ({ path }) => Effect.fail(new ToolError({ message: `cannot remove ${path}` }))
})

describe("arguments a hook rewrote into ones the tool rejects", () => {
  it.effect("the call fails naming the hook, not the model; an Error event tells the hook's author", () =>
    Effect.gen(function*() {
      runs.length = 0
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook({ beforeTool: () => Hook.modify({ arguments: { text: 42 } }) }, { name: "rewriter" })
      const result = yield* loop.turn("s", "go")
      expect(runs).toEqual([])
      const content = resultOf(result.messages, "c1")?.content as string
      expect(content).toContain(`hook "rewriter"`)
      expect(content).toContain("text: Expected string")
      expect(content).not.toMatch(/^Invalid arguments for tool/)
      const all = yield* events
      const errors = ofKind(all, "Error").filter((e) => e.stage === "beforeTool")
      expect(errors).toHaveLength(1)
      expect(errors[0]!.hook).toBe("rewriter")
      expect(errors[0]!.message).toContain(`tool "echo"`)
      expect(errors[0]!.message).toContain("text: Expected string")
      // what was about to run is shown, and the model's own arguments beside it
      const [start] = ofKind(all, "ToolExecStart")
      expect(start!.arguments).toBe(JSON.stringify({ text: 42 }))
      expect(start!.originalArguments).toBe(JSON.stringify({ text: "hi" }))
      expect(ofKind(all, "ToolExecEnd")[0]!.isError).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ tools: [echo], script: script([{ name: "echo", arguments: { text: "hi" } }]) }))))

  it.effect("a typed rewrite the Schema rejects (an Int check) is reported the same way", () =>
    Effect.gen(function*() {
      runs.length = 0
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook(Hook.forTool(repeat, { beforeTool: ({ args }) => Hook.modify({ arguments: { ...args, count: 1.5 } }) }), {
        name: "halver"
      })
      const result = yield* loop.turn("s", "go")
      expect(runs).toEqual([])
      expect(resultOf(result.messages, "c1")?.content).toContain(`hook "halver"`)
      expect(ofKind(yield* events, "Error").map((e) => e.hook)).toEqual(["halver"])
    }).pipe(
      Effect.scoped,
      Effect.provide(Testing.layer({ tools: [repeat], script: script([{ name: "repeat", arguments: { word: "a", count: "2" } }]) }))
    ))
})

describe("ToolExecStart", () => {
  it.effect("shows the arguments that ran, and the model's own when a hook changed them", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      yield* loop.registerHook({
        beforeTool: ({ call }) => call.id === "c1" ? Hook.modify({ arguments: { text: "changed" } }) : Hook.continue
      })
      yield* loop.turn("s", "go")
      const starts = ofKind(yield* events, "ToolExecStart")
      expect(starts.map((e) => [e.arguments, e.originalArguments])).toEqual([
        [JSON.stringify({ text: "changed" }), JSON.stringify({ text: "a" })],
        [JSON.stringify({ text: "b" }), undefined]
      ])
      expect("originalArguments" in starts[1]!).toBe(false)
    }).pipe(
      Effect.scoped,
      Effect.provide(Testing.layer({
        tools: [echo],
        script: script([{ name: "echo", arguments: { text: "a" } }, { name: "echo", arguments: { text: "b" } }])
      }))
    ))
})
