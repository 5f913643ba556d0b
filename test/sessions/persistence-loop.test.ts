/**
 * Persistence through the loop (DESIGN §6 step 7, §8) over the JSON Lines store in a real
 * temporary directory: turns round-trip through disk into a fresh loop, a hard abort leaves the
 * file byte for byte as it was, a failed turn keeps what it completed plus its partial text, and
 * a compressed history is appended to (a compaction record after the turn's messages), never rewritten.
 */
import { describe, expect, it } from "@effect/vitest"
import { NodeServices } from "@effect/platform-node"
import { Deferred, Effect, Fiber, Layer, Schema } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import {
  AgentLoop,
  type AgentLoopConfig,
  AgentLoopLive,
  ContextLengthExceeded,
  type CurrentTurn,
  Message,
  ProviderRejected,
  Scripted,
  SessionStore,
  SessionStoreError,
  SessionStoreJsonl,
  Tool,
  ToolRegistryLive
} from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { fileName } from "../../src/layers/internal/sessionStoreJsonlNames.ts"
import { echo, longHistory, ofKind } from "../support/fixtures.ts"
import { withTempDir } from "../support/toolWorkspace.ts"

/** The whole loop over a scripted provider and the JSON Lines store in `dir`. */
const loopOver = (
  dir: string,
  script: Scripted.Script,
  options: { readonly tools?: ReadonlyArray<Tool.Tool<CurrentTurn>>; readonly config?: Partial<AgentLoopConfig.AgentLoopConfigInput> } = {}
) =>
  AgentLoopLive.layer({ model: "test-model", ...options.config }).pipe(
    Layer.provideMerge(Layer.mergeAll(
      Scripted.layer(script),
      ToolRegistryLive.layer(options.tools ?? []),
      SessionStoreJsonl.layer(dir).pipe(Layer.provide(NodeServices.layer))
    )),
    Layer.orDie
  )

/** Runs `f` with a fresh real directory, removed afterwards. */
const withDir = <A, E, R>(f: (dir: string) => Effect.Effect<A, E, R>) => withTempDir("persistence-loop-", f)

const fileOf = (dir: string, key: string) => NodePath.join(dir, fileName(key))

const decodeLine = Schema.decodeUnknownSync(Schema.fromJsonString(Message.Message))

/** The lines of a session file that are not turn-outcome records (tested in `log-records.test.ts`). */
const withoutOutcomes = (lines: ReadonlyArray<string>) => lines.filter((line) => !line.startsWith(`{"role":"outcome"`))

/** The messages in a session file, read straight from disk (line 1 is the header). */
const onDisk = (dir: string, key: string): ReadonlyArray<Message.Message> => {
  const lines = NodeFs.readFileSync(fileOf(dir, key), "utf8").split("\n")
  expect(lines.at(-1)).toBe("")
  expect(JSON.parse(lines[0]!)).toEqual({ sessionKey: key })
  return withoutOutcomes(lines.slice(1, -1)).map((line) => decodeLine(line))
}

/** Sets a session file up through the store itself, as an earlier run would have left it. */
const seed = (dir: string, key: string, messages: ReadonlyArray<Message.Message>) =>
  Effect.flatMap(SessionStoreJsonl.make(dir), (store) => store.append(key, messages)).pipe(Effect.provide(NodeServices.layer))

