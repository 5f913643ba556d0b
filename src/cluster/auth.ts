/**
 * Who may talk to a runner: the processes of one cluster share a secret, and prove it to each
 * other on every runner connection before any RPC passes, and on every request they persist.
 *
 * The handshake (an HMAC-SHA256 challenge–response, both ways, so a client also knows it reached a
 * runner of its cluster):
 * 1. runner → peer: `ALC1`, a mode byte (0: no secret, 1: secret), a 32-byte random challenge;
 * 2. peer → runner: its own 32-byte challenge, then HMAC(secret, "peer" | both challenges);
 * 3. runner → peer: 1 (accepted) and HMAC(secret, "runner" | both challenges), or 0 and it closes.
 * A runner without a secret greets with mode 0 and takes no proof; a peer with a secret refuses
 * such a runner, and a peer without one refuses a runner that asks for one, each with a clear
 * `ClusterAuthError`. The secret itself never crosses the wire.
 *
 * Requests the cluster persists (`Turn`, `Send`) can also be written straight into its database, by
 * anyone who can write there: they carry an HMAC over the session key and the request (`sign`),
 * which the runner checks before running the turn (`verify`). The request signed holds a nonce and
 * the time it was made (`signRequest`), so that a copy stored under another request id is refused
 * too (`nonces.ts`).
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"

/** The secret the processes of a cluster share; a runner with it refuses whoever cannot prove it. */
export class ClusterSecret extends Context.Service<ClusterSecret, Redacted.Redacted<string>>()("effect-agent-loop/ClusterSecret") {}

/** TLS on the runner port: PEM texts (not file names). */
export interface ClusterTls {
  /** The runner's certificate chain; with `key`, the runner listens with TLS. */
  readonly cert?: string | undefined
  /** The runner's private key. */
  readonly key?: string | undefined
  /** The certificates that sign runners' certificates, to verify them when connecting; default: Node's. */
  readonly ca?: string | undefined
}

/** How the processes of a cluster trust each other. */
export interface ClusterSecurity {
  /** The shared secret; without it, runners take any peer (the default, for a private network). */
  readonly secret?: Redacted.Redacted<string> | undefined
  /** TLS on runner connections: a runner listens with it when `cert` and `key` are given, clients connect with it when given at all. */
  readonly tls?: ClusterTls | undefined
}

/** A runner connection was refused: one side cannot prove the cluster's secret, or does not speak the handshake. */
export class ClusterAuthError extends Schema.TaggedError<ClusterAuthError>()("ClusterAuthError", {
  /** The other side: `host:port`. */
  address: Schema.String,
  message: Schema.String
}) {}

/** A handshake cut short: the peer closed the connection. */
const CLOSED_DURING_HANDSHAKE = "the connection closed during the handshake"

/** What the handshake needs of a Node socket (structural, so the package's types need no Node types). */
export interface HandshakeSocket {
  readonly remoteAddress?: string | undefined
  readonly remotePort?: number | undefined
  read(size: number): unknown
  write(chunk: Uint8Array): unknown
  on(event: string, listener: (...args: Array<any>) => void): unknown
  once(event: string, listener: (...args: Array<any>) => void): unknown
  off(event: string, listener: (...args: Array<any>) => void): unknown
}

const MAGIC = Buffer.from("ALC1")
const CHALLENGE = 32
const MAC = 32
/** How long the other side may take to answer each step. */
export const HANDSHAKE_TIMEOUT = Duration.seconds(5)

const mac = (secret: Redacted.Redacted<string>, label: string, ...parts: ReadonlyArray<Buffer>) => {
  const hmac = createHmac("sha256", Redacted.value(secret))
  hmac.update(label)
  for (const part of parts) hmac.update(part)
  return hmac.digest()
}

const sameMac = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b)

