/**
 * The path shared by the SSE wire formats: bytes → text → SSE events (Effect's `Sse.decode`) →
 * a per-response decoder that turns each event into provider chunks. The decoders are plain
 * state machines, so the same pipeline runs on a live HTTP body and on scripted bytes in tests.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Sse from "effect/encoding/Sse"
import { MalformedResponse, type ProviderError } from "../../domain/errors.ts"
import type { ProviderChunk } from "../../domain/Provider.ts"
import { jsonTooDeep } from "../../domain/text.ts"

/** What one SSE event did to a response: chunks to emit, and whether the response is complete. */
export interface Step {
  readonly chunks: ReadonlyArray<ProviderChunk>
  readonly done: boolean
}

/** The decoder of one response of one wire format. */
export interface WireDecoder {
  /** The chunks of one event, or the error it carries or provokes. */
  readonly feed: (event: Sse.Event) => Step | ProviderError
  /**
   * What a body that ended before the format's terminator still completes with, or the error it
   * is (a response cut off before it finished).
   */
  readonly end: () => ReadonlyArray<ProviderChunk> | ProviderError
}

const isStep = (u: Step | ProviderError): u is Step => "chunks" in u

/** The largest SSE event accepted, in UTF-16 code units: far above any real delta, bounded against a runaway server. */
export const defaultMaxEventSize = 10 * 1024 * 1024

/**
 * The most a decoder holds across events before it sends it on, in UTF-16 code units: what one
 * event may carry. It bounds what is not a delta the loop counts against `maxResponseBytes` until
 * its block ends (a reasoning block's signature), and a longer one is a malformed stream.
 */
export const MAX_HELD_CHARS = defaultMaxEventSize

/**
 * `held` with `more` appended, or the error saying `what` grew past `MAX_HELD_CHARS`; `others`: what
 * the decoder holds besides (several blocks open at once share the bound).
 */
export const appendHeld = (held: string, more: string, what: string, others = 0): string | MalformedResponse =>
  others + held.length + more.length > MAX_HELD_CHARS
    ? new MalformedResponse({ message: `${what} grew past ${MAX_HELD_CHARS} characters` })
    : held + more

/**
 * Decodes an SSE body into provider chunks. Upstream errors must already be provider errors;
 * SSE-level failures (an event over `maxEventSize`, a `retry:` directive no model API sends)
 * become `MalformedResponse`. The stream stops reading at the format's terminator; a body that
 * ends without one is settled by the decoder's `end`.
 */
export const decodeSse = (
  bytes: Stream.Stream<Uint8Array, ProviderError>,
  makeDecoder: () => WireDecoder,
  maxEventSize: number = defaultMaxEventSize
): Stream.Stream<ProviderChunk, ProviderError> =>
  Stream.suspend(() => {
    const decoder = makeDecoder()
    let done = false
    const steps = bytes.pipe(
      Stream.decodeText,
      Stream.pipeThroughChannel(Sse.decode({ maxEventSize })),
      Stream.mapError((error): ProviderError =>
        error._tag === "Retry" || error._tag === "SseError"
          ? new MalformedResponse({ message: `Invalid event stream: ${error._tag === "Retry" ? "unexpected retry field" : error.message}` })
          : error
      ),
      Stream.map(decoder.feed),
      Stream.takeUntil((step) => !isStep(step) || step.done)
    )
    return emitChunks(steps, (step) => {
      if (!isStep(step)) return step
      done = step.done
      return step.chunks
    }).pipe(Stream.concat(Stream.suspend(() => {
      if (done) return Stream.empty
      const last = decoder.end()
      return isError(last) ? Stream.fail(last) : Stream.fromIterable(last)
    })))
  })

const isError = (u: ReadonlyArray<ProviderChunk> | ProviderError): u is ProviderError => !Array.isArray(u)

/**
 * Emits, element by element, the chunks `f` makes of it, and fails with the first error `f`
 * returns. Each element gives an array, not a stream, so a long response costs no stream per event.
 */
export const emitChunks = <A, E, R>(
  self: Stream.Stream<A, E, R>,
  f: (a: A) => ReadonlyArray<ProviderChunk> | ProviderError
): Stream.Stream<ProviderChunk, E | ProviderError, R> =>
  Stream.mapAccumEffect(self, () => undefined, (state, a) => {
    const out = f(a)
    return isError(out) ? Effect.fail(out) : Effect.succeed([state, out] as const)
  })

/** A JSON object from an event's data, or `undefined` when it is not one. */
export const parseObject = (data: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(data)
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

/**
 * Stored tool-call arguments as the object an API wants back, or `undefined` when they are not a
 * JSON object or nest deeper than `MAX_JSON_DEPTH` (the loop already refused such a call; sending
 * them would overflow the stack when the request is serialised, on every later turn).
 */
export const argumentsObject = (text: string): Record<string, unknown> | undefined =>
  jsonTooDeep(text) ? undefined : parseObject(text)

/** A field as an object, tolerating servers that omit or null it. */
export const objectAt = (record: Record<string, unknown> | undefined, key: string): Record<string, unknown> | undefined => {
  const value = record?.[key]
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
}

/** A field as a string, or `undefined`. */
export const stringAt = (record: Record<string, unknown> | undefined, key: string): string | undefined => {
  const value = record?.[key]
  return typeof value === "string" ? value : undefined
}

/** A field as a finite number, or `undefined`. */
export const numberAt = (record: Record<string, unknown> | undefined, key: string): number | undefined => {
  const value = record?.[key]
  return typeof value === "number" && Number.isFinite(value) ? value : undefined
}

/** A short excerpt of a payload for an error message: payloads can be megabytes. */
export const excerpt = (text: string, max = 120): string => text.length > max ? `${text.slice(0, max)}…` : text
