/**
 * Why a connection failed, in words a user can act on: "connection refused by 127.0.0.1:9" rather
 * than the HTTP client's "Transport error". Shared by the HTTP providers, MCP over HTTP and the
 * cluster client, so a refused port, an unknown host name, an untrusted certificate, a timeout and
 * a reset read the same wherever they happen.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"

/** What went wrong with a connection, recognised from the system or undici error beneath it. */
export type ConnectionFailureKind = "refused" | "dns" | "tls" | "timeout" | "reset" | "unreachable"

/** A recognised connection failure. */
export interface ConnectionFailure {
  readonly kind: ConnectionFailureKind
  /** `host:port` (from the error, else from the URL), when known. */
  readonly target: string | undefined
  /** One sentence naming the cause and the target. */
  readonly text: string
}

/** OpenSSL's and Node's codes for a certificate that could not be verified. */
const tlsCodes = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE",
  "ERR_TLS_CERT_ALTNAME_INVALID"
])

const kindOf = (code: string): ConnectionFailureKind | undefined => {
  if (code === "ECONNREFUSED") return "refused"
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EAI_NONAME") return "dns"
  if (tlsCodes.has(code)) return "tls"
  if (code === "ETIMEDOUT" || code === "UND_ERR_CONNECT_TIMEOUT" || code === "UND_ERR_HEADERS_TIMEOUT") return "timeout"
  if (code === "ECONNRESET" || code === "EPIPE" || code === "UND_ERR_SOCKET" || code === "ECONNABORTED") return "reset"
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH" || code === "EHOSTDOWN" || code === "ENETDOWN") return "unreachable"
  return undefined
}

type Node = Record<string, unknown>

const asNode = (u: unknown): Node | undefined => (typeof u === "object" && u !== null ? u as Node : undefined)

/**
 * The errors beneath `error`, outermost first: Effect's `reason` and `cause`, `fetch`'s `cause`,
 * and the attempts of an `AggregateError` (a host name with several addresses), bounded so that a
 * cyclic chain ends.
 */
const chainOf = (error: unknown): ReadonlyArray<Node> => {
  const out: Array<Node> = []
  const queue: Array<unknown> = [error]
  while (queue.length > 0 && out.length < 16) {
    const node = asNode(queue.shift())
    if (node === undefined || out.includes(node)) continue
    out.push(node)
    queue.push(node["reason"], node["cause"])
    if (Array.isArray(node["errors"])) queue.push(...node["errors"])
  }
  return out
}

const text = (u: unknown): string | undefined => (typeof u === "string" && u !== "" ? u : undefined)

/** The URL of the request an HTTP client error carries (Effect's `HttpClientError`). */
const requestUrl = (node: Node): string | undefined => text(asNode(node["request"])?.["url"])

/** `host:port` of a URL, with the scheme's default port when it names none. */
export const targetOfUrl = (url: string | undefined): string | undefined => {
  if (url === undefined) return undefined
  try {
    const parsed = new URL(url)
    const port = parsed.port !== "" ? parsed.port : parsed.protocol === "https:" ? "443" : parsed.protocol === "http:" ? "80" : ""
    return port === "" ? parsed.hostname : `${parsed.hostname}:${port}`
  } catch {
    return undefined
  }
}

/** The URL's `host:port` (the name the user gave), else the address and port in the error. */
const targetOf = (node: Node, url: string | undefined): string | undefined => {
  const fromUrl = targetOfUrl(url)
  if (fromUrl !== undefined) return fromUrl
  const host = text(node["hostname"]) ?? text(node["host"]) ?? text(node["address"])
  const port = typeof node["port"] === "number" || typeof node["port"] === "string" ? String(node["port"]) : undefined
  return host === undefined ? undefined : port === undefined ? host : `${host}:${port}`
}

const sentence = (kind: ConnectionFailureKind, target: string | undefined, code: string, message: string | undefined): string => {
  const at = target === undefined ? "" : ` ${target}`
  switch (kind) {
    case "refused":
      return `connection refused by${at || " the server"} (is the server running, and is the port right?)`
    case "dns":
      return code === "EAI_AGAIN"
        ? `DNS lookup failed for${at || " the host"} (temporary failure: is the network up?)`
        : `DNS name not found:${at || " the host"}`
    case "tls":
      return `TLS certificate of${at || " the server"} not trusted (${code}${message === undefined ? "" : `: ${message}`}); ` +
        `a private certificate authority can be added with NODE_EXTRA_CA_CERTS=FILE.pem`
    case "timeout":
      return `connection to${at || " the server"} timed out`
    case "reset":
      return `connection to${at || " the server"} was reset (closed by the server or a proxy)`
    case "unreachable":
      return `${target ?? "the host"} is unreachable (${code})`
  }
}

/**
 * The connection failure beneath `error`, if there is one; `url` supplies the host and port when
 * the system error does not carry them (a reset, a certificate); by default, that of the request an
 * HTTP client error in the chain was sending.
 */
