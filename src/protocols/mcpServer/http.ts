/**
 * The MCP server over streamable HTTP (`agent-loop mcp serve --http PORT`): one endpoint, `/mcp`,
 * behind a bearer token; an MCP session per client, each with its own server (`server.ts`). A
 * request without the token (or with another) gets an empty 401 before anything else is read.
 */
import { randomUUID, timingSafeEqual } from "node:crypto"
import * as http from "node:http"
import type * as StreamableHttp from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as McpServerSdk from "@modelcontextprotocol/sdk/server/index.js"

/** Where and how the endpoint listens. */
export interface HttpOptions {
  readonly host: string
  /** 0: any free port (the address says which). */
  readonly port: number
  readonly token: Redacted.Redacted<string>
}

/** Whether `header` is `Bearer TOKEN`, compared in constant time. */
const authorized = (header: string | undefined, token: Redacted.Redacted<string>): boolean => {
  if (header === undefined || !header.startsWith("Bearer ")) return false
  const given = Buffer.from(header.slice("Bearer ".length))
  const expected = Buffer.from(Redacted.value(token))
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/** Listens until the scope closes; the endpoint's URL. */
export const listen = (
  transports: typeof StreamableHttp,
  server: { readonly connection: () => McpServerSdk.Server },
  options: HttpOptions
): Effect.Effect<string, never, Scope.Scope> =>
  Effect.gen(function*() {
    const sessions = new Map<string, StreamableHttp.StreamableHTTPServerTransport>()
    const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (!authorized(req.headers.authorization, options.token)) return void res.writeHead(401).end()
      if (new URL(req.url ?? "/", "http://localhost").pathname !== "/mcp") return void res.writeHead(404).end()
      const id = req.headers["mcp-session-id"]
      let transport = typeof id === "string" ? sessions.get(id) : undefined
      if (transport === undefined) {
        if (typeof id === "string") {
          const body = JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "unknown MCP session" }, id: null })
          return void res.writeHead(404, { "content-type": "application/json" }).end(body)
        }
        // a new session (the transport answers anything but `initialize` with an error)
        const made: StreamableHttp.StreamableHTTPServerTransport = new transports.StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sessionId) => void sessions.set(sessionId, made)
        })
        made.onclose = () => {
          if (made.sessionId !== undefined) sessions.delete(made.sessionId)
        }
        await server.connection().connect(made)
        transport = made
      }
      await transport.handleRequest(req, res)
    }
    const listener = http.createServer((req, res) => {
      handle(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500)
        res.end()
      })
    })
    yield* Effect.acquireRelease(
      Effect.callback<void>((resume) => {
        listener.listen(options.port, options.host, () => resume(Effect.void))
      }),
      () =>
        Effect.callback<void>((resume) => {
          for (const transport of sessions.values()) void transport.close()
          listener.close(() => resume(Effect.void))
          listener.closeAllConnections()
        })
    )
    const address = listener.address()
    const port = typeof address === "object" && address !== null ? address.port : options.port
    return `http://${options.host}:${port}/mcp`
  })
