/**
 * Stored history is never destroyed by recovery (regressions): context overflow (a proxy's 413
 * taken for one included) and summaries append a compaction record instead of rewriting the
 * session; another store instance's turn on the same JSON Lines session survives a compaction; a
 * crash in the middle of a turn's append still gives the next turn a well-formed request; a turn's
 * records are one write; session files and directories are private.
 */
import { describe, expect, it } from "@effect/vitest"
import { NodeServices } from "@effect/platform-node"
import { Context, Deferred, Effect, FileSystem, Fiber, Layer, Schema } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import {
  AgentLoop,
  type AgentLoopConfig,
  AgentLoopLive,
  ContextLengthExceeded,
  Hook,
  Message,
  Scripted,
  SessionLog,
  SessionStore,
  SessionStoreJsonl,
  ToolRegistryLive
} from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { fileName } from "../../src/layers/internal/sessionStoreJsonlNames.ts"
import { SUMMARY_INSTRUCTION } from "../../src/programs/internal/summarize.ts"
import { echo, longHistory } from "../support/fixtures.ts"
import { withTempDir } from "../support/toolWorkspace.ts"

const overflow = new ContextLengthExceeded({ message: "413 Request Entity Too Large" })

/** A loop of its own (own store instance, own provider) over the JSON Lines directory `dir`. */
const loopOver = (dir: string, script: Scripted.Script, config: Partial<AgentLoopConfig.AgentLoopConfigInput> = {}) =>
  AgentLoopLive.layer({ model: "test-model", ...config }).pipe(
    Layer.provideMerge(Layer.mergeAll(
      Scripted.layer(script),
      ToolRegistryLive.layer([echo]),
      SessionStoreJsonl.layer(dir).pipe(Layer.provide(NodeServices.layer))
    )),
    Layer.orDie
  )

/** The loop, store and provider log of a loop built in the current scope. */
const build = (layer: ReturnType<typeof loopOver>) =>
  Effect.map(Layer.build(layer), (context) => ({
    loop: Context.get(context, AgentLoop),
    store: Context.get(context, SessionStore),
    requests: Context.get(context, Scripted.ScriptedLog).requests
  }))

const withDir = <A, E, R>(f: (dir: string) => Effect.Effect<A, E, R>) => withTempDir("history-integrity-", f)

/** A fresh store instance reading `dir` from scratch. */
const freshStore = (dir: string) => SessionStoreJsonl.make(dir).pipe(Effect.provide(NodeServices.layer))

const seed = (dir: string, key: string, entries: ReadonlyArray<SessionLog.SessionEntry>) =>
  Effect.flatMap(freshStore(dir), (store) => store.append(key, entries))

/** A hook that, at its first `beforeLLMRequest` (or the `at`-th), says so and waits for `go`. */
const pauseAtRequest = (at = 1) =>
  Effect.gen(function*() {
    const reached = yield* Deferred.make<void>()
    const go = yield* Deferred.make<void>()
    let calls = 0
    const hook = Hook.make({
      beforeLLMRequest: () => ++calls === at ? Effect.andThen(Deferred.succeed(reached, undefined), Deferred.await(go)) : undefined
    })
    return { hook, reached: Deferred.await(reached), go: Deferred.succeed(go, undefined) }
  })

/** Every tool call is followed by exactly its results, and every result follows its call. */
const expectWellFormed = (messages: ReadonlyArray<Message.Message>) => {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!
    if (message.role === "assistant" && (message.toolCalls?.length ?? 0) > 0) {
      const ids = message.toolCalls!.map((c) => c.id)
      expect(messages.slice(i + 1, i + 1 + ids.length).map((m) => m.role === "tool" ? m.toolCallId : m.role)).toEqual(ids)
    }
    if (message.role === "tool") {
      let j = i - 1
      while (j >= 0 && messages[j]!.role === "tool") j--
      const owner = messages[j]
      expect(owner?.role === "assistant" && owner.toolCalls?.some((c) => c.id === message.toolCallId)).toBe(true)
    }
  }
}

