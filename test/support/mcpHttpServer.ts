/**
 * A Streamable HTTP MCP server on 127.0.0.1 for tests, speaking the stateful revisions
 * (2024-11-05 … 2025-11-25) the way the MCP SDKs do: `initialize` answers with the requested
 * revision if supported, else its newest, and opens a session (`mcp-session-id`); every later
 * request must carry that session and the negotiated revision in `mcp-protocol-version`, or it
 * is refused with 400. One tool, `lookup`, answers `key=value`. Replies are JSON, not SSE. A
 * `guard` sees each request first (a bearer token check, the resource's OAuth metadata).
 */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import * as http from "node:http"

/** A request as the server received it. */
export interface HttpMcpRequest {
  readonly httpMethod: string
  readonly method: string | undefined
  readonly headers: http.IncomingHttpHeaders
}

/** A running server. */
export interface HttpMcpServer {
  readonly url: string
  readonly requests: ReadonlyArray<HttpMcpRequest>
}

/**
 * What the server asks of each request before reading it: `undefined` lets it in; a refusal is
 * answered as given (a 401 with its `WWW-Authenticate`, say).
 */
export type Guard = (
  req: http.IncomingMessage
) => { readonly status: number; readonly headers: Record<string, string>; readonly body?: unknown } | undefined

/** Starts a server speaking `versions` (newest first); it stops with the scope. */
export const start = (versions: ReadonlyArray<string>, guard?: Guard) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ server: http.Server; requests: Array<HttpMcpRequest> }>((ok) => {
        const requests: Array<HttpMcpRequest> = []
        const sessions = new Map<string, string>()
        const server = http.createServer((req, res) => {
          const parts: Array<Buffer> = []
          req.on("data", (b: Buffer) => parts.push(b))
          req.on("end", () => {
            const reply = (status: number, body?: unknown, headers: Record<string, string> = {}) => {
              res.writeHead(status, { "content-type": "application/json", ...headers })
              res.end(body === undefined ? undefined : JSON.stringify(body))
            }
            const refused = guard?.(req)
            if (refused !== undefined) {
              requests.push({ httpMethod: req.method ?? "", method: undefined, headers: req.headers })
              return reply(refused.status, refused.body ?? { error: "unauthorized" }, refused.headers)
            }
            const session = req.headers["mcp-session-id"] as string | undefined
            if (req.method === "DELETE") {
              requests.push({ httpMethod: "DELETE", method: undefined, headers: req.headers })
              if (session !== undefined) sessions.delete(session)
              return reply(200)
            }
            const message = JSON.parse(Buffer.concat(parts).toString("utf8"))
            requests.push({ httpMethod: req.method ?? "", method: message.method, headers: req.headers })
            const { id, method, params } = message
            if (method === "initialize") {
              const version = versions.includes(params.protocolVersion) ? params.protocolVersion : versions[0]!
              const created = randomUUID()
              sessions.set(created, version)
              return reply(200, {
                jsonrpc: "2.0",
                id,
                result: { protocolVersion: version, capabilities: { tools: {} }, serverInfo: { name: "http-test", version: "1" } }
              }, { "mcp-session-id": created })
            }
            const negotiated = session === undefined ? undefined : sessions.get(session)
            if (negotiated === undefined) return reply(404, { jsonrpc: "2.0", id, error: { code: -32001, message: "Session not found" } })
            if (req.headers["mcp-protocol-version"] !== negotiated) {
              return reply(400, { jsonrpc: "2.0", id: null, error: { code: -32000, message: "Bad Request: Unsupported protocol version" } })
            }
            if (id === undefined) return reply(202)
            if (method === "tools/list") {
              return reply(200, {
                jsonrpc: "2.0",
                id,
                result: {
                  tools: [{
                    name: "lookup",
                    description: "Reads a value",
                    inputSchema: { type: "object", properties: { key: { type: "string" } } }
                  }]
                }
              })
            }
            if (method === "tools/call") {
              return reply(200, { jsonrpc: "2.0", id, result: { content: [{ type: "text", text: `${params.arguments.key}=value` }] } })
            }
            return reply(200, { jsonrpc: "2.0", id, error: { code: -32601, message: `unknown method ${method}` } })
          })
        })
        server.listen(0, "127.0.0.1", () => ok({ server, requests }))
      })
    ),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((ok) => {
          server.closeAllConnections()
          server.close(() => ok())
        })
      )
  ).pipe(Effect.map(({ requests, server }): HttpMcpServer => ({
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`,
    requests
  })))
