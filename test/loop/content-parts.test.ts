import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import * as NodeFs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { SchemaBinary } from "effect/encoding"
import {
  AgentEvent,
  AgentLoop,
  AgentLoopLive,
  Message,
  Replay,
  Scripted,
  SecretsLive,
  SessionLog,
  SessionStore,
  SessionStoreJsonl,
  SessionStoreMemory,
  Tool,
  ToolRegistryLive,
  Turn
} from "effect-agent-loop"
import { acceptsImages } from "../../src/domain/Config.ts"
import { IMAGE_RUNES, runes } from "../../src/domain/Message.ts"
import * as Testing from "effect-agent-loop/testing"
import { openStore, sqlite } from "../support/sqlBackends.ts"

const PNG = Buffer.from("\x89PNG\r\n\x1a\n pixels").toString("base64")
const picture = [Message.text("What is this?"), Message.image("image/png", PNG)] as const

/** base64 of exactly `bytes` decoded bytes. */
const ofBytes = (bytes: number) => Buffer.alloc(bytes, 7).toString("base64")

const screenshot = Tool.make({
  name: "screenshot",
  description: "Takes a screenshot",
  parameters: Schema.Struct({}),
  readOnly: true,
  execute: () => Effect.succeed({ content: [Message.text("the screen:"), Message.image("image/png", PNG)] })
})