const messagesOf = (log: ReadonlyArray<SessionLog.SessionEntry>) => log.filter(SessionLog.isMessage)

/** A log without its turn-outcome records (tested in `log-records.test.ts`). */
const recorded = (log: ReadonlyArray<SessionLog.SessionEntry>) => log.filter((e) => !SessionLog.isOutcome(e))

describe("recovery never deletes stored history", () => {
  it.effect("an overflow (a 413 included) compresses the context; every earlier message stays in the log", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const result = yield* (yield* AgentLoop).turn("s", "new question")
      expect(result.status).toBe("completed")
      const log = yield* store.log("s")
      expect(messagesOf(log)).toEqual([...longHistory, Message.user("new question"), Message.assistant("fits now")])
      expect(log.filter(SessionLog.isCompaction)).toEqual([{ role: "compaction", reason: "overflow", cut: 8 }])
      expect(yield* store.load("s")).toEqual([
        Message.system("Earlier summary"),
        Message.user("u3"),
        Message.assistant("a3"),
        Message.user("new question"),
        Message.assistant("fits now")
      ])
    }).pipe(Effect.provide(Testing.layer({ sessions: { s: longHistory }, script: [{ error: overflow }, { content: "fits now" }] }))))

  it.effect("several compressions in one turn (budget, then overflow twice) make one record; the view is the turn's final context", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const result = yield* (yield* AgentLoop).turn("s", "q")
      expect(result.status).toBe("completed")
      const sent = yield* (yield* Scripted.ScriptedLog).requests
      expect(sent.map((r) => r.messages.length)).toEqual([9, 4, 2])
      const log = yield* store.log("s")
      expect(messagesOf(log)).toEqual([...longHistory, ...result.messages])
      expect(log.filter(SessionLog.isCompaction)).toHaveLength(1)
      expect(recorded(log).at(-1)).toEqual({ role: "compaction", reason: "overflow", cut: 10 })
      expect(yield* store.load("s")).toEqual([...sent[2]!.messages, Message.assistant("done")])
      expect(sent[2]!.messages).toEqual([Message.system("Earlier summary"), Message.user("q")])
    }).pipe(Effect.provide(Testing.layer({
      config: { maxContextRunes: 40 }, // longHistory and "q" are 44 runes: u1 and a1 go before the first call
      sessions: { s: longHistory },
      script: [{ error: overflow }, { error: overflow }, { content: "done" }]
    }))))

  it.effect("overflow until the turn fails: the log still holds everything, and the failed turn's input", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const result = yield* (yield* AgentLoop).turn("s", "new question")
      expect(result.status).toBe("failed")
      expect(messagesOf(yield* store.log("s"))).toEqual([...longHistory, Message.user("new question")])
      expect(yield* store.load("s")).toEqual([Message.system("Earlier summary"), Message.user("new question")])
    }).pipe(Effect.provide(Testing.layer({ sessions: { s: longHistory }, script: () => ({ error: overflow }) }))))

  it.effect("a summary appends one record: the older messages stay in the log, the view starts with the summary", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const events = (yield* Testing.recordEvents).all
      yield* (yield* AgentLoop).turn("s", "hello")
      yield* Testing.settled(Effect.map(events, (all) => all.some((e) => e._tag === "SessionSummarize")))
      const seeded = [Message.user("x".repeat(90)), Message.assistant("y".repeat(90))]
      const log = yield* store.log("s")
      expect(recorded(log)).toEqual([
        ...seeded,
        Message.user("hello"),
        Message.assistant("a".repeat(30)),
        { role: "compaction", reason: "summary", cut: 2, summary: "They talked." }
      ])
      expect(yield* store.load("s")).toEqual([
        Message.system(`${SessionLog.SUMMARY_PREFIX}\nThey talked.`),
        Message.user("hello"),
        Message.assistant("a".repeat(30))
      ])
    }).pipe(Effect.provide(Testing.layer({
      config: { contextWindow: 100, summarizeThreshold: 0.5, summarizeKeepMessages: 2 },
      sessions: { s: [Message.user("x".repeat(90)), Message.assistant("y".repeat(90))] },
      script: (request) => request.messages[0]?.content === SUMMARY_INSTRUCTION ? { content: "They talked." } : { content: "a".repeat(30) }
    }))))
})

