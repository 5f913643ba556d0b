/**
 * Why a connection failed, in words a user can act on: "connection refused by 127.0.0.1:9" rather
 * than the HTTP client's "Transport error". Shared by the HTTP providers, MCP over HTTP and the
 * cluster client, so a refused port, an unknown host name, an untrusted certificate, a timeout and
 * a reset read the same wherever they happen.
 */

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