/** `host:port` of the other end of a socket. */
const remoteOf = (conn: HandshakeSocket): string => {
  const { remoteAddress, remotePort } = conn
  return remoteAddress === undefined ? "unknown" : `${remoteAddress.includes(":") ? `[${remoteAddress}]` : remoteAddress}:${remotePort}`
}

/** Reads exactly `n` bytes from a paused stream; what arrives after them stays in the stream. */
const readExactly = (conn: HandshakeSocket, n: number, address: string, hint = ""): Effect.Effect<Buffer, ClusterAuthError> =>
  Effect.callback<Buffer, ClusterAuthError>((resume) => {
    const cleanup = () => {
      conn.off("readable", attempt)
      conn.off("end", closed)
      conn.off("close", closed)
      conn.off("error", failed)
    }
    function attempt() {
      const chunk = conn.read(n) as Buffer | null
      if (chunk === null) return
      cleanup()
      resume(Effect.succeed(chunk))
    }
    function closed() {
      cleanup()
      resume(Effect.fail(new ClusterAuthError({ address, message: CLOSED_DURING_HANDSHAKE })))
    }
    function failed(error: Error) {
      cleanup()
      resume(Effect.fail(new ClusterAuthError({ address, message: `the connection failed during the handshake: ${error.message}` })))
    }
    conn.on("readable", attempt)
    conn.once("end", closed)
    conn.once("close", closed)
    conn.once("error", failed)
    attempt()
    return Effect.sync(cleanup)
  }).pipe(
    Effect.timeoutOrElse({
      duration: HANDSHAKE_TIMEOUT,
      orElse: () => Effect.fail(new ClusterAuthError({ address, message: `no handshake answer within ${Duration.format(HANDSHAKE_TIMEOUT)}${hint}` }))
    })
  )

const write = (conn: HandshakeSocket, bytes: Buffer) => Effect.sync(() => void conn.write(bytes))

/** Why a runner refuses a peer that has not the cluster secret, as its log says it. */
const NOT_PROVED = "the peer did not prove the cluster secret"

/**
 * The runner's side, on a new connection before any RPC: succeeds when the peer may talk to this
 * runner; fails (and the caller closes the connection) otherwise.
 */
export const acceptPeer = (conn: HandshakeSocket, secret: Redacted.Redacted<string> | undefined): Effect.Effect<void, ClusterAuthError> =>
  Effect.gen(function*() {
    const address = remoteOf(conn)
    const challenge = randomBytes(CHALLENGE)
    yield* write(conn, Buffer.concat([MAGIC, Buffer.from([secret === undefined ? 0 : 1]), challenge]))
    if (secret === undefined) return
    const answer = yield* readExactly(conn, CHALLENGE + MAC, address).pipe(
      // a peer without the secret reads the greeting and leaves
      Effect.mapError((error) =>
        error.message === CLOSED_DURING_HANDSHAKE ? new ClusterAuthError({ address, message: `${NOT_PROVED}: it closed the connection without answering (no secret)` }) : error
      )
    )
    const theirs = answer.subarray(0, CHALLENGE)
    if (!sameMac(answer.subarray(CHALLENGE), mac(secret, "peer", challenge, theirs))) {
      yield* write(conn, Buffer.alloc(1 + MAC))
      return yield* new ClusterAuthError({ address, message: `${NOT_PROVED}: its answer is not signed with it (a wrong secret)` })
    }
    yield* write(conn, Buffer.concat([Buffer.from([1]), mac(secret, "runner", challenge, theirs)]))
  })

/**
 * The connecting side (a client, or a runner calling another), right after connecting: succeeds
 * once both sides know they share the secret (or both have none).
 */
