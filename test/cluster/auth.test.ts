/**
 * A cluster with a shared secret, and with TLS on the runner port: runner processes on a real
 * Postgres, clients in this process with the right secret, a wrong one and none, and a raw socket
 * that does not speak the handshake. Multi-process, so on real time: waits poll with deadlines.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as fs from "node:fs"
import * as net from "node:net"
import { Effect, Layer, ManagedRuntime, Redacted, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AgentLoop, type AgentLoopCluster, SessionStore, SessionStoreJsonl } from "effect-agent-loop"
import * as Auth from "../../src/cluster/auth.ts"
import { AgentSession } from "../../src/cluster/protocol.ts"
import * as Transport from "../../src/cluster/transport.ts"
import { tempDir } from "../support/cliProcess.ts"
import { hasOpenssl, makeCertificates, startCluster, type TestCluster, waitUntil } from "../support/cluster.ts"
import { postgresProbe, postgresSuite } from "../support/postgres.ts"

const SECRET = "correct horse battery staple"

/** One turn from a client with `security`, on a runtime closed afterwards. */
const turnWith = async (cluster: TestCluster, security: AgentLoopCluster.ClusterSecurity, sessionKey: string, input: string) => {
  const runtime = ManagedRuntime.make(cluster.client({}, security))
  try {
    return await runtime.runPromise(Effect.gen(function*() {
      return yield* (yield* AgentLoop).turn(sessionKey, input)
    }))
  } finally {
    await runtime.dispose()
  }
}

const history = (cluster: TestCluster, sessionKey: string) =>
  Effect.runPromise(
    Effect.gen(function*() {
      return yield* (yield* SessionStore).load(sessionKey)
    }).pipe(
      Effect.provide(SessionStoreJsonl.layer(cluster.sessionsDir).pipe(Layer.provide(NodeServices.layer)))
    )
  )

/** Connects to the runner through the handshake: `ok`, or the error's tag and message. */
const probe = (port: number, security: AgentLoopCluster.ClusterSecurity) =>
  Effect.runPromise(
    Effect.scoped(Transport.connect({ host: "127.0.0.1", port }, security)).pipe(
      Effect.as({ ok: true as const }),
      Effect.catch((error) => Effect.succeed({ ok: false as const, tag: error._tag, message: error.message }))
    )
  )