describe("two store instances on one JSON Lines session", () => {
  it.effect("a turn another instance completed while this one overflowed stays in the log and in the view", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        yield* seed(dir, "s", longHistory)
        const a = yield* build(loopOver(dir, [{ error: overflow }, { content: "A fits now" }]))
        const b = yield* build(loopOver(dir, [{ content: "B answer" }]))
        const pause = yield* pauseAtRequest()
        yield* a.loop.registerHook(pause.hook)
        const turnA = yield* Effect.forkChild(a.loop.turn("s", "A question"))
        yield* pause.reached
        expect((yield* b.loop.turn("s", "B question")).status).toBe("completed")
        yield* pause.go
        expect((yield* Fiber.join(turnA)).status).toBe("completed")

        const turnB = [Message.user("B question"), Message.assistant("B answer")]
        const turnOfA = [Message.user("A question"), Message.assistant("A fits now")]
        const reader = yield* freshStore(dir)
        expect(recorded(yield* reader.log("s"))).toEqual([...longHistory, ...turnB, ...turnOfA, { role: "compaction", reason: "overflow", cut: 8 }])
        const view = yield* reader.load("s")
        expect(view).toEqual([Message.system("Earlier summary"), Message.user("u3"), Message.assistant("a3"), ...turnB, ...turnOfA])
        expect(yield* a.store.load("s")).toEqual(view)
        expect(yield* b.store.load("s")).toEqual(view)
      })
    ).pipe(Effect.scoped))

  it.effect("when the compression dropped the turn's own messages, the cut still stops before the other instance's turn", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        yield* seed(dir, "s", [Message.system("Earlier summary"), Message.user("old")])
        const a = yield* build(loopOver(dir, [{ content: "first" }, { error: overflow }, { content: "second" }]))
        const b = yield* build(loopOver(dir, [{ content: "B answer" }]))
        let blocked = false
        yield* a.loop.registerHook({ beforeStop: () => blocked ? Hook.continue : ((blocked = true), Hook.block("say more")) })
        const pause = yield* pauseAtRequest(2)
        yield* a.loop.registerHook(pause.hook)
        const turnA = yield* Effect.forkChild(a.loop.turn("s", "question"))
        yield* pause.reached
        yield* b.loop.turn("s", "B question")
        yield* pause.go
        const resultA = yield* Fiber.join(turnA)
        expect(resultA.status).toBe("completed")
        // in A's own context old, question and first went (cut 4 of history + produced) ...
        expect((yield* a.requests)[2]!.messages).toEqual([Message.system("Earlier summary"), Message.user("say more")])
        const turnB = [Message.user("B question"), Message.assistant("B answer")]
        const log = yield* (yield* freshStore(dir)).log("s")
        // ... but on disk the cut may not pass B's turn, appended meanwhile: it stops at A's base
        expect(recorded(log)).toEqual([
          Message.system("Earlier summary"),
          Message.user("old"),
          ...turnB,
          ...resultA.messages,
          { role: "compaction", reason: "overflow", cut: 2 }
        ])
        const view = SessionLog.view(log)
        expect(view).toEqual([Message.system("Earlier summary"), ...turnB, ...resultA.messages])
        expectWellFormed(view)
      })
    ).pipe(Effect.scoped))

  it.effect("when the other instance compacted too, this instance's record is dropped: its messages stay, the view is well formed", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        yield* seed(dir, "s", longHistory)
        const a = yield* build(loopOver(dir, [{ error: overflow }, { content: "A fits now" }]))
        const b = yield* build(loopOver(dir, [{ error: overflow }, { content: "B fits now" }]))
        const pause = yield* pauseAtRequest()
        yield* a.loop.registerHook(pause.hook)
        const turnA = yield* Effect.forkChild(a.loop.turn("s", "A question"))
        yield* pause.reached
        yield* b.loop.turn("s", "B question")
        yield* pause.go
        yield* Fiber.join(turnA)
        const log = yield* (yield* freshStore(dir)).log("s")
        expect(messagesOf(log)).toEqual([
          ...longHistory,
          Message.user("B question"),
          Message.assistant("B fits now"),
          Message.user("A question"),
          Message.assistant("A fits now")
        ])
        expect(log.filter(SessionLog.isCompaction)).toEqual([{ role: "compaction", reason: "overflow", cut: 8 }])
        const view = SessionLog.view(log)
        expect(view).toEqual([
          Message.system("Earlier summary"),
          Message.user("u3"),
          Message.assistant("a3"),
          Message.user("B question"),
          Message.assistant("B fits now"),
          Message.user("A question"),
          Message.assistant("A fits now")
        ])
        expectWellFormed(view)
      })
    ).pipe(Effect.scoped))

  it.effect("a summary written while the other instance completed a turn keeps that turn in the view", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const seeded = [Message.user("x".repeat(90)), Message.assistant("y".repeat(90))]
        yield* seed(dir, "s", seeded)
        const summarising = { contextWindow: 100, summarizeThreshold: 0.5, summarizeKeepMessages: 2 }
        const a = yield* build(loopOver(dir, (request) =>
          request.messages[0]?.content === SUMMARY_INSTRUCTION ? { content: "They talked." } : { content: "a".repeat(30) }, summarising))
        const b = yield* build(loopOver(dir, [{ content: "B answer" }]))
        const reached = yield* Deferred.make<void>()
        const go = yield* Deferred.make<void>()
        const summarized = yield* Deferred.make<void>()
        // the summary has loaded the session when beforeCompact(summary) runs
        yield* a.loop.registerHook({
          beforeCompact: ({ reason }) => reason === "summary" ? Effect.andThen(Deferred.succeed(reached, undefined), Deferred.await(go)) : undefined,
          afterCompact: ({ reason }) => reason === "summary" ? Deferred.succeed(summarized, undefined) : undefined
        })
        yield* a.loop.turn("s", "hello")
        yield* Deferred.await(reached)
        yield* b.loop.turn("s", "B question")
        yield* Deferred.succeed(go, undefined)
        yield* Deferred.await(summarized)
        const reader = yield* freshStore(dir)
        const turnB = [Message.user("B question"), Message.assistant("B answer")]
        expect(recorded(yield* reader.log("s"))).toEqual([
          ...seeded,
          Message.user("hello"),
          Message.assistant("a".repeat(30)),
          ...turnB,
          { role: "compaction", reason: "summary", cut: 2, summary: "They talked." }
        ])
        expect(yield* reader.load("s")).toEqual([
          Message.system(`${SessionLog.SUMMARY_PREFIX}\nThey talked.`),
          Message.user("hello"),
          Message.assistant("a".repeat(30)),
          ...turnB
        ])
      })
    ).pipe(Effect.scoped))
})

