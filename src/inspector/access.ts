/**
 * Who may use the inspector: the `Host` a request names, and the token.
 *
 * Cookies do not keep to a port: a browser sends the cookies it holds for 127.0.0.1 to every
 * server on 127.0.0.1, whichever port set them. So the page's cookie never holds the token. It
 * holds a key derived from it that opens only the page itself (a shell with no data in it), under a
 * name of this instance's own, `SameSite=Strict`, `HttpOnly`. The data (the API, the live events)
 * needs the token itself in a header (`X-Agent-Loop-Token`, or `Authorization: Bearer`), which the
 * page's script sends and a browser never adds by itself; the script keeps the token in the tab's
 * `sessionStorage`, which belongs to this origin, port included.
 *
 * The `Host` check is the defence against DNS rebinding: a page of `evil.example` whose name is
 * made to resolve to 127.0.0.1 reaches the server, but names its own host, and is refused (421).
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto"
import * as os from "node:os"
import * as Redacted from "effect/Redacted"

/** The header the page sends the token in. */
export const TOKEN_HEADER = "x-agent-loop-token"

/** The names of the loopback interface, which every inspector answers to. */
const LOOPBACK = ["127.0.0.1", "localhost", "[::1]"]

/** Addresses that mean "every interface". */
const WILDCARD = ["0.0.0.0", "[::]"]

const sha256 = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest()

/** Whether `given` is the secret whose digest is `digest`, in time that does not depend on how much matches. */
const matches = (given: string | undefined, digest: Buffer): boolean => given !== undefined && timingSafeEqual(sha256(given), digest)

/** The name of the page's cookie: `agent_loop_` and 16 hex digits derived from the token, so each instance has its own. */
export const cookieName = (token: Redacted.Redacted<string>): string =>
  `agent_loop_${sha256(`agent-loop inspector cookie name\0${Redacted.value(token)}`).toString("hex").slice(0, 16)}`

/** What the page's cookie holds: a key derived from the token that opens the page and nothing else. */
const pageKey = (token: Redacted.Redacted<string>): string =>
  createHmac("sha256", Redacted.value(token)).update("agent-loop inspector page").digest("base64url")

/** An address or name as a `Host` header writes it: lower-case, an IPv6 address in brackets. */
const hostName = (name: string): string => {
  const lower = name.toLowerCase()
  return lower.includes(":") && !lower.startsWith("[") ? `[${lower}]` : lower
}

/** A `Host` header's name and port (`undefined`: none given, port 80). */
const parseHost = (host: string): { readonly name: string; readonly port: string | undefined } | undefined => {
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i.exec(host)
  return match === null ? undefined : { name: match[1]!.toLowerCase(), port: match[2] }
}

/** Every address of this machine's interfaces, and its host name: what a server on every interface is reached by. */
const machineNames = (): ReadonlyArray<string> => [
  os.hostname(),
  ...Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((info) => info.address))
]

/** Where the server listens, as far as it is known. */
export interface Listening {
  readonly hostname: string
  /** Empty for the default port (80). */
  readonly port: string
}

/**
 * The check of the `Host` header: the loopback names, the address the server listens on (for
 * every interface: each interface's address and the machine's name), and `hosts` (a name alone,
 * or `name:port`), each at the server's port; at any port when the port is not known (a handler
 * without a server of its own).
 */
export const hostCheck = (hosts: ReadonlyArray<string>, listening: Listening | undefined): (host: string | undefined) => boolean => {
  const names = new Set(LOOPBACK)
  const exact = new Set<string>()
  for (const entry of hosts) {
    // written as a Host header writes it, or an IPv6 address without its brackets
    const parsed = parseHost(entry) ?? parseHost(`[${entry}]`)
    if (parsed === undefined) continue
    if (parsed.port === undefined) names.add(parsed.name)
    else exact.add(`${parsed.name}:${parsed.port}`)
  }
  if (listening !== undefined) {
    const bound = hostName(listening.hostname)
    for (const name of WILDCARD.includes(bound) ? machineNames() : [bound]) names.add(hostName(name))
  }
  const port = listening === undefined ? undefined : listening.port === "" ? "80" : listening.port
  return (host) => {
    const parsed = host === undefined ? undefined : parseHost(host)
    if (parsed === undefined) return false
    if (exact.has(`${parsed.name}:${parsed.port ?? "80"}`)) return true
    return names.has(parsed.name) && (port === undefined || (parsed.port ?? "80") === port)
  }
}

/** The token's checks, and the page's cookie. */
export interface Access {
  /** The page's cookie name, per instance. */
  readonly cookieName: string
  /** Whether the query's `token` is the token (it opens the page, and sets the cookie). */
  readonly query: (given: string | null) => boolean
  /** Whether the request's headers carry the token (`X-Agent-Loop-Token`, `Authorization: Bearer`): what opens the data. */
  readonly header: (headers: Readonly<Record<string, string | undefined>>) => boolean
  /** Whether the request carries the page's cookie (it opens the page only). */
  readonly cookie: (cookies: Readonly<Record<string, string | undefined>>) => boolean
  /** The `Set-Cookie` value that lets the page be opened again without the token in its URL. */
  readonly setCookie: (path: string) => string
}

/** The checks of `token`. */
export const make = (token: Redacted.Redacted<string>): Access => {
  const tokenDigest = sha256(Redacted.value(token))
  const key = pageKey(token)
  const keyDigest = sha256(key)
  const name = cookieName(token)
  return {
    cookieName: name,
    query: (given) => matches(given ?? undefined, tokenDigest),
    header: (headers) => {
      const bearer = /^Bearer +(\S+)$/i.exec(headers["authorization"] ?? "")?.[1]
      return matches(headers[TOKEN_HEADER], tokenDigest) || matches(bearer, tokenDigest)
    },
    cookie: (cookies) => matches(cookies[name], keyDigest),
    setCookie: (path) => `${name}=${key}; Path=${path}; HttpOnly; SameSite=Strict`
  }
}
