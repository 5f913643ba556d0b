/**
 * A loopback HTTP server for provider tests: it answers each request with the next scripted
 * response, writing the body in the exact pieces given (so tests choose where chunk boundaries
 * fall, e.g. inside JSON or inside a multi-byte UTF-8 character), and records what it received.
 */
import { Effect } from "effect"
import * as http from "node:http"

/** One scripted HTTP response. */
export interface WireResponse {
  readonly status?: number
  readonly headers?: Record<string, string>
  /** Body pieces, each written (and flushed) separately. */
  readonly body?: ReadonlyArray<string | Uint8Array>
  /** Destroy the socket after the body pieces instead of ending the response. */
  readonly drop?: boolean
  /** Keep the response open after the body pieces, until the client goes away. */
  readonly hold?: boolean
}

/** A request as the server received it. */
export interface ReceivedRequest {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
  readonly json: any
}

/** A running wire server. */
export interface WireServer {
  readonly url: string
  readonly requests: ReadonlyArray<ReceivedRequest>
  /** Stops accepting connections; later requests fail at the transport. */
  readonly close: Effect.Effect<void>
  /** Completes when a client has gone away from a response that had not ended. */
  readonly disconnected: Effect.Effect<void>
}

/** Splits a text into byte pieces of `size` bytes (boundaries may cut UTF-8 characters). */
export const bytesEvery = (text: string, size: number): ReadonlyArray<Uint8Array> => {
  const bytes = Buffer.from(text, "utf8")
  const out: Array<Uint8Array> = []
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size))
  return out
}

/** The SSE frame of a JSON payload, as OpenAI sends it. */
export const data = (payload: unknown): string => `data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`

/** A named SSE frame, as Anthropic sends it. */
export const event = (name: string, payload: unknown): string => `event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`

const write = (res: http.ServerResponse, piece: string | Uint8Array) =>
  new Promise<void>((ok) => res.write(piece, () => setImmediate(ok)))

/**
 * Starts a server on 127.0.0.1 answering with `responses` in order (the last one repeats), or
 * with what a function computes from each request (a server with rules of its own).
 */
export const start = (responses: ReadonlyArray<WireResponse> | ((request: ReceivedRequest, index: number) => WireResponse)) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ server: http.Server; requests: Array<ReceivedRequest>; disconnected: Promise<void> }>((ok) => {
        const requests: Array<ReceivedRequest> = []
        let onDisconnect = () => {}
        const disconnected = new Promise<void>((resolve) => onDisconnect = resolve)
        const server = http.createServer((req, res) => {
          res.on("close", () => {
            if (!res.writableFinished) onDisconnect()
          })
          const parts: Array<Buffer> = []
          req.on("data", (b: Buffer) => parts.push(b))
          req.on("end", async () => {
            const body = Buffer.concat(parts).toString("utf8")
            let json: unknown = undefined
            try {
              json = JSON.parse(body)
            } catch {
              json = undefined
            }
            const received = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body, json }
            const response = typeof responses === "function"
              ? responses(received, requests.length)
              : responses[Math.min(requests.length, responses.length - 1)]!
            requests.push(received)
            res.writeHead(response.status ?? 200, { "content-type": "text/event-stream", ...response.headers })
            res.flushHeaders()
            for (const piece of response.body ?? []) await write(res, piece)
            if (response.drop) res.socket?.destroy()
            else if (!response.hold) res.end()
          })
        })
        server.listen(0, "127.0.0.1", () => ok({ server, requests, disconnected }))
      })
    ),
    ({ server }) => closeServer(server)
  ).pipe(Effect.map(({ disconnected, requests, server }): WireServer => ({
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    requests,
    close: closeServer(server),
    disconnected: Effect.promise(() => disconnected)
  })))

const closeServer = (server: http.Server) =>
  Effect.promise(() =>
    new Promise<void>((ok) => {
      if (!server.listening) return ok()
      server.closeAllConnections()
      server.close(() => ok())
    })
  )
