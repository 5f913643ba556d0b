/**
 * One streaming HTTP call of a model API: send, map a failed status to a provider error, decode
 * the SSE body. Shared by the wire-format layers so timeouts, cancellation and error mapping
 * behave the same for every vendor.
 */
import { Clock, Duration, Effect, type Redacted, Stream } from "effect"
import { HttpClient, type HttpClientRequest } from "effect/http"
import { type ProviderError, ProviderUnavailable } from "../../domain/errors.ts"
import type { ProviderChunk } from "../../domain/Provider.ts"
import { fromResponse, fromTransport, scrubError } from "./httpErrors.ts"
import { decodeSse, type WireDecoder } from "./sse.ts"

/** What a streaming call needs. */
export interface StreamCall {
  readonly client: HttpClient.HttpClient
  readonly request: HttpClientRequest.HttpClientRequest
  /** The longest wait for the response head, and then between two pieces of the body. */
  readonly timeout: Duration.Duration
  readonly secrets: ReadonlyArray<Redacted.Redacted<string>>
  readonly makeDecoder: () => WireDecoder
}

const timedOut = (timeout: Duration.Duration, what: string) =>
  new ProviderUnavailable({ message: `${what} within ${Duration.format(timeout)}` })

/**
 * Runs the call as a stream of chunks. The HTTP request lives in the stream's scope, so
 * interrupting the consumer (a hard abort) aborts the connection.
 */
export const streamCall = (call: StreamCall): Stream.Stream<ProviderChunk, ProviderError> =>
  Stream.unwrap(Effect.gen(function*() {
    const client = HttpClient.withScope(call.client)
    const response = yield* client.execute(call.request).pipe(
      Effect.mapError((error) => fromTransport("Request failed", error, call.secrets)),
      Effect.timeoutOrElse({
        duration: call.timeout,
        orElse: () => Effect.fail(timedOut(call.timeout, "No response"))
      })
    )
    if (response.status < 200 || response.status >= 300) {
      const body = yield* response.text.pipe(
        Effect.timeoutOrElse({ duration: call.timeout, orElse: () => Effect.succeed("") }),
        Effect.orElseSucceed(() => "")
      )
      const nowMs = yield* Clock.currentTimeMillis
      return Stream.fail(fromResponse({ status: response.status, headers: response.headers, body, nowMs, secrets: call.secrets }))
    }
    const bytes = response.stream.pipe(
      Stream.mapError((error) => fromTransport("Connection lost mid-stream", error, call.secrets)),
      Stream.timeoutOrElse({
        duration: call.timeout,
        orElse: () => Stream.fail(timedOut(call.timeout, "The stream stalled: no data"))
      })
    )
    return decodeSse(bytes, call.makeDecoder)
  })).pipe(Stream.mapError((error) => scrubError(error, call.secrets)))
