/**
 * A hostile or broken provider: a response of unbounded size, and two tool calls under one id.
 * Neither may cost memory without bound, store anything of an over-cap response, or poison the
 * session for the turns after it.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, Schema, Stream } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import * as NodeFs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import {
  AgentLoop,
  type AgentLoopConfig,
  AgentLoopLive,
  AgentLoopConfig as Config,
  Message,
  OpenAiCompatible,
  type Provider,
  type ProviderTypes,
  Scripted,
  SessionStore,
  SessionStoreMemory,
  SessionStoreSql,
  Tool,
  ToolRegistryLive
} from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { MAX_ERROR_BODY } from "../../src/layers/providers/httpStream.ts"
import { SUMMARY_INSTRUCTION } from "../../src/programs/internal/summarize.ts"
import { echo, ofKind } from "../support/fixtures.ts"
import { start } from "../support/openaiServer.ts"

const CAP = 4096

const loopOn = (
  provider: Layer.Layer<Provider, never, never>,
  store: Layer.Layer<SessionStore, unknown> = SessionStoreMemory.layer(),
  config: Partial<AgentLoopConfig.AgentLoopConfigInput> = {},
  tools: ReadonlyArray<Tool.Tool<any>> = [echo]
) =>
  Layer.build(
    AgentLoopLive.layer({ model: "m", maxResponseBytes: CAP, maxTruncationRetries: 0, ...config }).pipe(
      Layer.provideMerge(Layer.mergeAll(provider, ToolRegistryLive.layer(tools), store)),
      Layer.orDie
    )
  ).pipe(Effect.map((context) => ({ loop: Context.get(context, AgentLoop), store: Context.get(context, SessionStore) })))

const text = (n: number, char = "x") => char.repeat(n)

/** Text in pieces of 64 characters. */
const pieces = (total: string) => Array.from({ length: Math.ceil(total.length / 64) }, (_, i) => total.slice(i * 64, i * 64 + 64))

