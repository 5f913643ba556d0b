/**
 * A server decides how long the loop waits before a retry (`Retry-After`), and a hostile or broken
 * one may ask for days. Every delay is capped at `retry.maxDelay` and the retries of one call end
 * within `retry.maxElapsed` of its first failure, whatever the server says. On TestClock.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, ProviderUnavailable, RateLimited } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { ofKind } from "../support/fixtures.ts"

const requestCount = Effect.map(Testing.requests, (requests) => requests.length)

const slowDown = new RateLimited({ message: "slow down", retryAfterMs: 999_999_000 })

describe("retry bounds", () => {
  it.effect("Retry-After: 999999 (seconds) waits maxDelay (default 30 s), not 11.6 days", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* TestClock.adjust(29_999)
      expect(yield* requestCount).toBe(1)
      yield* TestClock.adjust(1)
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("completed")
      expect(yield* requestCount).toBe(2)
      expect(ofKind(yield* events, "LLMRetry").map((e) => e.delayMs)).toEqual([30_000])
    }).pipe(Effect.provide(Testing.layer({ config: { retry: { jitter: false } }, script: [{ error: slowDown }, { content: "ok" }] }))))

  it.effect("a configured maxDelay caps Retry-After too", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      yield* TestClock.adjust(5000)
      expect((yield* Fiber.join(turn)).status).toBe("completed")
      expect(ofKind(yield* events, "LLMRetry").map((e) => e.delayMs)).toEqual([5000])
    }).pipe(Effect.provide(Testing.layer({
      config: { retry: { jitter: false, maxDelay: "5 seconds" } },
      script: [{ error: slowDown }, { content: "ok" }]
    }))))

  it.effect("the retries of one call end within maxElapsed (default 2 min) however many attempts are allowed", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      // 30 s each: retries at 30, 60, 90 and 120 s; the one at 150 s would pass the bound.
      yield* TestClock.adjust(120_000)
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("failed")
      expect(result.error).toBe("RateLimited: slow down")
      expect(yield* requestCount).toBe(5)
      const retries = ofKind(yield* events, "LLMRetry")
      expect(retries.map((e) => [e.delayMs, e.at])).toEqual([[30_000, 0], [30_000, 30_000], [30_000, 60_000], [30_000, 90_000]])
      expect(ofKind(yield* events, "TurnEnd").map((e) => e.at)).toEqual([120_000])
    }).pipe(Effect.provide(Testing.layer({ config: { retry: { jitter: false, maxAttempts: 1000 } }, script: () => ({ error: slowDown }) }))))

  it.effect("maxElapsed is configurable and bounds plain backoff as well", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild((yield* AgentLoop).turn("s", "go"))
      // 1 + 2 + 4 = 7 s of backoff fit in 10 s; the next (8 s) would end at 15 s.
      yield* TestClock.adjust(7000)
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("failed")
      expect(ofKind(yield* events, "LLMRetry").map((e) => e.delayMs)).toEqual([1000, 2000, 4000])
    }).pipe(Effect.provide(Testing.layer({
      config: { retry: { jitter: false, maxAttempts: 100, maxElapsed: "10 seconds" } },
      script: () => ({ error: new ProviderUnavailable({ message: "overloaded", status: 503 }) })
    }))))
})
