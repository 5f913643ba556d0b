/**
 * A loopback OTLP/HTTP receiver for tests: a `node:http` server on 127.0.0.1 that keeps every
 * request and answers 200, and readers of the JSON encoding's spans.
 */
import * as http from "node:http"

/** One request the receiver got. */
export interface Received {
  readonly path: string
  readonly contentType: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: Buffer
}

/** An OTLP/HTTP receiver on 127.0.0.1 that keeps every request and answers 200. */
export const startReceiver = async () => {
  const received: Array<Received> = []
  const server = http.createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      received.push({ path: request.url ?? "", contentType: request.headers["content-type"] ?? "", headers: request.headers, body: Buffer.concat(chunks) })
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    received,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}

/** A span as the tests read it (ids in hex, attributes as plain values). */
export interface SpanView {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string
  readonly name: string
  readonly attributes: Record<string, unknown>
  /** OTLP's span kind (3: CLIENT) and status code (2: ERROR), where the decoding reads them. */
  readonly kind?: number
  readonly statusCode?: number
}

export type JsonAttribute = { key: string; value: Record<string, unknown> }
export const jsonAttributes = (list: ReadonlyArray<JsonAttribute> = []) =>
  Object.fromEntries(list.map(({ key, value }) => [key, value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.doubleValue ?? value.boolValue)]))

export const jsonSpans = (bodies: ReadonlyArray<Received>) =>
  bodies.flatMap((r) => {
    const data = JSON.parse(r.body.toString("utf8")) as { resourceSpans: Array<{ resource: { attributes: Array<JsonAttribute> }; scopeSpans: Array<{ spans: Array<any> }> }> }
    return data.resourceSpans.flatMap((rs) =>
      rs.scopeSpans.flatMap((ss) =>
        ss.spans.map((s): SpanView & { resource: Record<string, unknown> } => ({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? "",
          name: s.name,
          attributes: jsonAttributes(s.attributes),
          kind: s.kind,
          statusCode: s.status?.code ?? 0,
          resource: jsonAttributes(rs.resource.attributes)
        }))
      )
    )
  })

