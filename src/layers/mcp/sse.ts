/**
 * The older HTTP+SSE transport (MCP 2024-11-05), which `effect/ai` does not carry: the client
 * opens an event stream with a GET on the server's URL; the server's first event, `endpoint`, names
 * the URL (on the same origin) to POST messages to; every answer comes back as a `message` event
 * on the stream.
 *
 * Servers still deployed this way are reached through it when a config says `"type": "sse"`, or
 * when an `"http"` server answers Streamable HTTP with a 4xx status (`connect.ts`). The stream
 * lives as long as the scope; a stream that ends or fails fails every request still waiting.
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as McpClientError from "effect/ai/McpClientError"
import type * as McpClient from "effect/ai/McpClient"
import type * as McpSchema from "effect/ai/McpSchema"
import * as Sse from "effect/encoding/Sse"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"

const clientError = (reason: McpClientError.McpClientErrorReason) => new McpClientError.McpClientError({ reason })

const transportError = (description: string, cause?: unknown) =>
  clientError(new McpClientError.TransportError({ description, ...(cause === undefined ? {} : { cause }) }))

const httpError = (response: HttpClientResponse.HttpClientResponse) =>
  clientError(new McpClientError.HttpError({ status: response.status }))

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

/** How long the answer to a server's own request (a `ping`) may take to post before it is given up. */
export const REPLY_DEADLINE = Duration.seconds(10)

/** What the server may say to a client that offers no capabilities: `ping` is answered, the rest refused. */
const replyToServer = (id: unknown, method: unknown) =>
  method === "ping"
    ? { jsonrpc: "2.0", id, result: {} }
    : { jsonrpc: "2.0", id, error: { code: -32601, message: `Unsupported MCP method: ${String(method)}` } }

/**
 * The URL an `endpoint` event names, resolved against the stream's. It must be on the stream's
 * origin (as the MCP SDK's client requires): the messages posted there carry the configured
 * headers, credentials and all, which a server must not send on to another host.
 */
const endpointOf = (data: string, streamUrl: string): Effect.Effect<string, McpClientError.McpClientError> => {
  const url = URL.parse(data.trim(), streamUrl)
  const origin = new URL(streamUrl).origin
  return url !== null && url.origin === origin
    ? Effect.succeed(url.href)
    : Effect.fail(clientError(new McpClientError.ProtocolError({ description: `MCP SSE endpoint is not on the server's origin ${origin}` })))
}

/** Options of the transport. */
export interface SseOptions {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** The largest event accepted, in characters. */
  readonly maxMessageChars: number
  readonly protocol: McpClient.Transport["protocol"]
}

/**
 * Opens the event stream and waits for its `endpoint` event; the caller bounds the wait (the
 * server's start-up timeout). A stream refused with a status is an `HttpError` carrying it.
 */