describe("one model response is bounded", () => {
  it.effect("a response exactly at the cap is kept; one byte more fails typed, stores nothing, and the next turn works", () =>
    Effect.scoped(Effect.gen(function*() {
      const { loop, store } = yield* loopOn(Scripted.layer([
        { content: pieces(text(CAP)) },
        { content: pieces(text(CAP - 1) + "é") },
        { content: "fine" }
      ]))
      const atCap = yield* loop.turn("s", "one")
      expect(atCap.status).toBe("completed")
      expect(atCap.finalMessage?.content).toBe(text(CAP))
      // "é" is two bytes: CAP + 1 in all
      const over = yield* loop.turn("s", "two")
      expect(over.status).toBe("failed")
      expect(over.error).toMatch(/^ResponseTooLarge: The response passed 4096 bytes/)
      const stored = yield* store.load("s")
      expect(stored.map((m) => `${m.role}:${Message.textOf(m.content).length}`)).toEqual(["user:3", `assistant:${CAP}`, "user:3"])
      const next = yield* loop.turn("s", "three")
      expect(next.status).toBe("completed")
      expect(next.finalMessage?.content).toBe("fine")
    })))

  it.effect("text, reasoning and tool-call arguments count together", () =>
    Effect.scoped(Effect.gen(function*() {
      const args = JSON.stringify({ text: text(CAP / 4) })
      const chunks = (extra: number): ReadonlyArray<ProviderTypes.ProviderChunk> => [
        { _tag: "ReasoningDelta", text: text(CAP / 2) },
        { _tag: "TextDelta", text: text(CAP / 2 - args.length + extra) },
        { _tag: "ToolCallDelta", index: 0, id: "c1", name: "echo", argumentsDelta: args },
        { _tag: "Finish", reason: "tool_calls" }
      ]
      const { loop, store } = yield* loopOn(Scripted.layer([{ chunks: chunks(0) }, { content: "done" }, { chunks: chunks(1) }, { content: "after" }]))
      expect((yield* loop.turn("s", "at")).status).toBe("completed")
      const over = yield* loop.turn("s", "over")
      expect(over.error).toMatch(/^ResponseTooLarge/)
      expect((yield* store.load("s")).filter((m) => m.role === "tool")).toHaveLength(1)
      expect((yield* loop.turn("s", "again")).finalMessage?.content).toBe("after")
    })))

  it.effect("provider blocks (signed or encrypted reasoning) count too, as their JSON: at the cap kept, one byte more fails", () =>
    Effect.scoped(Effect.gen(function*() {
      const block = { provider: "anthropic", data: { type: "redacted_thinking", data: text(CAP / 4) } }
      const weight = JSON.stringify(block.data).length
      const chunks = (extra: number): ReadonlyArray<ProviderTypes.ProviderChunk> => [
        { _tag: "ProviderBlock", block },
        { _tag: "ProviderBlock", block },
        { _tag: "TextDelta", text: text(CAP - 2 * weight + extra) },
        { _tag: "Finish", reason: "stop" }
      ]
      const { loop, store } = yield* loopOn(Scripted.layer([{ chunks: chunks(0) }, { chunks: chunks(1) }]))
      const atCap = yield* loop.turn("s", "at")
      expect(atCap.status).toBe("completed")
      expect(atCap.messages[1]).toMatchObject({ providerBlocks: [{ data: block.data }, { data: block.data }] })
      const over = yield* loop.turn("s", "over")
      expect(over.error).toMatch(/^ResponseTooLarge: The response passed 4096 bytes/)
      expect((yield* store.load("s")).map((m) => m.role)).toEqual(["user", "assistant", "user"])
    })))

  it.effect("bytes are counted exactly whatever the characters: multi-byte reasoning, arguments and text at the cap are kept, one byte more fails", () =>
    Effect.scoped(Effect.gen(function*() {
      // 2,000 + 91 + 2,004 + 1 = CAP bytes in 1,000 + 91 + 668 + 1 characters
      const args = JSON.stringify({ text: text(80) })
      const chunks = (last: string): ReadonlyArray<ProviderTypes.ProviderChunk> => [
        { _tag: "ReasoningDelta", text: text(1000, "é") },
        { _tag: "ToolCallDelta", index: 0, id: "c1", name: "echo", argumentsDelta: args },
        { _tag: "TextDelta", text: text(668, "€") },
        { _tag: "TextDelta", text: last },
        { _tag: "Finish", reason: "tool_calls" }
      ]
      const { loop } = yield* loopOn(Scripted.layer([{ chunks: chunks("x") }, { content: "done" }, { chunks: chunks("xx") }]))
      const atCap = yield* loop.turn("s", "at")
      expect(atCap.status).toBe("completed")
      expect(atCap.messages[1]).toMatchObject({ content: text(668, "€") + "x", reasoning: text(1000, "é") })
      const over = yield* loop.turn("s", "over")
      expect(over.error).toMatch(/^ResponseTooLarge: The response passed 4096 bytes/)
    })))

  it.live("a loopback server streaming past the cap: the call stops typed, and the session goes on", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(
        Effect.promise(() => start([{ text: pieces(text(CAP * 64)) }, { text: "recovered" }])),
        (s) => Effect.promise(() => s.close())
      )
      const provider = OpenAiCompatible.layer({ baseUrl: server.url, apiKey: Redacted.make("sk-test-bounds") }).pipe(
        Layer.provide(NodeHttpClient.layerUndici)
      )
      const { loop, store } = yield* loopOn(provider)
      const over = yield* loop.turn("s", "talk a lot")
      expect(over.status).toBe("failed")
      expect(over.error).toMatch(/^ResponseTooLarge/)
      expect((yield* store.load("s")).map((m) => m.role)).toEqual(["user"])
      const next = yield* loop.turn("s", "again")
      expect(next.finalMessage?.content).toBe("recovered")
      expect(server.requests[1]!.body.messages.map((m: { role: string }) => m.role)).toEqual(["user", "user"])
    })))

  it.live("SQLite sessions: an over-cap response stores nothing and later turns run", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => NodeFs.mkdtempSync(NodePath.join(os.tmpdir(), "response-bounds-"))),
        (d) => Effect.sync(() => NodeFs.rmSync(d, { recursive: true, force: true }))
      )
      const sqlite = SessionStoreSql.layerSqlite(NodePath.join(dir, "sessions.db"))
      const { loop, store } = yield* loopOn(Scripted.layer([{ content: pieces(text(CAP + 1)) }, { content: "one" }, { content: "two" }]), sqlite)
      expect((yield* loop.turn("s", "big")).error).toMatch(/^ResponseTooLarge/)
      expect((yield* loop.turn("s", "a")).finalMessage?.content).toBe("one")
      expect((yield* loop.turn("s", "b")).finalMessage?.content).toBe("two")
      expect((yield* store.load("s")).map((m) => m.role)).toEqual(["user", "user", "assistant", "user", "assistant"])
    })).pipe(Effect.provide(NodeServices.layer)))

  it.effect("a summary past the cap is dropped with an Error event; the history is kept whole", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      const result = yield* loop.turn("s", "hello")
      expect(result.status).toBe("completed")
      const error = yield* Testing.settled(Effect.map(events, (all) => ofKind(all, "Error").find((e) => e.stage === "summarize")))
      expect(error.message).toMatch(/^ResponseTooLarge: .*; history kept$/)
      const log = yield* (yield* SessionStore).log("s")
      expect(log.some((entry) => entry.role === "compaction")).toBe(false)
      // the two stored messages and the turn's two, then the turn's outcome record
      expect(log.filter((entry) => entry.role !== "outcome")).toHaveLength(4)
      expect(log.at(-1)).toMatchObject({ role: "outcome", status: "completed" })
    }).pipe(Effect.provide(Testing.layer({
      config: { maxResponseBytes: CAP, contextWindow: 100, summarizeThreshold: 0.5, summarizeKeepMessages: 2 },
      sessions: { s: [Message.user("x".repeat(90)), Message.assistant("y".repeat(90))] },
      script: (request) =>
        request.messages[0]?.content === SUMMARY_INSTRUCTION ? { content: pieces(text(CAP + 1)) } : { content: "z".repeat(40) }
    }))))

  it.effect("the default cap is 8 MiB, and the config rejects a cap that is not a positive integer", () =>
    Effect.gen(function*() {
      expect((yield* Config.make({ model: "m" })).maxResponseBytes).toBe(8 * 1024 * 1024)
      const bad = yield* Effect.flip(Config.make({ model: "m", maxResponseBytes: 0 }))
      expect(bad).toMatchObject({ _tag: "ConfigError", field: "maxResponseBytes" })
    }))
})

