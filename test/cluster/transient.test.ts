/**
 * The one classifier of transient failures (`isTransient`) and the bounded backoff that retries
 * them (`retryTransient`), on the Clock.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as SqlError from "effect/sql/SqlError"
import { TestClock } from "effect/testing"
import { isTransient, neverSent, retryTransient, sqlState } from "../../src/domain/connectionFailure.ts"
import { SessionStoreError } from "../../src/domain/errors.ts"

/** An error as the Postgres driver reports a server error: its SQLSTATE on the cause. */
const server = (code: string, reason: "UnknownError" | "ConnectionError" | "AuthenticationError" = "UnknownError") => {
  const props = { cause: Object.assign(new Error(`server said ${code}`), { code }), message: "PgConnection: Query failed", operation: "query" }
  return new SqlError.SqlError({
    reason: reason === "ConnectionError" ? new SqlError.ConnectionError(props) : reason === "AuthenticationError" ? new SqlError.AuthenticationError(props) : new SqlError.UnknownError(props)
  })
}
const refused = new SqlError.SqlError({
  reason: new SqlError.ConnectionError({ cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }), message: "PgConnection: Failed to connect", operation: "connect" })
})
const closed = new SqlError.SqlError({
  reason: new SqlError.ConnectionError({ cause: new Error("Connection closed unexpectedly"), message: "PgConnection: Connection closed", operation: "query" })
})

describe("isTransient", () => {
  it("a database restarting or cut off, a refused or reset connection: transient", () => {
    expect(isTransient(refused)).toBe(true)
    expect(isTransient(closed)).toBe(true)
    expect(isTransient(server("57P01"))).toBe(true)
    expect(isTransient(server("57P03"))).toBe(true)
    expect(isTransient(server("08006", "ConnectionError"))).toBe(true)
    expect(isTransient(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }))).toBe(true)
    expect(isTransient(new SessionStoreError({ sessionKey: "s", message: "cannot append", transient: true }))).toBe(true)
  })

  it("authentication, a statement's own error, an unknown host: not transient", () => {
    expect(isTransient(server("28P01", "AuthenticationError"))).toBe(false)
    expect(isTransient(server("42601"))).toBe(false)
    expect(isTransient(server("23505"))).toBe(false)
    expect(isTransient(Object.assign(new Error("getaddrinfo ENOTFOUND db"), { code: "ENOTFOUND" }))).toBe(false)
    expect(isTransient(new SessionStoreError({ sessionKey: "s", message: "line 2 is corrupt" }))).toBe(false)
    expect(isTransient("a string")).toBe(false)
  })

  it("neverSent: a failure before any statement reached the database (no connection made), not one under a statement", () => {
    expect(neverSent(refused)).toBe(true)
    expect(neverSent(server("57P03"))).toBe(true)
    expect(neverSent(closed)).toBe(false)
    expect(neverSent(server("57P01"))).toBe(false)
    expect(neverSent(server("28P01", "AuthenticationError"))).toBe(false)
  })

  it("sqlState reads the server's code", () => {
    expect(sqlState(server("28P01", "AuthenticationError"))).toBe("28P01")
    expect(sqlState(refused)).toBeUndefined()
  })
})

describe("retryTransient", () => {
  it.effect("retries a transient failure with doubling delays on the Clock until it succeeds", () =>
    Effect.gen(function*() {
      let attempts = 0
      const call = Effect.suspend(() => ++attempts <= 3 ? Effect.fail(refused) : Effect.succeed("ok"))
      const fiber = yield* Effect.forkChild(retryTransient(call))
      yield* TestClock.adjust("99 millis")
      expect(attempts).toBe(1)
      yield* TestClock.adjust("1 millis")
      expect(attempts).toBe(2)
      yield* TestClock.adjust("200 millis")
      expect(attempts).toBe(3)
      yield* TestClock.adjust("400 millis")
      expect(yield* Fiber.join(fiber)).toBe("ok")
      expect(attempts).toBe(4)
    }))

  it.effect("gives up after its bound, delays capped at 2 s; a failure that is not transient is not retried", () =>
    Effect.gen(function*() {
      let attempts = 0
      const fiber = yield* Effect.forkChild(Effect.flip(retryTransient(Effect.suspend(() => (attempts++, Effect.fail(refused))))))
      for (let i = 0; i < 40 && fiber.pollUnsafe() === undefined; i++) yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(fiber)).toBe(refused)
      // 0.1 + 0.2 + 0.4 + 0.8 + 1.6 = 3.1 s, then every 2 s until 30 s: about 19 attempts
      expect(attempts).toBeGreaterThanOrEqual(15)
      expect(attempts).toBeLessThanOrEqual(20)
      let once = 0
      const auth = server("28P01", "AuthenticationError")
      expect(yield* Effect.flip(retryTransient(Effect.suspend(() => (once++, Effect.fail(auth)))))).toBe(auth)
      expect(once).toBe(1)
    }))
})