export const sseTransport = (
  options: SseOptions
): Effect.Effect<McpClient.Transport, McpClientError.McpClientError, HttpClient.HttpClient | Scope.Scope> =>
  Effect.gen(function*() {
    const client = HttpClient.withScope(yield* HttpClient.HttpClient)
    const pending = new Map<unknown, Deferred.Deferred<McpSchema.JsonRpcResponse>>()
    const failure = yield* Deferred.make<never, McpClientError.McpClientError>()
    const endpoint = yield* Deferred.make<string, McpClientError.McpClientError>()
    const fail = (error: McpClientError.McpClientError) =>
      Effect.andThen(Deferred.fail(endpoint, error), Deferred.fail(failure, error))

    const response = yield* client.execute(HttpClientRequest.get(options.url).pipe(
      HttpClientRequest.setHeaders({ ...options.headers, accept: "text/event-stream" })
    )).pipe(Effect.mapError((cause) => transportError("MCP SSE stream failed to open", cause)))
    if (response.status < 200 || response.status >= 300) return yield* httpError(response)
    const type = response.headers["content-type"]?.split(";", 1)[0]?.trim().toLowerCase()
    if (type !== "text/event-stream") {
      return yield* clientError(new McpClientError.ProtocolError({ description: `MCP SSE stream has Content-Type ${type ?? "(none)"}` }))
    }

    const post = (message: unknown) =>
      Effect.gen(function*() {
        const to = yield* Deferred.await(endpoint)
        const answer = yield* client.execute(HttpClientRequest.post(to).pipe(
          HttpClientRequest.setHeaders(options.headers),
          HttpClientRequest.bodyText(JSON.stringify(message), "application/json")
        )).pipe(Effect.mapError((cause) => transportError("MCP HTTP request failed", cause)))
        if (answer.status < 200 || answer.status >= 300) return yield* httpError(answer)
      }).pipe(Effect.scoped)

    const receive = (data: string) =>
      Effect.gen(function*() {
        let message: unknown
        try {
          message = JSON.parse(data)
        } catch {
          return yield* clientError(new McpClientError.ProtocolError({ description: "MCP SSE event is not JSON" }))
        }
        if (!isObject(message)) return
        if ("method" in message) {
          // the reader waits for this post: a server that never takes its answer must not stall the stream
          if ("id" in message) yield* post(replyToServer(message["id"], message["method"])).pipe(Effect.timeoutOption(REPLY_DEADLINE), Effect.ignore)
          return
        }
        const waiting = pending.get(message["id"])
        if (waiting !== undefined) yield* Deferred.succeed(waiting, message as unknown as McpSchema.JsonRpcResponse)
      })

    const events: Array<Sse.Event> = []
    const parser = Sse.makeParser((event) => {
      if (event._tag === "Event") events.push(event)
    }, { maxEventSize: options.maxMessageChars })
    yield* response.stream.pipe(
      Stream.decodeText(),
      Stream.runForEach((chunk) =>
        Effect.gen(function*() {
          const error = parser.feed(chunk)
          for (const event of events.splice(0)) {
            if (event.event === "endpoint") yield* Deferred.succeed(endpoint, yield* endpointOf(event.data, options.url))
            else if (event.event === "message" || event.event === "") yield* receive(event.data)
          }
          if (error !== undefined) {
            return yield* clientError(new McpClientError.LimitError({ description: "MCP SSE event exceeds the message limit" }))
          }
        })
      ),
      Effect.mapError((cause) => McpClientError.isMcpClientError(cause) ? cause : transportError("MCP SSE stream failed", cause)),
      Effect.andThen(Effect.fail(transportError("MCP SSE stream ended"))),
      Effect.catch(fail),
      Effect.forkScoped
    )
    yield* Deferred.await(endpoint)

    // the type id is `effect/ai`'s own string, which it does not export
    const transport = {
      "~effect/ai/McpClient/Transport": "~effect/ai/McpClient/Transport",
      protocol: options.protocol,
      isCallable: () => true,
      notify: (message: McpSchema.JsonRpcNotification) => post(message).pipe(Effect.raceFirst(Deferred.await(failure))),
      request: (message: McpSchema.JsonRpcRequest) =>
        Effect.gen(function*() {
          const answer = yield* Deferred.make<McpSchema.JsonRpcResponse>()
          pending.set(message.id, answer)
          return yield* post(message).pipe(
            Effect.andThen(Deferred.await(answer)),
            Effect.raceFirst(Deferred.await(failure)),
            Effect.ensuring(Effect.sync(() => pending.delete(message.id)))
          )
        })
    } as unknown as McpClient.Transport
    return transport
  })

/** Whether a Streamable HTTP failure means the server may speak only HTTP+SSE: a 4xx other than 401/403 (which are about the credentials). */
export const suggestsSse = (error: McpClientError.McpClientError): boolean => {
  const reason = error.reason
  return reason._tag === "HttpError" && reason.status >= 400 && reason.status < 500 && reason.status !== 401 && reason.status !== 403
}
