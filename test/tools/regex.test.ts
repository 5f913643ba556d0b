/**
 * A model-chosen regular expression with catastrophic backtracking (`(a+)+$`) must not freeze the
 * process: grep matches in a worker thread with a deadline on the Clock, and the worker is
 * terminated when the deadline passes or the call is interrupted. (With ripgrep choosing the files,
 * such a pattern is usually answered at once: ripgrep does not backtrack, and names no file where
 * the pattern cannot match; so these tests search without it.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as nodeFs from "node:fs"
import { AgentLoop, makeGrep } from "effect-agent-loop"
import { makeLineMatcher, REGEX_THREAD_NAME } from "../../src/tools/lineMatcher.ts"
import * as Testing from "effect-agent-loop/testing"
import { ofKind } from "../support/fixtures.ts"
import { builtinContext, failure, provided, tempDir, withWorkspace, write } from "../support/toolWorkspace.ts"

const EVIL = "(a+)+$"
/** 2^40 ways to split the a's before failing at the "!": far beyond any deadline. */
const EVIL_LINE = "a".repeat(40) + "!"

/** The live threads of this process that are regex workers (Linux names threads after workers). */
const regexThreads = () =>
  nodeFs.readdirSync("/proc/self/task").filter((tid) => {
    try {
      return nodeFs.readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim() === REGEX_THREAD_NAME
    } catch {
      return false
    }
  }).length

/** One turn of the event loop, so real I/O and timers can run; no time is waited for. */
const tick = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/** Turns the event loop until `check` holds (bounded), without waiting on time. */
const until = (check: () => boolean, turns = 20_000) =>
  Effect.gen(function*() {
    for (let i = 0; i < turns; i++) {
      if (check()) return
      yield* tick
    }
    return yield* Effect.die(new Error("condition never held"))
  })

describe.skipIf(!nodeFs.existsSync("/proc/self/task"))("regex deadline", () => {
  it.effect("the deadline fires on the Clock: not a millisecond early, and the worker is terminated", () =>
    Effect.scoped(Effect.gen(function*() {
      const matcher = yield* makeLineMatcher({ source: EVIL, flags: "", timeout: "5 seconds", maxLineLength: 100 })
      const fiber = yield* Effect.forkChild(matcher.match(`ok\n${EVIL_LINE}\n`, 10))
      yield* until(() => regexThreads() === 1)
      yield* TestClock.adjust("4999 millis")
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 millis")
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error._tag).toBe("RegexTimeout")
      yield* until(() => regexThreads() === 0)
    })))

  it.effect("matches normal patterns, reports line numbers, cuts long lines and stops at the limit", () =>
    Effect.scoped(Effect.gen(function*() {
      const matcher = yield* makeLineMatcher({ source: "b+", flags: "i", timeout: "5 seconds", maxLineLength: 3 })
      expect(yield* matcher.match("a\nBBBBB\r\nc\nb\nb\n", 2)).toEqual([[1, "BBB…"], [3, "b"]])
      expect(yield* matcher.match("zzz", 5)).toEqual([])
    })))

  it.effect("through the loop, grep's default 30 s timeout fires on the Clock while the pattern spins, and ends the worker", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir("ws-regex-")
      write(root, "evil.txt", `${EVIL_LINE}\n`)
      const tools = provided([makeGrep({ matchTimeout: "1 hour", ripgrep: false })], yield* builtinContext(root))
      const script = [{ toolCalls: [{ id: "g", name: "grep", arguments: { pattern: EVIL } }] }, { content: "done" }]
      yield* Effect.gen(function*() {
        const events = (yield* Testing.recordEvents).all
        const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
        yield* until(() => regexThreads() === 1)
        yield* TestClock.adjust("29999 millis")
        expect(ofKind(yield* events, "ToolExecEnd")).toEqual([])
        yield* TestClock.adjust("1 millis")
        yield* Fiber.join(turn)
        expect(ofKind(yield* events, "ToolExecEnd").map((e) => [e.result, e.isError, e.durationMs])).toEqual([
          ['Tool "grep" timed out after 30000ms', true, 30_000]
        ])
        yield* until(() => regexThreads() === 0)
      }).pipe(Effect.provide(Testing.layer({ tools, script })))
    })))

  it.live("the event loop stays responsive while a pattern spins; the tool says it took too long", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "ok.txt", "aaa\n")
        write(root, "evil.txt", `${EVIL_LINE}\n`)
        let turns = 0
        let running = true
        const counter = yield* Effect.forkChild(Effect.whileLoop({
          while: () => running,
          body: () => tick,
          step: () => turns++
        }))
        const message = yield* failure(makeGrep({ matchTimeout: "300 millis", ripgrep: false }), { pattern: EVIL })
        running = false
        yield* Fiber.join(counter)
        expect(message).toBe(
          `The pattern /${EVIL}/ took longer than 300 ms on "evil.txt" and was stopped. Simplify it (nested ` +
            "quantifiers such as (a+)+ can take exponential time) or narrow the path or glob."
        )
        // 300 ms of spinning in the worker left the main thread free for many turns of the event loop
        expect(turns).toBeGreaterThan(50)
        yield* until(() => regexThreads() === 0)
      })
    ))
})
