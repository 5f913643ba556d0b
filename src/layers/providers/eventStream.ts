/**
 * AWS's binary event stream (`application/vnd.amazon.eventstream`), as Bedrock's ConverseStream
 * sends it: frames, each a 4-byte total length, headers and a payload, guarded by CRCs. The frames
 * are cut by their length here; each is checked and parsed by AWS's own codec
 * (`@smithy/eventstream-codec`, passed in, since it is an optional package), then an event is fed
 * to the wire's decoder as an SSE event would be, and an exception becomes a provider error.
 */
import * as Stream from "effect/Stream"
import type * as Sse from "effect/encoding/Sse"
import { MalformedResponse, type ProviderError } from "../../domain/errors.ts"
import type { ProviderChunk } from "../../domain/Provider.ts"
import { emitChunks, excerpt, parseObject, type Step, stringAt, type WireDecoder } from "./sse.ts"

/** One parsed frame: its headers (string values only are needed) and its payload. */
export interface Frame {
  readonly headers: Readonly<Record<string, { readonly type: string; readonly value: unknown }>>
  readonly body: Uint8Array
}

/** What parses one whole frame, checking its CRCs: AWS's `EventStreamCodec.decode`. */
export type FrameParser = (frame: Uint8Array) => Frame

/** The largest frame accepted: far above any real event, bounded against a runaway server. */
export const defaultMaxFrameBytes = 16 * 1024 * 1024

/** The smallest possible frame: prelude (12 bytes) and message CRC (4). */
const MIN_FRAME_BYTES = 16

/** The error an exception frame carries, by its type and message. */
export type ExceptionMapper = (type: string, message: string) => ProviderError

const textDecoder = new TextDecoder()

const header = (frame: Frame, name: string): string | undefined => {
  const value = frame.headers[name]?.value
  return typeof value === "string" ? value : undefined
}

/** Joins two byte arrays (the rest of the last read and the new one). */
const join = (a: Uint8Array, b: Uint8Array): Uint8Array => {
  if (a.length === 0) return b
  const out = new Uint8Array(a.length + b.length)
  out.set(a, 0)
  out.set(b, a.length)
  return out
}

/**
 * Decodes an event-stream body into provider chunks. An event frame is fed to the decoder as an
 * SSE event named by its `:event-type`; an exception or error frame fails the stream with
 * `exception`'s error; a bad frame (CRC, size, cut short) is a `MalformedResponse`.
 */
export const decodeEventStream = (
  parse: FrameParser,
  exception: ExceptionMapper,
  maxFrameBytes: number = defaultMaxFrameBytes
) =>
(bytes: Stream.Stream<Uint8Array, ProviderError>, makeDecoder: () => WireDecoder): Stream.Stream<ProviderChunk, ProviderError> =>
  Stream.suspend(() => {
    const decoder = makeDecoder()
    let pending: Uint8Array = new Uint8Array(0)
    let done = false
    /** The steps of the whole frames `piece` completes. */
    const framesOf = (piece: Uint8Array): ReadonlyArray<Step | ProviderError> => {
      pending = join(pending, piece)
      const steps: Array<Step | ProviderError> = []
      while (pending.length >= 4) {
        const length = new DataView(pending.buffer, pending.byteOffset, pending.byteLength).getUint32(0, false)
        if (length < MIN_FRAME_BYTES || length > maxFrameBytes) {
          steps.push(new MalformedResponse({ message: `Invalid event stream: a frame of ${length} bytes (limit ${maxFrameBytes})` }))
          return steps
        }
        if (pending.length < length) break
        const bytes = pending.subarray(0, length)
        pending = pending.subarray(length)
        const step = stepOf(bytes)
        steps.push(step)
        if (!("chunks" in step) || step.done) return steps
      }
      return steps
    }
    const stepOf = (bytes: Uint8Array): Step | ProviderError => {
      let frame: Frame
      try {
        frame = parse(bytes)
      } catch (error) {
        return new MalformedResponse({ message: `Invalid event stream frame: ${error instanceof Error ? error.message : String(error)}` })
      }
      const data = textDecoder.decode(frame.body)
      switch (header(frame, ":message-type")) {
        case "event": {
          const event: Sse.Event = { _tag: "Event", event: header(frame, ":event-type") ?? "", id: undefined, data }
          return decoder.feed(event)
        }
        case "exception": {
          const payload = parseObject(data)
          return exception(header(frame, ":exception-type") ?? "exception", stringAt(payload, "message") ?? stringAt(payload, "Message") ?? excerpt(data))
        }
        default:
          return exception(header(frame, ":error-code") ?? "error", header(frame, ":error-message") ?? excerpt(data))
      }
    }
    const steps = bytes.pipe(
      Stream.flatMap((piece) => Stream.fromIterable(framesOf(piece))),
      Stream.takeUntil((step) => !("chunks" in step) || step.done)
    )
    return emitChunks(steps, (step) => {
      if (!("chunks" in step)) return step
      done = step.done
      return step.chunks
    }).pipe(Stream.concat(Stream.suspend(() => {
      if (done) return Stream.empty
      if (pending.length > 0) return Stream.fail(new MalformedResponse({ message: "The stream ended inside an event frame" }))
      const last = decoder.end()
      return Array.isArray(last) ? Stream.fromIterable(last) : Stream.fail(last as ProviderError)
    })))
  })