describe("persistence through the loop (jsonl)", () => {
  it.effect("two turns round-trip through disk: a fresh loop sends the first turn's messages, read from the file", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const first = yield* Effect.gen(function*() {
          return yield* (yield* AgentLoop).turn("s", "first question")
        }).pipe(Effect.provide(loopOver(dir, [{ toolCalls: [{ id: "c1", name: "echo", arguments: { text: "x" } }] }, { content: "first answer" }], {
          tools: [echo],
          config: { systemPrompt: "Be brief." }
        })))
        expect(first.status).toBe("completed")
        const afterFirst = [
          Message.user("first question"),
          Message.assistant("", [{ id: "c1", name: "echo", arguments: "{\"text\":\"x\"}" }]),
          Message.toolResult({ id: "c1", name: "echo" }, "echo: x"),
          Message.assistant("first answer")
        ]
        expect(first.messages).toEqual(afterFirst)
        // the system prompt is configuration, not history: it is never written
        expect(onDisk(dir, "s")).toEqual(afterFirst)

        const sent = yield* Effect.gen(function*() {
          const second = yield* (yield* AgentLoop).turn("s", "second question")
          expect(second.messages).toEqual([Message.user("second question"), Message.assistant("second answer")])
          return yield* (yield* Scripted.ScriptedLog).requests
        }).pipe(Effect.provide(loopOver(dir, [{ content: "second answer" }], { config: { systemPrompt: "Be brief." } })))
        expect(sent).toHaveLength(1)
        expect(sent[0]!.messages).toEqual([Message.system("Be brief."), ...afterFirst, Message.user("second question")])
        expect(onDisk(dir, "s")).toEqual([...afterFirst, Message.user("second question"), Message.assistant("second answer")])
      })
    ))

  it.effect("a hard-aborted turn leaves the session's bytes untouched and adds only its outcome record; the next turn appends after it", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const earlier = [Message.user("before"), Message.assistant("after")]
        yield* seed(dir, "s", earlier)
        const before = NodeFs.readFileSync(fileOf(dir, "s"))
        const toolStarted = yield* Deferred.make<void>()
        const blocksForever = Tool.make({
          name: "block",
          description: "never returns",
          parameters: Schema.Struct({}),
          execute: () => Effect.andThen(Deferred.succeed(toolStarted, undefined), Effect.never)
        })
        yield* Effect.gen(function*() {
          const events = (yield* Testing.recordEvents).all
          const loop = yield* AgentLoop
          const turn = yield* Effect.forkChild(loop.turn("s", "start"))
          yield* Deferred.await(toolStarted)
          yield* loop.interruptHard("s")
          const result = yield* Fiber.join(turn)
          expect(result.status).toBe("aborted")
          expect(result.messages).toEqual([])
          const ends = (yield* events).filter((e) => e._tag === "TurnEnd")
          expect(ends.map((e) => e._tag === "TurnEnd" && e.status)).toEqual(["aborted"])
          const rolledBack = NodeFs.readFileSync(fileOf(dir, "s"))
          expect(rolledBack.subarray(0, before.length).equals(before)).toBe(true)
          expect(JSON.parse(rolledBack.subarray(before.length).toString("utf8"))).toMatchObject({ role: "outcome", status: "aborted", iterations: 1 })

          const next = yield* loop.turn("s", "again")
          expect(next.status).toBe("completed")
          const requests = yield* (yield* Scripted.ScriptedLog).requests
          expect(requests[1]!.messages).toEqual([...earlier, Message.user("again")])
        }).pipe(Effect.provide(loopOver(dir, [{ toolCalls: [{ name: "block" }] }, { content: "fine" }], { tools: [blocksForever] })))
        const after = NodeFs.readFileSync(fileOf(dir, "s"))
        expect(after.subarray(0, before.length).equals(before)).toBe(true)
        expect(onDisk(dir, "s")).toEqual([...earlier, Message.user("again"), Message.assistant("fine")])
      })
    ))

  it.effect("a failed turn keeps its input, its completed messages and the partial text (partial: true) in the file", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        yield* seed(dir, "s", [Message.user("before"), Message.assistant("after")])
        const result = yield* Effect.gen(function*() {
          return yield* (yield* AgentLoop).turn("s", "go")
        }).pipe(Effect.provide(loopOver(dir, [
          { toolCalls: [{ id: "c1", name: "echo", arguments: { text: "x" } }] },
          { content: ["Half ", "an answer"], errorAfterChunks: new ProviderRejected({ message: "bad request", status: 400 }) }
        ], { tools: [echo] })))
        expect(result.status).toBe("failed")
        expect(result.error).toBe("ProviderRejected: bad request")
        const kept = [
          Message.user("go"),
          Message.assistant("", [{ id: "c1", name: "echo", arguments: "{\"text\":\"x\"}" }]),
          Message.toolResult({ id: "c1", name: "echo" }, "echo: x"),
          Message.assistant("Half an answer", [], { partial: true })
        ]
        expect(result.messages).toEqual(kept)
        expect(onDisk(dir, "s")).toEqual([Message.user("before"), Message.assistant("after"), ...kept])
        const lastLines = NodeFs.readFileSync(fileOf(dir, "s"), "utf8").trimEnd().split("\n").slice(-2)
        expect(JSON.parse(lastLines[0]!)).toEqual({ role: "assistant", content: "Half an answer", partial: true })
        expect(JSON.parse(lastLines[1]!)).toMatchObject({ role: "outcome", status: "failed", error: { _tag: "ProviderRejected" } })
      })
    ))

  it.effect("a failed turn with no text before the failure keeps only its input: no empty partial message", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const result = yield* Effect.gen(function*() {
          return yield* (yield* AgentLoop).turn("s", "go")
        }).pipe(Effect.provide(loopOver(dir, [{ error: new ProviderRejected({ message: "unauthorised", status: 401 }) }])))
        expect(result.status).toBe("failed")
        expect(onDisk(dir, "s")).toEqual([Message.user("go")])
      })
    ))

  it.effect("a compressed history is appended, never rewritten: every earlier line stays, the view is the compressed context", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        yield* seed(dir, "s", longHistory)
        const before = NodeFs.readFileSync(fileOf(dir, "s"))
        const inodeBefore = NodeFs.statSync(fileOf(dir, "s")).ino
        const { result, retried, view, log } = yield* Effect.gen(function*() {
          const events = (yield* Testing.recordEvents).all
          const result = yield* (yield* AgentLoop).turn("s", "new question")
          const compress = (yield* events).filter((e) => e._tag === "ContextCompress")
          expect(compress.map((e) => e._tag === "ContextCompress" && [e.reason, e.dropped, e.remaining])).toEqual([["overflow", 7, 4]])
          const requests = yield* (yield* Scripted.ScriptedLog).requests
          const store = yield* SessionStore
          return { result, retried: requests[1]!, view: yield* store.load("s"), log: yield* store.log("s") }
        }).pipe(Effect.provide(loopOver(dir, [
          { error: new ContextLengthExceeded({ message: "too long" }) },
          { content: "fits now" }
        ])))
        expect(result.status).toBe("completed")
        expect(result.messages).toEqual([Message.user("new question"), Message.assistant("fits now")])
        // half of the droppable went, then a2 too, so that the kept conversation starts with a user message
        const compressed = [
          Message.system("Earlier summary"),
          Message.user("u3"),
          Message.assistant("a3"),
          Message.user("new question"),
          Message.assistant("fits now")
        ]
        expect([...retried.messages, Message.assistant("fits now")]).toEqual(compressed)
        expect(view).toEqual(compressed)
        const record = { role: "compaction", reason: "overflow", cut: 8 }
        expect(log.filter((e) => e.role !== "outcome")).toEqual([...longHistory, ...result.messages, record])
        // the same file, its old bytes untouched, the turn's lines after them
        expect(NodeFs.statSync(fileOf(dir, "s")).ino).toBe(inodeBefore)
        const after = NodeFs.readFileSync(fileOf(dir, "s"))
        expect(after.subarray(0, before.length).equals(before)).toBe(true)
        expect(withoutOutcomes(after.subarray(before.length).toString("utf8").trimEnd().split("\n")).map((line) => JSON.parse(line))).toEqual([
          ...result.messages,
          record
        ])
        // a fresh store reading the file from scratch gives the same view
        expect(yield* Effect.flatMap(SessionStoreJsonl.make(dir), (store) => store.load("s")).pipe(Effect.provide(NodeServices.layer)))
          .toEqual(compressed)
        // the log and, beside it, the session's event journal
        expect(NodeFs.readdirSync(dir).sort()).toEqual([fileName("s").replace(/\.jsonl$/, ".events.jsonl"), fileName("s")])
      })
    ))
})

describe("a history that cannot be read", () => {
  it.effect("fails the turn at once, naming the store error, and writes nothing", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "hello")
      expect(result.status).toBe("failed")
      expect(result.error).toBe("SessionStoreError: line 2 of 3 is corrupt")
      expect(result.messages).toEqual([])
      expect(ofKind(yield* events, "LLMRequest")).toEqual([])
      expect(ofKind(yield* events, "TurnEnd").map((e) => e.status)).toEqual(["failed"])
    }).pipe(Effect.provide(
      AgentLoopLive.layer({ model: "m" }).pipe(
        Layer.provideMerge(Layer.mergeAll(
          Scripted.layer([{ content: "never" }]),
          ToolRegistryLive.layer([]),
          Layer.succeed(SessionStore, {
            load: (sessionKey) => Effect.fail(new SessionStoreError({ sessionKey, message: "line 2 of 3 is corrupt" })),
            log: (sessionKey) => Effect.fail(new SessionStoreError({ sessionKey, message: "line 2 of 3 is corrupt" })),
            append: () => Effect.die("must not write"),
            list: Effect.succeed([]),
            remove: () => Effect.void
          })
        )),
        Layer.orDie
      )
    )))
})