describe("a crash in the middle of a turn's append", () => {
  it.effect("the assistant line with tool calls, then the crash: the next turn's request answers every call", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const call = (id: string) => ({ id, name: "echo", arguments: "{\"text\":\"x\"}" })
        const header = JSON.stringify({ sessionKey: "s" })
        const calling = Message.assistant("", [call("c1"), call("c2")])
        const torn = JSON.stringify(Message.toolResult(call("c1"), "echo: x")).slice(0, 25)
        NodeFs.writeFileSync(
          NodePath.join(dir, fileName("s")),
          [header, JSON.stringify(Message.user("before")), JSON.stringify(calling), torn].join("\n")
        )
        const { loop, requests, store } = yield* build(loopOver(dir, [{ content: "recovered" }]))
        expect((yield* loop.turn("s", "again")).status).toBe("completed")
        const sent = (yield* requests)[0]!.messages
        expect(sent).toEqual([
          Message.user("before"),
          calling,
          Message.toolResult(call("c1"), SessionLog.INTERRUPTED_RESULT, true),
          Message.toolResult(call("c2"), SessionLog.INTERRUPTED_RESULT, true),
          Message.user("again")
        ])
        expectWellFormed(sent)
        // the torn piece is gone from the file, nothing whole is, and the repair is not stored: it is the view's
        expect(recorded(yield* store.log("s"))).toEqual([Message.user("before"), calling, Message.user("again"), Message.assistant("recovered")])
        expect(yield* (yield* freshStore(dir)).load("s")).toEqual([...sent, Message.assistant("recovered")])
      })
    ).pipe(Effect.scoped))

  it.effect("a turn's messages and its compaction record are one write", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        yield* seed(dir, "s", longHistory)
        const writes: Array<string> = []
        const fs = yield* FileSystem.FileSystem
        const recording = (file: FileSystem.File): FileSystem.File =>
          new Proxy(file, {
            get: (target, property) => {
              if (property === "writeAll") {
                return (bytes: Uint8Array) => Effect.andThen(Effect.sync(() => writes.push(new TextDecoder().decode(bytes))), target.writeAll(bytes))
              }
              const value = Reflect.get(target, property, target)
              return typeof value === "function" ? value.bind(target) : value
            }
          })
        // the session's log file only (its event journal, beside it, is written too)
        const observed = FileSystem.FileSystem.of({
          ...fs,
          open: (path, options) => path.endsWith(".events.jsonl") ? fs.open(path, options) : Effect.map(fs.open(path, options), recording)
        })
        const layer = AgentLoopLive.layer({ model: "test-model" }).pipe(
          Layer.provideMerge(Layer.mergeAll(
            Scripted.layer([{ error: overflow }, { toolCalls: [{ id: "c9", name: "echo", arguments: { text: "y" } }] }, { content: "done" }]),
            ToolRegistryLive.layer([echo]),
            SessionStoreJsonl.layer(dir).pipe(Layer.provide(Layer.succeed(FileSystem.FileSystem, observed)), Layer.provide(NodeServices.layer))
          )),
          Layer.orDie
        )
        const result = yield* Effect.gen(function*() {
          return yield* (yield* AgentLoop).turn("s", "go")
        }).pipe(Effect.provide(layer))
        expect(result.messages).toHaveLength(4)
        expect(writes).toHaveLength(1)
        const lines = writes[0]!.trimEnd().split("\n").map((line) => Schema.decodeUnknownSync(Schema.fromJsonString(SessionLog.SessionEntry))(line))
        expect(recorded(lines)).toEqual([...result.messages, { role: "compaction", reason: "overflow", cut: 8 }])
      })
    ).pipe(Effect.provide(NodeServices.layer)))
})

describe("session files are private", () => {
  const mode = (path: string) => NodeFs.statSync(path).mode & 0o777

  it.effect("a new directory is 0700 and a new session file 0600; existing open ones are tightened", () =>
    withDir((root) =>
      Effect.gen(function*() {
        const dir = NodePath.join(root, "sessions")
        const store = yield* freshStore(dir)
        expect(mode(dir)).toBe(0o700)
        yield* store.append("s", [Message.user("secret plans")])
        expect(mode(NodePath.join(dir, fileName("s")))).toBe(0o600)

        NodeFs.chmodSync(dir, 0o755)
        NodeFs.writeFileSync(NodePath.join(dir, fileName("old")), `${JSON.stringify({ sessionKey: "old" })}\n`, { mode: 0o644 })
        NodeFs.chmodSync(NodePath.join(dir, fileName("old")), 0o644)
        const again = yield* freshStore(dir)
        expect(mode(dir)).toBe(0o700)
        yield* again.append("old", [Message.user("more")])
        expect(mode(NodePath.join(dir, fileName("old")))).toBe(0o600)
        expect(yield* again.load("old")).toEqual([Message.user("more")])
      })
    ))
})
