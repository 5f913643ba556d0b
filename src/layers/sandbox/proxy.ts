/**
 * The sandbox's HTTP proxy: the one way out for a confined command. It listens on a Unix socket
 * (bound into the sandbox, where `bridge.ts` makes it a loopback port) and serves plain HTTP
 * forwarding and HTTPS `CONNECT` to the allowed hosts only; anything else gets 403 with a body
 * saying so. The host is checked again on every request and resolved again on every connection,
 * and the proxy connects to the address it checked (a name that resolves elsewhere a moment later
 * gains nothing). A wildcard never reaches a loopback, private, link-local or metadata address
 * (`isPublicAddress`): only a host named literally in the list does (`localhost`, `127.0.0.1:8080`).
 */
import * as dns from "node:dns"
import * as http from "node:http"
import * as net from "node:net"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { isPublicAddress } from "../../tools/netAddress.ts"
import { SandboxError } from "../../services/Sandbox.ts"

/** The header every refusal of the proxy carries, and the start of its body. */
export const DENIED_HEADER = "x-agent-loop-sandbox"
export const DENIED_TEXT = "agent-loop sandbox: not allowed:"

/** How a host matched the allowed list: by its own name, or by a wildcard. */
export type HostMatch = "named" | "wildcard" | "no"

interface Pattern {
  readonly host: string
  readonly port: number | undefined
}

const parsePattern = (text: string): Pattern => {
  const t = text.trim().toLowerCase()
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(t)
  if (v6 !== null) return { host: v6[1]!, port: v6[2] === undefined ? undefined : Number(v6[2]) }
  const at = t.lastIndexOf(":")
  if (at > 0 && /^\d+$/.test(t.slice(at + 1)) && !t.slice(0, at).includes(":")) {
    return { host: t.slice(0, at), port: Number(t.slice(at + 1)) }
  }
  return { host: t, port: undefined }
}

const bare = (host: string) => host.toLowerCase().replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "")

/**
 * How `host:port` matches `patterns` (`example.com`, `*.example.com` for its subdomains, `*` for
 * any host, each with an optional `:port`, `[::1]:8080` for IPv6). A named match wins.
 */
export const matchHost = (patterns: ReadonlyArray<string>, host: string, port: number): HostMatch => {
  const name = bare(host)
  let found: HostMatch = "no"
  for (const pattern of patterns.map(parsePattern)) {
    if (pattern.port !== undefined && pattern.port !== port) continue
    if (pattern.host === name) return "named"
    if (pattern.host === "*" || (pattern.host.startsWith("*.") && name.endsWith(pattern.host.slice(1)))) found = "wildcard"
  }
  return found
}

/** Resolves the host: an IP literal as it is, a name by DNS. */
type Lookup = (host: string) => Promise<ReadonlyArray<string>>
const lookupAll: Lookup = async (host) =>
  net.isIP(host) !== 0 ? [host] : (await dns.promises.lookup(host, { all: true, verbatim: true })).map((a) => a.address)

/** The address to connect to for `host:port`, or why not. */
export const checkTarget = async (
  patterns: ReadonlyArray<string>,
  host: string,
  port: number,
  lookup: Lookup = lookupAll
): Promise<{ readonly address: string } | { readonly refused: string; readonly status: number }> => {
  const match = matchHost(patterns, host, port)
  const name = bare(host)
  if (match === "no") return { status: 403, refused: `${DENIED_TEXT} ${name}:${port} is not in the sandbox's allowed hosts` }
  let addresses: ReadonlyArray<string>
  try {
    addresses = await lookup(name)
  } catch (e) {
    return { status: 502, refused: `agent-loop sandbox: cannot resolve ${name}: ${(e as NodeJS.ErrnoException).code ?? String(e)}` }
  }
  if (addresses.length === 0) return { status: 502, refused: `agent-loop sandbox: ${name} has no address` }
  const notPublic = addresses.find((a) => !isPublicAddress(a))
  if (notPublic !== undefined && match !== "named") {
    return {
      status: 403,
      refused: `${DENIED_TEXT} ${name} resolves to ${notPublic}, not a public address; only a host named in the allowed list reaches it`
    }
  }
  return { address: addresses[0]! }
}

const HOP_HEADERS = new Set(["proxy-connection", "proxy-authorization", "connection", "keep-alive", "te", "trailer", "upgrade"])

