import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { Secrets, SecretsLive } from "effect-agent-loop"
import { MIN_SECRET_LENGTH } from "../../src/services/Secrets.ts"

const current = Effect.gen(function*() {
  return yield* Secrets
})

describe("Secrets", () => {
  it.effect("scrubs every registered value, longest first, and ignores values too short to be secrets", () =>
    Effect.gen(function*() {
      const secrets = yield* Secrets
      const short = "s".repeat(MIN_SECRET_LENGTH - 1)
      secrets.add([Redacted.make("sk-live-0123456789"), "sk-live-0123456789-extended", short, ""])
      expect(secrets.size()).toBe(2)
      expect(secrets.scrub(`a sk-live-0123456789-extended b sk-live-0123456789 c ${short}`))
        .toBe(`a <redacted> b <redacted> c ${short}`)
    }).pipe(Effect.provide(SecretsLive.layer())))

  it.effect("a layer gives a registry of its own, seeded; without one the process-wide registry is used", () =>
    Effect.gen(function*() {
      const own = yield* Effect.provide(current, SecretsLive.layer(["seeded-secret-value"]))
      expect(own.scrub("seeded-secret-value")).toBe("<redacted>")
      const shared = yield* current
      expect(shared.scrub("seeded-secret-value")).toBe("seeded-secret-value")
      shared.add(["process-wide-secret"])
      expect((yield* current).scrub("process-wide-secret")).toBe("<redacted>")
    }))
})