describe.skipIf(!postgresProbe.ok)(postgresSuite("a cluster with a shared secret"), () => {
  let cluster: TestCluster

  beforeAll(async () => {
    cluster = await startCluster(1, undefined, { secret: SECRET })
  }, 120_000)

  afterAll(async () => {
    await cluster?.close()
  })

  it("runs the turns of a client with the secret", async () => {
    const result = await turnWith(cluster, { secret: Redacted.make(SECRET) }, "trusted", "hello")
    expect([result.status, result.error, result.finalMessage?.content]).toEqual(["completed", undefined, "seen 1: hello"])
    expect(await probe(cluster.runners[0]!.port, { secret: Redacted.make(SECRET) })).toEqual({ ok: true })
  })

  it("refuses a client without the secret: its connection, and its request found in the database; nothing runs", async () => {
    expect(await probe(cluster.runners[0]!.port, {})).toMatchObject({
      ok: false,
      tag: "ClusterAuthError",
      message: expect.stringContaining("the runner requires the cluster secret")
    })
    // logged as the docs say: the peer did not prove the secret, and why
    await waitUntil("the runner to log the refused peer without a secret", () =>
      /refused a connection from 127\.0\.0\.1:\d+: the peer did not prove the cluster secret: it closed the connection without answering \(no secret\)/.test(cluster.runners[0]!.output()))
    const result = await turnWith(cluster, {}, "anonymous", "run this")
    expect(result.status).toBe("failed")
    expect(result.error).toBe("the runner refused the request: the request is not signed with the cluster secret")
    expect(await history(cluster, "anonymous")).toEqual([])
    await waitUntil("the runner to log the refused request", () => /refused request \S+ of session anonymous/.test(cluster.runners[0]!.output()))
    expect(cluster.runners[0]!.sessions().has("anonymous")).toBe(false)
  })

  it("refuses a client with a wrong secret", async () => {
    const wrong = { secret: Redacted.make("not the secret") }
    expect(await probe(cluster.runners[0]!.port, wrong)).toMatchObject({
      ok: false,
      tag: "ClusterAuthError",
      message: "the runner refused this process: its cluster secret is not the runner's"
    })
    await waitUntil("the runner to log the refused peer with its address", () =>
      /refused a connection from 127\.0\.0\.1:\d+: the peer did not prove the cluster secret: its answer is not signed with it \(a wrong secret\)/.test(cluster.runners[0]!.output()))
    const result = await turnWith(cluster, wrong, "impostor", "run this")
    expect(result.status).toBe("failed")
    expect(result.error).toBe("the runner refused the request: the request's signature does not match the cluster secret")
    expect(await history(cluster, "impostor")).toEqual([])
    // the secret appears nowhere in what the runner printed
    expect(cluster.runners[0]!.output()).not.toContain(SECRET)
  })

  it("refuses a copy of a signed request stored under another request id, and a signed request made more than a day ago", async () => {
    const secret = Redacted.make(SECRET)
    const runtime = ManagedRuntime.make(cluster.client({}, { secret }))
    try {
      const results = await runtime.runPromise(Effect.gen(function*() {
        const session = (yield* AgentSession.client)("replayed")
        // what someone who can write the database could do: store a signed request again, under a new id
        const request = yield* Auth.signRequest(secret, "Turn", "replayed", { input: "pay the invoice" })
        const original = yield* session.Turn(request)
        const copy = yield* session.Turn(request)
        // signed with the secret, but made 25 hours ago: refused whatever its nonce
        const unsigned = { input: "pay the old invoice", nonce: "an unused nonce", issuedAt: Date.now() - 25 * 3_600_000 }
        const old = yield* session.Turn({ ...unsigned, signature: Auth.sign(secret, "Turn", "replayed", unsigned) })
        // one without a nonce, as an older client signed it
        const bare = yield* session.Turn({ input: "no nonce", signature: Auth.sign(secret, "Turn", "replayed", { input: "no nonce" }) })
        // the router's request too: a copy could otherwise steer the session's running turn
        const routed = (yield* AgentSession.client)("replayed-send")
        const message = yield* Auth.signRequest(secret, "Send", "replayed-send", { content: "ship it" })
        const replies = []
        for (const send of [message, message]) {
          const chunks = yield* Stream.runCollect(routed.Send(send))
          for (const chunk of chunks) if (chunk._tag === "Replied") replies.push(chunk.outbound.result)
        }
        return [original, copy, old, bare].map(({ result }) => result).concat(replies).map((result) => [result.status, result.error])
      }))
      expect(results).toEqual([
        ["completed", undefined],
        ["failed", "the runner refused the request: a request with this signature was already admitted under another request id: a copy does not run"],
        ["failed", "the runner refused the request: the request was made more than 24 hours ago"],
        ["failed", "the runner refused the request: the request carries no nonce: it was signed by an older client"],
        ["completed", undefined],
        ["failed", "the runner refused the request: a request with this signature was already admitted under another request id: a copy does not run"]
      ])
      // the original's turn is the only one in the session
      expect((await history(cluster, "replayed")).filter((m) => m.role === "user").map((m) => m.content)).toEqual(["pay the invoice"])
    } finally {
      await runtime.dispose()
    }
  })

  it("closes a connection that does not speak the handshake, before any RPC", async () => {
    const closed = await new Promise<{ readonly greeting: Buffer }>((resolve, reject) => {
      const socket = net.connect({ host: "127.0.0.1", port: cluster.runners[0]!.port })
      const chunks: Array<Buffer> = []
      socket.on("data", (chunk) => {
        chunks.push(chunk)
        // an RPC client's first bytes, where the proof should be
        if (chunks.length === 1) socket.write(Buffer.alloc(64, 1))
      })
      socket.on("close", () => resolve({ greeting: Buffer.concat(chunks) }))
      socket.on("error", reject)
    })
    // the greeting (magic, mode 1: secret, a challenge), then a refusal and the end
    expect(closed.greeting.subarray(0, 5)).toEqual(Buffer.from([...Buffer.from("ALC1"), 1]))
    expect(closed.greeting.length).toBe(5 + 32 + 33)
    expect(closed.greeting[37]).toBe(0)
  })
})

describe.skipIf(!postgresProbe.ok || !hasOpenssl)(postgresSuite("a cluster with TLS on the runner port"), () => {
  let cluster: TestCluster
  let files: { readonly cert: string; readonly key: string; readonly ca: string }

  beforeAll(async () => {
    files = makeCertificates(tempDir("agent-loop-tls-"))
    cluster = await startCluster(1, undefined, { secret: SECRET, tls: files })
  }, 120_000)

  afterAll(async () => {
    await cluster?.close()
  })

  it("runs turns for a client that verifies the runner's certificate", async () => {
    const security = { secret: Redacted.make(SECRET), tls: { ca: fs.readFileSync(files.ca, "utf8") } }
    expect(await probe(cluster.runners[0]!.port, security)).toEqual({ ok: true })
    const result = await turnWith(cluster, security, "over-tls", "hello")
    expect([result.status, result.finalMessage?.content]).toEqual(["completed", "seen 1: hello"])
  })

  it("a client without TLS gets no greeting; one that does not trust the runner's CA cannot connect", async () => {
    const plain = await probe(cluster.runners[0]!.port, { secret: Redacted.make(SECRET) })
    expect(plain).toMatchObject({ ok: false, tag: "ClusterAuthError", message: expect.stringContaining("is the runner using TLS?") })
    const untrusted = await probe(cluster.runners[0]!.port, { secret: Redacted.make(SECRET), tls: {} })
    expect(untrusted).toMatchObject({ ok: false, tag: "RunnerUnreachable", message: expect.stringMatching(/self-signed|unable to verify|certificate/) })
  })

  it("the handshake still checks the secret inside TLS", async () => {
    const wrong = await probe(cluster.runners[0]!.port, { secret: Redacted.make("nope"), tls: { ca: fs.readFileSync(files.ca, "utf8") } })
    expect(wrong).toMatchObject({ ok: false, tag: "ClusterAuthError", message: "the runner refused this process: its cluster secret is not the runner's" })
  })
})
