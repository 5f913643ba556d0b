/**
 * `server-everything` (from npm) behind the MCP SDK's own HTTP+SSE server transport, the older
 * transport of revision 2024-11-05, on 127.0.0.1: `GET /sse` opens the event stream, whose
 * `endpoint` event names `POST /message?sessionId=…`. Nothing else is served (a `POST /sse`, as a
 * Streamable HTTP client sends first, is a 404), so a client reaches it only through HTTP+SSE.
 * It stops with the scope.
 */
import { Effect } from "effect"
import * as http from "node:http"
import { createRequire } from "node:module"
import { fileURLToPath, pathToFileURL } from "node:url"

const everything = fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-everything/", import.meta.url))

interface SdkTransport {
  readonly sessionId: string
  handlePostMessage(req: http.IncomingMessage, res: http.ServerResponse): Promise<void>
  close(): Promise<void>
}

/** A running server: its SSE URL and the requests it saw (`GET /sse`, `POST /message`, …). */
export interface SseServer {
  readonly url: string
  readonly requests: ReadonlyArray<string>
}

/** Starts the server; `headers` are required on every request (say, an `authorization`), or it answers 401. */
export const start = (headers: Readonly<Record<string, string>> = {}) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      // the SDK server-everything itself uses, wherever npm put it (its ESM build, as the server's)
      const sse = createRequire(`${everything}package.json`).resolve("@modelcontextprotocol/sdk/server/sse.js").replace(/[/\\]dist[/\\]cjs[/\\]/, "/dist/esm/")
      const { SSEServerTransport } = await import(pathToFileURL(sse).href) as { SSEServerTransport: new(endpoint: string, res: http.ServerResponse) => SdkTransport }
      const { createServer } = await import(pathToFileURL(`${everything}dist/server/index.js`).href) as {
        createServer: () => { server: { connect: (t: SdkTransport) => Promise<void> }; cleanup: (id?: string) => void }
      }
      const sessions = new Map<string, { transport: SdkTransport; cleanup: () => void }>()
      const requests: Array<string> = []
      const server = http.createServer((req, res) => {
        const url = new URL(req.url ?? "/", "http://127.0.0.1")
        requests.push(`${req.method} ${url.pathname}`)
        if (Object.entries(headers).some(([name, value]) => req.headers[name] !== value)) {
          res.writeHead(401).end()
          return
        }
        if (req.method === "GET" && url.pathname === "/sse") {
          const transport = new SSEServerTransport("/message", res)
          const made = createServer()
          sessions.set(transport.sessionId, { transport, cleanup: () => made.cleanup(transport.sessionId) })
          void made.server.connect(transport)
          return
        }
        const session = sessions.get(url.searchParams.get("sessionId") ?? "")
        if (req.method === "POST" && url.pathname === "/message" && session !== undefined) {
          void session.transport.handlePostMessage(req, res)
          return
        }
        res.writeHead(404).end()
      })
      await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok))
      const { port } = server.address() as { port: number }
      return { server, sessions, requests, url: `http://127.0.0.1:${port}/sse` }
    }),
    ({ server, sessions }) =>
      Effect.promise(async () => {
        for (const { transport, cleanup } of sessions.values()) {
          cleanup()
          await transport.close().catch(() => undefined)
        }
        server.closeAllConnections()
        await new Promise((ok) => server.close(ok))
      })
  ).pipe(Effect.map(({ requests, url }): SseServer => ({ url, requests })))