describe("content parts in a turn", () => {
  it.effect("a user image reaches the model, the session and TurnStart as parts; textOf gives the text view", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const events = yield* Testing.recordEvents
      const result = yield* loop.turn("s", picture)
      expect(result.status).toBe("completed")
      const [request] = yield* Testing.requests
      expect(request!.messages.at(-1)).toEqual({ role: "user", content: picture })
      expect((yield* (yield* SessionStore).load("s"))[0]).toEqual({ role: "user", content: picture })
      expect((yield* events.ofKind("TurnStart"))[0]!.input).toEqual(picture)
      expect(Message.textOf(picture)).toBe(`What is this?\n[image image/png, ${Buffer.from(PNG, "base64").length} bytes]`)
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ script: [{ content: "a cat" }], config: { model: "gpt-4o" } }))))

  it.effect("images are refused with ContentRejected before anything is stored, sent or announced", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const events = yield* Testing.recordEvents
      const refused = (input: ReadonlyArray<Message.ContentPart>, model?: string) =>
        Effect.flip(loop.turn("s", input, model === undefined ? {} : { model }))
      // at the bound: exactly maxImageBytes passes, one byte more does not
      expect((yield* loop.turn("ok", [Message.image("image/png", ofBytes(1000))])).status).toBe("completed")
      const big = yield* refused([Message.image("image/png", ofBytes(1001))])
      expect(big).toMatchObject({ _tag: "ContentRejected", reason: "too_large" })
      expect(big.message).toContain("1001 bytes is over the limit of 1000 bytes")
      expect(yield* refused([Message.imageUrl(`data:image/png;base64,${ofBytes(1001)}`)])).toMatchObject({ reason: "too_large" })
      expect(yield* refused([Message.image("image/bmp", PNG)])).toMatchObject({ reason: "invalid" })
      expect(yield* refused([Message.image("image/png", "not base64!")])).toMatchObject({ reason: "invalid" })
      expect(yield* refused([Message.imageUrl("file:///etc/passwd")])).toMatchObject({ reason: "invalid" })
      expect(yield* refused([])).toMatchObject({ reason: "empty" })
      const textOnly = yield* refused(picture, "o3-mini")
      expect(textOnly).toMatchObject({ reason: "unsupported", message: `Model "o3-mini" does not accept images` })
      const unknown = yield* refused(picture, "my-local-model")
      expect(unknown).toMatchObject({ reason: "unsupported" })
      expect(unknown.message).toContain("acceptsImages")
      // text-only parts are fine for any model
      expect((yield* loop.turn("t", [Message.text("just text")], { model: "o3-mini" })).status).toBe("completed")
      expect(yield* (yield* SessionStore).load("s")).toEqual([])
      expect((yield* Testing.requests).length).toBe(2)
      expect((yield* events.ofKind("TurnStart")).length).toBe(2)
    }).pipe(
      Effect.scoped,
      Effect.provide(Testing.layer({ script: () => ({ content: "fine" }), config: { model: "gpt-4o", maxImageBytes: 1000 } }))
    ))

  it.effect("acceptsImages overrides the registry: for every model, or by name", () =>
    Effect.gen(function*() {
      expect(acceptsImages({}, "gpt-4o")).toBe(true)
      expect(acceptsImages({}, "gpt-4o-2024-08-06")).toBe(true)
      expect(acceptsImages({}, "o3-mini")).toBe(false)
      expect(acceptsImages({}, "llava")).toBe(false)
      expect(acceptsImages({ acceptsImages: true }, "llava")).toBe(true)
      expect(acceptsImages({ acceptsImages: false }, "gpt-4o")).toBe(false)
      expect(acceptsImages({ acceptsImages: { llava: true, "gpt-4o": false } }, "llava")).toBe(true)
      expect(acceptsImages({ acceptsImages: { llava: true, "gpt-4o": false } }, "gpt-4o")).toBe(false)
      expect(acceptsImages({ acceptsImages: { llava: true } }, "claude-haiku-4-5")).toBe(true)
      const loop = yield* AgentLoop
      expect((yield* loop.turn("s", picture)).status).toBe("completed")
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({ script: [{ content: "seen" }], config: { model: "llava", acceptsImages: { llava: true } } }))))

  it.effect("a tool's image reaches a model that accepts images as an image, one that does not as its placeholder; the session keeps it", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      yield* loop.turn("s", "look", { model: "gpt-4o" })
      yield* loop.turn("s", "again", { model: "o3-mini" })
      const requests = yield* Testing.requests
      const toolResultIn = (index: number) => requests[index]!.messages.find((m) => m.role === "tool")!
      expect(toolResultIn(1).content).toEqual([Message.text("the screen:"), Message.image("image/png", PNG)])
      const placeholder = `the screen:\n[image image/png, ${Buffer.from(PNG, "base64").length} bytes]`
      expect(toolResultIn(2).content).toBe(placeholder)
      const stored = yield* (yield* SessionStore).load("s")
      expect(stored.find((m) => m.role === "tool")!.content).toEqual([Message.text("the screen:"), Message.image("image/png", PNG)])
    }).pipe(
      Effect.scoped,
      Effect.provide(Testing.layer({
        script: [{ toolCalls: [{ name: "screenshot" }] }, { content: "I see the screen" }, { content: "still" }],
        tools: [screenshot],
        config: { model: "gpt-4o" }
      }))
    ))

  it.effect("known secrets are scrubbed from a tool's text parts and image URLs; inline image data is kept", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      yield* loop.turn("s", "look")
      const stored = (yield* (yield* SessionStore).load("s")).find((m) => m.role === "tool")!
      expect(stored.content).toEqual([
        Message.text("token <redacted>"),
        Message.imageUrl("https://example.com/x.png?sig=<redacted>"),
        Message.image("image/png", PNG)
      ])
    }).pipe(
      Effect.scoped,
      Effect.provide(Testing.layer({
        script: [{ toolCalls: [{ name: "leaky" }] }, { content: "ok" }],
        tools: [Tool.make({
          name: "leaky",
          description: "Leaks",
          parameters: Schema.Struct({}),
          readOnly: true,
          execute: () =>
            Effect.succeed({
              content: [
                Message.text("token sk-live-0123456789"),
                Message.imageUrl("https://example.com/x.png?sig=sk-live-0123456789"),
                Message.image("image/png", PNG)
              ]
            })
        })],
        config: { model: "gpt-4o" }
      }).pipe(Layer.provide(SecretsLive.layer(["sk-live-0123456789"]))))
    ))

  it("an image counts IMAGE_RUNES in the budget, not its base64 length", () => {
    const message = Message.user([Message.text("abc"), Message.image("image/png", ofBytes(3_000_000))])
    expect(runes(message)).toBe(3 + IMAGE_RUNES)
    expect(runes(Message.toolResult({ id: "c", name: "t" }, [Message.imageUrl("https://example.com/x.png")]))).toBe(IMAGE_RUNES)
  })

  it("parts survive the cluster's binary encoding (both image kinds share their type tag)", () => {
    const result = {
      turnId: "t",
      sessionKey: "s",
      status: "completed" as const,
      messages: [Message.user([...picture, Message.imageUrl("https://example.com/a.png", "image/png")]), Message.toolResult({ id: "c", name: "t" }, picture)],
      followUps: [],
      iterations: 1,
      usage: { inputTokens: 1, outputTokens: 1 }
    }
    const turnResult = SchemaBinary.toCodec(Turn.TurnResult)
    expect(Schema.decodeUnknownSync(turnResult)(Schema.encodeUnknownSync(turnResult)(result))).toEqual(result)
    const event = AgentEvent.make("TurnStart", { turnId: "t", sessionKey: "s", iteration: 0, depth: 0 }, 5, { input: picture })
    const events = SchemaBinary.toCodec(AgentEvent.AgentEvent)
    expect(Schema.decodeUnknownSync(events)(Schema.encodeUnknownSync(events)(event))).toEqual(event)
  })

  it("old sessions (string content) and new ones (parts) decode; a malformed part does not", () => {
    const decode = Schema.decodeUnknownSync(SessionLog.SessionEntry)
    expect(decode({ role: "user", content: "plain" })).toEqual(Message.user("plain"))
    expect(decode({ role: "tool", toolCallId: "c", toolName: "t", content: [{ type: "image", url: "https://x/y.png" }] }))
      .toEqual(Message.toolResult({ id: "c", name: "t" }, [Message.imageUrl("https://x/y.png")]))
    expect(() => decode({ role: "user", content: [{ type: "image", mediaType: "image/png" }] })).toThrow()
    expect(() => decode({ role: "system", content: [{ type: "text", text: "no parts for system" }] })).toThrow()
  })
})