export const connectionFailure = (error: unknown, url?: string): ConnectionFailure | undefined => {
  const chain = chainOf(error)
  const target = url ?? chain.map(requestUrl).find((u) => u !== undefined)
  for (const node of chain) {
    const code = text(node["code"])
    const kind = code === undefined ? undefined : kindOf(code)
    if (code === undefined || kind === undefined) continue
    const where = targetOf(node, target)
    // Node's own advice after a ";" is about system CAs; ours follows
    const message = kind === "tls" ? text(node["message"])?.split(";")[0] : undefined
    return { kind, target: where, text: sentence(kind, where, code, message) }
  }
  return undefined
}

/**
 * SQLSTATEs of a database that is restarting or was cut off, after which the same statement on a
 * new connection may succeed: class `08` (connection exception), `57P01` (admin shutdown), `57P02`
 * (crash shutdown), `57P03` (cannot connect now: starting up), `53300` (too many connections).
 */
const transientSqlState = (code: string): boolean =>
  code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03" || code === "53300"

/** Connection failures that may pass: a refused, reset or timed-out connection, an unreachable host, a DNS lookup that failed for now. */
const transientKinds: ReadonlySet<ConnectionFailureKind> = new Set(["refused", "reset", "timeout", "unreachable"])

/**
 * Whether `error` is a failure that the same call may not meet again in a moment: a database
 * restarting or cut off (see `transientSqlState`), a connection refused, reset or timed out, or a
 * driver's connection error with no code beneath it (a connection closed under a statement). Never
 * an authentication failure (SQLSTATE class `28`), a certificate that is not trusted, an unknown
 * host name, or an error of the statement itself. The one classifier of transient failures: every
 * retry of a database call (the cluster's, the session store's commits) asks it.
 */
export const isTransient = (error: unknown): boolean => {
  const chain = chainOf(error)
  let connectionError = false
  let transient = false
  for (const node of chain) {
    // an error that says so itself (a session store's, which keeps only the words of its cause)
    if (node["transient"] === true) transient = true
    const code = text(node["code"])
    if (code !== undefined) {
      if (/^28[0-9A-Z]{3}$/.test(code)) return false
      if (/^[0-9A-Z]{5}$/.test(code) && transientSqlState(code)) transient = true
      const kind = kindOf(code)
      if (kind === "tls" || (kind === "dns" && code !== "EAI_AGAIN")) return false
      if ((kind !== undefined && transientKinds.has(kind)) || code === "EAI_AGAIN") transient = true
    }
    if (node["_tag"] === "ConnectionError" || node["_tag"] === "AuthenticationError") {
      if (node["_tag"] === "AuthenticationError") return false
      connectionError = true
    }
  }
  return transient || connectionError
}

/** The SQLSTATE beneath `error` (a database's own error code, five characters), if any. */
export const sqlState = (error: unknown): string | undefined => {
  for (const node of chainOf(error)) {
    const code = text(node["code"])
    if (code !== undefined && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith("E")) return code
  }
  return undefined
}

/** How a call is retried through a transient failure: first after `first`, doubling up to `cap`, for at most `within` in all. */
export interface TransientRetry {
  /** Default 100 ms. */
  readonly first?: Duration.Input
  /** Default 2 s. */
  readonly cap?: Duration.Input
  /** Default 30 s: a database restart takes seconds; past this the failure is the caller's. */
  readonly within?: Duration.Input
}

/** The backoff of `retryTransient`, on the Clock (so a `TestClock` drives it). */
export const transientSchedule = (options: TransientRetry = {}): Schedule.Schedule<unknown> => {
  const cap = Duration.fromInputUnsafe(options.cap ?? Duration.seconds(2))
  return Schedule.max([
    Schedule.exponential(options.first ?? Duration.millis(100)).pipe(
      Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, cap)))
    ),
    Schedule.during(options.within ?? Duration.seconds(30))
  ])
}

/**
 * `effect`, retried while its failure `isTransient` with bounded backoff (`transientSchedule`);
 * any other failure, or the last transient one, passes as it is.
 */
export const retryTransient = <A, E, R>(effect: Effect.Effect<A, E, R>, options: TransientRetry = {}): Effect.Effect<A, E, R> =>
  Effect.retry(effect, { while: isTransient, schedule: transientSchedule(options) })

/**
 * `retryTransient`, then any failure left a defect: for database calls without which the caller
 * cannot go on safely (a claim, a fence), which a database restart must not turn into a defect.
 */
export const retryTransientOrDie = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, never, R> =>
  Effect.orDie(retryTransient(effect))

/**
 * Whether a transient failure happened before the statement could reach the database: no
 * connection was made (refused, a DNS lookup that failed for now, `57P03` starting up, `53300` too
 * many connections, the driver's failure to connect). Such a call did nothing, so even a write that
 * is not idempotent may be made again; a connection lost under a statement is not this (it may
 * have been applied).
 */
export const neverSent = (error: unknown): boolean => {
  if (!isTransient(error)) return false
  for (const node of chainOf(error)) {
    const code = text(node["code"])
    if (code === "ECONNREFUSED" || code === "EAI_AGAIN" || code === "57P03" || code === "53300") return true
    if (node["_tag"] === "ConnectionError" && node["operation"] === "connect") return true
  }
  return false
}