describe("error bodies", () => {
  it.effect("an error response whose body never ends is read up to its head, and fails typed", () =>
    Effect.gen(function*() {
      let pulled = 0
      const endless = new ReadableStream<Uint8Array>({
        pull: (controller) => {
          pulled++
          controller.enqueue(new TextEncoder().encode(pulled === 1 ? `{"error":{"message":"overloaded ` : "x".repeat(16 * 1024)))
        }
      })
      const client = HttpClient.make((request) => Effect.succeed(HttpClientResponse.fromWeb(request, new Response(endless, { status: 400 }))))
      const provider = yield* OpenAiCompatible.make({ apiKey: Redacted.make("sk-test-bounds") }).pipe(Effect.provideService(HttpClient.HttpClient, client))
      const error = yield* Effect.flip(Stream.runDrain(provider.stream({ model: "m", messages: [Message.user("hi")], tools: [] })))
      expect(error).toMatchObject({ _tag: "ProviderRejected", status: 400 })
      expect(error.message.startsWith(`{"error":{"message":"overloaded x`)).toBe(true)
      expect(pulled * 16 * 1024).toBeLessThan(MAX_ERROR_BODY + 64 * 1024)
    }))
})

describe("tool-call ids", () => {
  const tagged = Tool.make({
    name: "tag",
    description: "Says its tag",
    parameters: Schema.Struct({ tag: Schema.String }),
    readOnly: true,
    execute: ({ tag }) => Effect.succeed(`tag ${tag}`)
  })

  it.live("two calls under one id from a loopback server are made unique before anything is stored or sent back", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(
        Effect.promise(() =>
          start([
            { toolCalls: [{ id: "dup", name: "tag", arguments: { tag: "a" } }, { id: "dup", name: "tag", arguments: { tag: "b" } }, { id: "dup_2", name: "tag", arguments: { tag: "c" } }] },
            { text: "done" },
            { text: "next" }
          ])
        ),
        (s) => Effect.promise(() => s.close())
      )
      const provider = OpenAiCompatible.layer({ baseUrl: server.url, apiKey: Redacted.make("sk-test-bounds") }).pipe(
        Layer.provide(NodeHttpClient.layerUndici)
      )
      const { loop, store } = yield* loopOn(provider, undefined, {}, [tagged])
      const result = yield* loop.turn("s", "go")
      expect(result.status).toBe("completed")
      const sent = server.requests[1]!.body.messages as ReadonlyArray<any>
      const calls = sent.find((m) => m.role === "assistant").tool_calls.map((c: any) => c.id)
      expect(calls).toEqual(["dup", "dup_3", "dup_2"])
      expect(sent.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m.content])).toEqual([
        ["dup", "tag a"],
        ["dup_3", "tag b"],
        ["dup_2", "tag c"]
      ])
      const stored = yield* store.load("s")
      const results = stored.flatMap((m) => m.role === "tool" ? [[m.toolCallId, Message.textOf(m.content)]] : [])
      expect(results).toEqual([["dup", "tag a"], ["dup_3", "tag b"], ["dup_2", "tag c"]])
      expect((yield* loop.turn("s", "more")).finalMessage?.content).toBe("next")
    })))
})
