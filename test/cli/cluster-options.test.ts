/**
 * The cluster flags of `serve` and `run --cluster` as the CLI resolves them: the secret leaves the
 * environment and is scrubbed like a key, and what cannot work is refused with one line.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { SecretsLive } from "effect-agent-loop"
import * as ClusterOptions from "../../src/cli/commands/clusterOptions.ts"
import { Secrets } from "../../src/services/Secrets.ts"

const none = { clusterSecret: Option.none(), clusterTlsCa: Option.none() }

describe("the cluster's security flags", () => {
  it.effect("take the secret out of the environment and register it with Secrets", () =>
    Effect.gen(function*() {
      const secret = "a long enough cluster secret"
      process.env[ClusterOptions.SECRET_VARIABLE] = secret
      const security = yield* ClusterOptions.security({ ...none, clusterSecret: Option.some(Redacted.make(secret)) })
      expect(process.env[ClusterOptions.SECRET_VARIABLE]).toBeUndefined()
      expect(security.secret && Redacted.value(security.secret)).toBe(secret)
      expect(security.tls).toBeUndefined()
      expect((yield* Secrets).scrub(`the secret is ${secret}`)).toBe("the secret is <redacted>")
    }).pipe(Effect.provide(SecretsLive.layer([]))))

  it.effect("refuse a secret too short to resist guessing, and a certificate without its key", () =>
    Effect.gen(function*() {
      const short = yield* Effect.flip(ClusterOptions.security({ ...none, clusterSecret: Option.some(Redacted.make("x".repeat(ClusterOptions.MIN_SECRET_LENGTH - 1))) }))
      expect(short.message).toBe("the cluster secret must be at least 16 characters (e.g. openssl rand -base64 32)")
      const half = yield* Effect.flip(ClusterOptions.security({ ...none, clusterTlsCert: Option.some("PEM"), clusterTlsKey: Option.none() }))
      expect(half.message).toBe("TLS on the runner port needs both --cluster-tls-cert and --cluster-tls-key")
      const ok = yield* ClusterOptions.security({ ...none, clusterSecret: Option.some(Redacted.make("x".repeat(ClusterOptions.MIN_SECRET_LENGTH))) })
      expect(ok.secret).toBeDefined()
    }).pipe(Effect.provide(SecretsLive.layer([]))))

  it.effect("turn TLS on for a client given only a CA", () =>
    Effect.gen(function*() {
      const security = yield* ClusterOptions.security({ ...none, clusterTlsCa: Option.some("CA PEM") })
      expect(security).toEqual({ secret: undefined, tls: { cert: undefined, key: undefined, ca: "CA PEM" } })
    }).pipe(Effect.provide(SecretsLive.layer([]))))
})