const turnInto = (store: Layer.Layer<SessionStore, unknown>) =>
  Effect.gen(function*() {
    const loop = yield* AgentLoop
    yield* loop.turn("pic", picture)
  }).pipe(
    Effect.scoped,
    Effect.provide(AgentLoopLive.layer({ model: "claude-sonnet-4-5" }).pipe(
      Layer.provide(Layer.mergeAll(Scripted.layer([{ content: "a cat" }]), ToolRegistryLive.layer([]), store))
    ))
  )

describe("content parts persisted", () => {
  it.live("in JSON Lines and SQLite: a turn with an image reloads with its parts", () =>
    Effect.gen(function*() {
      const dir = NodeFs.mkdtempSync(NodePath.join(os.tmpdir(), "content-parts-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => NodeFs.rmSync(dir, { recursive: true, force: true })))
      const jsonl = Layer.effect(SessionStore, SessionStoreJsonl.make(dir)).pipe(Layer.provide(NodeServices.layer))
      yield* turnInto(jsonl)
      const fromFile = yield* Effect.flatMap(SessionStoreJsonl.make(dir), (store) => store.load("pic")).pipe(Effect.provide(NodeServices.layer))
      expect(fromFile).toEqual([Message.user(picture), Message.assistant("a cat")])
      const db = yield* sqlite.fresh
      yield* turnInto(Layer.effect(SessionStore, openStore(db)).pipe(Layer.orDie))
      const fromSql = yield* Effect.flatMap(openStore(db), (store) => store.load("pic"))
      expect(fromSql).toEqual([Message.user(picture), Message.assistant("a cat")])
      const listed = yield* Effect.flatMap(openStore(db), (store) => store.list)
      expect(listed[0]!.preview).toBe(Message.textOf(picture).replace(/\s+/g, " "))
    }).pipe(Effect.scoped))
})

describe("content parts in cassettes", () => {
  it.live("a recorded user image turn replays; another image is a mismatch", () =>
    Effect.gen(function*() {
      const dir = NodeFs.mkdtempSync(NodePath.join(os.tmpdir(), "content-cassette-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => NodeFs.rmSync(dir, { recursive: true, force: true })))
      const cassette = NodePath.join(dir, "image.jsonl")
      const loopOver = (provider: Layer.Layer<any, any, any>) =>
        AgentLoopLive.layer({ model: "gpt-4o" }).pipe(
          Layer.provide(Layer.mergeAll(provider, ToolRegistryLive.layer([]), SessionStoreMemory.layer())),
          Layer.provide(NodeServices.layer)
        )
      const run = (input: ReadonlyArray<Message.ContentPart>, provider: Layer.Layer<any, any, any>) =>
        Effect.gen(function*() {
          return yield* (yield* AgentLoop).turn("s", input)
        }).pipe(Effect.scoped, Effect.provide(loopOver(provider)))
      const recorded = yield* run(picture, Replay.record(cassette, { fresh: true }).pipe(Layer.provide(Scripted.layer([{ content: "a cat" }]))))
      expect(recorded.finalMessage?.content).toBe("a cat")
      expect(JSON.parse(NodeFs.readFileSync(cassette, "utf8")).request.messages[0]).toEqual({ role: "user", content: picture })
      const replayed = yield* run(picture, Replay.replay(cassette))
      expect(replayed.finalMessage?.content).toBe("a cat")
      const other = yield* run([Message.text("What is this?"), Message.image("image/png", ofBytes(9))], Replay.replay(cassette))
      expect(other.status).toBe("failed")
      expect(other.error).toContain("ReplayMismatch")
    }).pipe(Effect.scoped))
})