export const greetRunner = (conn: HandshakeSocket, secret: Redacted.Redacted<string> | undefined, address: string): Effect.Effect<void, ClusterAuthError> =>
  Effect.gen(function*() {
    const greeting = yield* readExactly(conn, MAGIC.length + 1 + CHALLENGE, address, " (is the runner using TLS?)")
    if (!greeting.subarray(0, MAGIC.length).equals(MAGIC)) {
      return yield* new ClusterAuthError({ address, message: "this is not an agent-loop runner (or one older than the cluster handshake)" })
    }
    const wantsSecret = greeting[MAGIC.length] === 1
    if (!wantsSecret) {
      if (secret !== undefined) {
        return yield* new ClusterAuthError({ address, message: "the runner has no cluster secret, and this process has one: refusing an unauthenticated runner" })
      }
      return
    }
    if (secret === undefined) {
      return yield* new ClusterAuthError({
        address,
        message: "the runner requires the cluster secret (AGENT_LOOP_CLUSTER_SECRET or --cluster-secret-file)"
      })
    }
    const challenge = greeting.subarray(MAGIC.length + 1)
    const own = randomBytes(CHALLENGE)
    yield* write(conn, Buffer.concat([own, mac(secret, "peer", challenge, own)]))
    const verdict = yield* readExactly(conn, 1 + MAC, address).pipe(
      // a runner closes right after refusing: the missing verdict is the refusal
      Effect.catchTag("ClusterAuthError", () => Effect.succeed(Buffer.alloc(1 + MAC)))
    )
    if (verdict[0] !== 1) {
      return yield* new ClusterAuthError({ address, message: "the runner refused this process: its cluster secret is not the runner's" })
    }
    if (!sameMac(verdict.subarray(1), mac(secret, "runner", challenge, own))) {
      return yield* new ClusterAuthError({ address, message: "the runner did not prove the cluster secret" })
    }
  })

/** JSON with sorted keys and no `undefined`: the same text on both sides for the same value. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`
  }
  return JSON.stringify(value)
}

/** The signature of a persisted request (`rpc`, its session, its payload without `signature`). */
export const sign = (secret: Redacted.Redacted<string>, rpc: string, sessionKey: string, payload: object): string =>
  mac(secret, "request", Buffer.from(canonical({ rpc, sessionKey, payload }))).toString("base64url")

/** What a signed request carries besides its content (`protocol.ts`). */
export interface Signed {
  /** Random, one per request: a copy of the request under another request id has the same. */
  readonly nonce: string
  /** When the request was made (epoch milliseconds, the client's clock). */
  readonly issuedAt: number
  readonly signature: string
}

/** `payload` with a fresh nonce and the time, signed for `rpc` on `sessionKey`. */
export const signRequest = <P extends object>(
  secret: Redacted.Redacted<string>,
  rpc: string,
  sessionKey: string,
  payload: P
): Effect.Effect<P & Signed> =>
  Effect.map(Clock.currentTimeMillis, (issuedAt) => {
    const unsigned = { ...payload, nonce: randomBytes(16).toString("base64url"), issuedAt }
    return { ...unsigned, signature: sign(secret, rpc, sessionKey, unsigned) }
  })

/**
 * Whether a persisted request may run: always without a secret; with one, only when its
 * `signature` is the HMAC of its content. Why not, when it may not.
 */
export const verify = (
  secret: Redacted.Redacted<string> | undefined,
  rpc: string,
  sessionKey: string,
  payload: { readonly signature?: string | undefined }
): string | undefined => {
  if (secret === undefined) return undefined
  const { signature, ...rest } = payload
  if (signature === undefined) return "the request is not signed with the cluster secret"
  const expected = Buffer.from(sign(secret, rpc, sessionKey, rest))
  return sameMac(Buffer.from(signature), expected) ? undefined : "the request's signature does not match the cluster secret"
}

/** Why a runner refused to run a request, in the turn result it answers with. */
export const refusedRequest = (reason: string) => `the runner refused the request: ${reason}`

/** The cluster secret of the context, if any. */
export const currentSecret: Effect.Effect<Redacted.Redacted<string> | undefined> = Effect.map(
  Effect.serviceOption(ClusterSecret),
  (secret) => (secret._tag === "Some" ? secret.value : undefined)
)