const refuse = (res: http.ServerResponse, status: number, text: string) => {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", [DENIED_HEADER]: "denied", connection: "close" })
  res.end(`${text}\n`)
}

/** The proxy's request handler: plain HTTP, forwarded to the checked address. */
const forward = (patterns: ReadonlyArray<string>, lookup: Lookup) => (req: http.IncomingMessage, res: http.ServerResponse) => {
  let url: URL
  try {
    url = new URL(req.url ?? "")
  } catch {
    return refuse(res, 400, "agent-loop sandbox: a proxy request needs an absolute http:// URL")
  }
  if (url.protocol !== "http:") return refuse(res, 400, `agent-loop sandbox: only http:// is forwarded (https goes through CONNECT), not ${url.protocol}`)
  const port = url.port === "" ? 80 : Number(url.port)
  void checkTarget(patterns, url.hostname, port, lookup).then((target) => {
    if ("refused" in target) return refuse(res, target.status, target.refused)
    const headers: Record<string, string | Array<string>> = {}
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined && !HOP_HEADERS.has(name)) headers[name] = value
    const upstream = http.request({
      host: target.address,
      port,
      method: req.method,
      path: `${url.pathname}${url.search}`,
      headers,
      setHost: false
    }, (reply) => {
      res.writeHead(reply.statusCode ?? 502, reply.headers)
      reply.pipe(res)
    })
    upstream.on("error", (e) => res.headersSent ? res.destroy() : refuse(res, 502, `agent-loop sandbox: ${url.host}: ${e.message}`))
    // a command killed mid-request (its timeout, an interrupt) leaves no upstream request behind
    res.on("close", () => upstream.destroy())
    req.pipe(upstream)
  })
}

/** `CONNECT host:port`: a tunnel to the checked address. */
const tunnel = (patterns: ReadonlyArray<string>, lookup: Lookup) => (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
  client.on("error", () => client.destroy())
  const target = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(req.url ?? "")
  const answer = (status: string, text: string) =>
    client.end(`HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\n${DENIED_HEADER}: denied\r\nconnection: close\r\n` +
      `content-length: ${Buffer.byteLength(text) + 1}\r\n\r\n${text}\n`)
  if (target === null) return answer("400 Bad Request", "agent-loop sandbox: CONNECT needs host:port")
  const port = Number(target[2])
  void checkTarget(patterns, target[1]!, port, lookup).then((checked) => {
    if ("refused" in checked) return answer(checked.status === 403 ? "403 Forbidden" : "502 Bad Gateway", checked.refused)
    const upstream = net.connect(port, checked.address)
    let connected = false
    upstream.once("connect", () => {
      connected = true
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n")
      if (head.length > 0) upstream.write(head)
      upstream.pipe(client)
      client.pipe(upstream)
    })
    upstream.on("error", (e) => connected ? client.destroy() : answer("502 Bad Gateway", `agent-loop sandbox: ${e.message}`))
    client.on("close", () => upstream.destroy())
  })
}

/** Where the proxy listens: a Unix socket (Linux, bound into the sandbox) or a loopback port (macOS). */
export type Listen = { readonly socket: string } | { readonly host: "127.0.0.1"; readonly port: number }

/**
 * Runs the proxy at `listen` for as long as the scope lasts, letting through the hosts of
 * `patterns` only; the port it listens on (0 for a socket).
 */
export const serve = (
  listen: Listen,
  patterns: ReadonlyArray<string>,
  lookup: Lookup = lookupAll
): Effect.Effect<number, SandboxError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<http.Server, SandboxError>((resume) => {
      const server = http.createServer(forward(patterns, lookup))
      server.on("connect", tunnel(patterns, lookup))
      server.on("clientError", (_, socket) => socket.destroy())
      server.once("error", (e) =>
        resume(Effect.fail(new SandboxError({ reason: "SetupFailed", message: `The sandbox's network proxy cannot start: ${e.message}` }))))
      const ready = () => resume(Effect.succeed(server))
      if ("socket" in listen) server.listen(listen.socket, ready)
      else server.listen(listen.port, listen.host, ready)
    }),
    (server) => Effect.sync(() => {
      server.close()
      server.closeAllConnections()
    })
  ).pipe(Effect.map((server) => {
    const address = server.address()
    return typeof address === "object" && address !== null ? address.port : 0
  }))
