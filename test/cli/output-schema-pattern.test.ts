/**
 * A `pattern` in the user's `--output-schema` runs on the model's answer. One with catastrophic
 * backtracking (`^(a+)+$`) on a crafted answer must not freeze the process: answers are decoded in
 * a worker thread under grep's deadline (on the Clock), and the worker is terminated after.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as nodeFs from "node:fs"
import * as NodePath from "node:path"
import { DECODER_THREAD_NAME } from "../../src/cli/output/outputDecoder.ts"
import * as OutputSchema from "../../src/cli/output/outputSchema.ts"
import { DEFAULT_GREP_MATCH_TIMEOUT } from "../../src/tools/grep.ts"
import { tempDir } from "../support/toolWorkspace.ts"

const decoderThreads = () =>
  nodeFs.readdirSync("/proc/self/task").filter((tid) => {
    try {
      return nodeFs.readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim() === DECODER_THREAD_NAME
    } catch {
      return false
    }
  }).length

/** One turn of the event loop, so real I/O can run; no time is waited for. */
const tick = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

const until = (check: () => boolean, turns = 50_000) =>
  Effect.gen(function*() {
    for (let i = 0; i < turns; i++) {
      if (check()) return
      yield* tick
    }
    return yield* Effect.die(new Error("condition never held"))
  })

const loaded = (json: unknown) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("output-pattern-")
    const file = NodePath.join(dir, "schema.json")
    nodeFs.writeFileSync(file, JSON.stringify(json))
    return yield* OutputSchema.load(file)
  }).pipe(Effect.provide(NodeServices.layer))

const schemaOf = (pattern: string) => ({
  type: "object",
  properties: { word: { type: "string", pattern } },
  required: ["word"]
})

describe.skipIf(!nodeFs.existsSync("/proc/self/task"))("--output-schema patterns", () => {
  it.effect("a catastrophic pattern on a crafted answer is given up at grep's deadline, and its thread ends", () =>
    Effect.scoped(Effect.gen(function*() {
      const { schema } = yield* loaded(schemaOf("^(a+)+$"))
      const fiber = yield* Effect.forkChild(Effect.exit(Schema.decodeUnknownEffect(schema)({ word: "a".repeat(40) + "!" })))
      yield* until(() => decoderThreads() === 1)
      yield* TestClock.adjust(DEFAULT_GREP_MATCH_TIMEOUT)
      const exit = yield* Fiber.join(fiber)
      expect(Exit.isFailure(exit)).toBe(true)
      expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain("took longer than 5000 ms")
      yield* until(() => decoderThreads() === 0)
    })))

  it.effect("not a millisecond early", () =>
    Effect.scoped(Effect.gen(function*() {
      const { schema } = yield* loaded(schemaOf("^(a+)+$"))
      const fiber = yield* Effect.forkChild(Effect.exit(Schema.decodeUnknownEffect(schema)({ word: "a".repeat(40) + "!" })))
      yield* until(() => decoderThreads() === 1)
      yield* TestClock.adjust("4999 millis")
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 millis")
      expect(Exit.isFailure(yield* Fiber.join(fiber))).toBe(true)
      yield* until(() => decoderThreads() === 0)
    })))

  it.live("ordinary patterns decode as before: a match passes, a mismatch says why", () =>
    Effect.scoped(Effect.gen(function*() {
      const { schema } = yield* loaded(schemaOf("^[a-z]+$"))
      expect(yield* Schema.decodeUnknownEffect(schema)({ word: "abc" })).toEqual({ word: "abc" })
      const error = yield* Effect.flip(Schema.decodeUnknownEffect(schema)({ word: "ABC" }))
      expect(error.message).toMatch(/\^\[a-z\]\+\$/)
      const missing = yield* Effect.flip(Schema.decodeUnknownEffect(schema)({}))
      expect(missing.message).toMatch(/word/)
      yield* until(() => decoderThreads() === 0)
    })))
})
