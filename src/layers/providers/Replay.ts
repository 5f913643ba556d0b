/**
 * `Replay`: record a real provider's streams to a JSONL cassette, then answer from the cassette
 * with no network, in order, deterministically. Record once against a live server, commit the
 * cassette, and tests replay the exact chunks (including errors) forever after.
 *
 * A cassette line is one call: `{"request": {model, messages, tools: [names], ...model options, output?},
 * "chunks": [...], "error"?: {_tag, message, ...}}`. Entries are appended when a call ends, so a
 * cassette of concurrent calls is in completion order; replay expects calls in cassette order.
 *
 * @example
 * ```ts
 * import { NodeHttpClient, NodeServices } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { OpenAiCompatible, Replay } from "effect-agent-loop"
 *
 * const recording = Replay.record("test/cassettes/hello.jsonl").pipe(
 *   Layer.provide(OpenAiCompatible.layer()), Layer.provide(NodeHttpClient.layerUndici), Layer.provide(NodeServices.layer))
 * const replaying = Replay.replay("test/cassettes/hello.jsonl").pipe(Layer.provide(NodeServices.layer))
 * ```
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import {
  InvalidConfig,
  ContextLengthExceeded,
  MalformedResponse,
  type ProviderError,
  ProviderRejected,
  ProviderUnavailable,
  RateLimited,
  ReplayMismatch,
  ResponseTooLarge
} from "../../domain/errors.ts"
import { Message, textOf } from "../../domain/Message.ts"
import { ModelOptions, pick } from "../../domain/ModelOptions.ts"
import { OutputFormat, type ProviderChunk, ProviderChunk as ProviderChunkSchema, type ProviderRequest } from "../../domain/Provider.ts"
import { Provider, type ProviderShape } from "../../services/Provider.ts"
import { excerpt } from "./sse.ts"
import { problemOf, readConfined, textOf as textRead } from "../internal/readConfined.ts"

/** The part of a request a cassette keeps and matches on: tools by name only, and the model options. */
export const RecordedRequest = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(Message),
  tools: Schema.Array(Schema.String),
  ...ModelOptions.fields,
  output: Schema.optionalKey(OutputFormat)
})
export type RecordedRequest = typeof RecordedRequest.Type

/** One line of a cassette: a call and everything it streamed, or the error it ended with. */
export const CassetteEntry = Schema.Struct({
  request: RecordedRequest,
  chunks: Schema.Array(ProviderChunkSchema),
  error: Schema.optionalKey(Schema.Union([ContextLengthExceeded, RateLimited, ProviderUnavailable, ProviderRejected, MalformedResponse, ResponseTooLarge]))
})
export type CassetteEntry = typeof CassetteEntry.Type

const EntryJson = Schema.fromJsonString(CassetteEntry)

/** What a cassette records of a request. */
export const recordedRequest = (request: ProviderRequest): RecordedRequest => ({
  ...pick(request),
  model: request.model,
  messages: request.messages,
  tools: request.tools.map((tool) => tool.name),
  ...(request.output === undefined ? {} : { output: request.output })
})

/**
 * Equality as the cassette's JSON sees it: key order and `undefined` fields do not count. Walks
 * the values without rendering them, since every replayed call compares its whole history.
 */
const sameJson = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]))
  }
  const x = a as Record<string, unknown>
  const y = b as Record<string, unknown>
  const keys = Object.keys(x).filter((key) => x[key] !== undefined)
  return keys.length === Object.keys(y).filter((key) => y[key] !== undefined).length && keys.every((key) => sameJson(x[key], y[key]))
}

/** JSON with sorted keys, so a mismatch message shows both sides in one order. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    typeof v === "object" && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0))
      : v) ?? "nothing"

/** A one-line description of a request, for mismatch messages. */
export const describeRequest = (request: RecordedRequest): string => {
  const last = request.messages.at(-1)
  return `model ${request.model}, ${request.messages.length} messages${
    last ? ` (last: ${last.role} ${JSON.stringify(excerpt(textOf(last.content), 80))})` : ""
  }, tools [${request.tools.join(", ")}]`
}

/**
 * The options that change what a model answers. `maxTokens` is left out: a limit from the model
 * registry may change between recording and replay without changing the answers recorded.
 */
const answerOptions = (request: RecordedRequest) => ({ ...pick(request), maxTokens: undefined })

/** Where two requests differ (model, model options but the output limit, tool names, typed answer asked for, messages), or `undefined` when they match. */
export const difference = (expected: RecordedRequest, actual: RecordedRequest): string | undefined => {
  if (expected.model !== actual.model) return `model: expected ${expected.model}, got ${actual.model}`
  if (!sameJson(answerOptions(expected), answerOptions(actual))) {
    return `model options: expected ${canonical(answerOptions(expected))}, got ${canonical(answerOptions(actual))}`
  }
  if (!sameJson(expected.tools, actual.tools)) {
    return `tools: expected [${expected.tools.join(", ")}], got [${actual.tools.join(", ")}]`
  }
  if (!sameJson(expected.output, actual.output)) {
    return `output: expected ${excerpt(canonical(expected.output), 80)}, got ${excerpt(canonical(actual.output), 80)}`
  }
  const length = Math.max(expected.messages.length, actual.messages.length)
  for (let i = 0; i < length; i++) {
    const a = expected.messages[i]
    const b = actual.messages[i]
    if (!sameJson(a, b)) {
      return `messages[${i}]: expected ${excerpt(canonical(a), 80)}, got ${excerpt(canonical(b), 80)}`
    }
  }
  return undefined
}

/**
 * The error a mismatch is reported as. `ReplayMismatch` is not a `ProviderError` (the loop
 * must not retry it, nor compress for it), so it travels as `ProviderRejected`, which ends the
 * turn; its message starts with the mismatch's tag and names both requests.
 */
const mismatch = (error: ReplayMismatch) => new ProviderRejected({ message: `${error._tag}: ${error.message}` })

/** Wraps the current Provider, appending every finished call to the cassette at `path`. */
export const record = (
  path: string,
  options: { readonly fresh?: boolean } = {}
): Layer.Layer<Provider, InvalidConfig, Provider | FileSystem.FileSystem> =>
  Layer.effect(
    Provider,
    Effect.gen(function*() {
      const inner = yield* Provider
      const fs = yield* FileSystem.FileSystem
      const lock = yield* Semaphore.make(1)
      if (options.fresh) {
        // Private when created here: a cassette holds whole conversations.
        yield* fs.writeFileString(path, "", { mode: 0o600 }).pipe(
          Effect.mapError((error) => new InvalidConfig({ field: "cassette", message: `Cannot create ${path}: ${error.message}` }))
        )
      }
      const append = (entry: CassetteEntry) =>
        Effect.flatMap(Schema.encodeEffect(EntryJson)(entry), (line) => fs.writeFileString(path, `${line}\n`, { flag: "a", mode: 0o600 })).pipe(
          lock.withPermits(1),
          Effect.mapError((error) => new ProviderRejected({ message: `Replay: cannot write cassette ${path}: ${error.message}` }))
        )
      const provider: ProviderShape = {
        stream: (request) =>
          Stream.suspend(() => {
            const chunks: Array<ProviderChunk> = []
            const entry = (error?: ProviderError): CassetteEntry => ({
              request: recordedRequest(request),
              chunks: [...chunks],
              ...(error === undefined ? {} : { error })
            })
            return inner.stream(request).pipe(
              Stream.tap((chunk) => Effect.sync(() => chunks.push(chunk))),
              Stream.catch((error) => Stream.fromEffect(Effect.flatMap(append(entry(error)), () => Effect.fail(error)))),
              Stream.concat(Stream.fromEffect(Effect.suspend(() => append(entry()))).pipe(Stream.drain))
            )
          })
      }
      return provider
    })
  )

/** The largest cassette read, whatever `stat` says of the file (a device or `/proc` file may say 0 and never end). */
export const MAX_CASSETTE_BYTES = 64 * 1024 * 1024

/** Reads a cassette: one entry per non-empty line. */
export const readCassette = (path: string): Effect.Effect<ReadonlyArray<CassetteEntry>, InvalidConfig, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const read = yield* readConfined(path, { maxBytes: MAX_CASSETTE_BYTES })
    const problem = problemOf(read, MAX_CASSETTE_BYTES)
    if (problem !== undefined) return yield* Effect.fail(new InvalidConfig({ field: "cassette", message: `Cannot read ${path}: ${problem}` }))
    const text = textRead(read) ?? ""
    const lines = text.split("\n").map((line, i) => [line, i + 1] as const).filter(([line]) => line.trim() !== "")
    return yield* Effect.forEach(lines, ([line, number]) =>
      Schema.decodeUnknownEffect(EntryJson)(line).pipe(
        Effect.mapError((error) => new InvalidConfig({ field: "cassette", message: `${path}:${number}: ${error.message}` }))
      ))
  })

/** A provider answering from cassette entries in order; a request that is not the next one fails. */
export const fromEntries = (entries: ReadonlyArray<CassetteEntry>, name = "cassette"): Effect.Effect<ProviderShape> =>
  Effect.map(Ref.make(0), (position): ProviderShape => ({
    stream: (request) =>
      Stream.unwrap(Ref.getAndUpdate(position, (n) => n + 1).pipe(Effect.map((n) => {
        const entry = entries[n]
        const actual = recordedRequest(request)
        if (entry === undefined) {
          return Stream.fail(mismatch(new ReplayMismatch({
            message: `${name} has ${entries.length} calls; call #${n + 1} is extra: got ${describeRequest(actual)}`
          })))
        }
        const diff = difference(entry.request, actual)
        if (diff !== undefined) {
          return Stream.fail(mismatch(new ReplayMismatch({
            message: `call #${n + 1} of ${name} differs in ${diff}. Recorded: ${describeRequest(entry.request)}. Requested: ${describeRequest(actual)}`
          })))
        }
        const chunks = Stream.fromIterable(entry.chunks)
        return entry.error === undefined ? chunks : Stream.concat(chunks, Stream.fail(entry.error))
      })))
  }))

/** A Provider answering from the cassette at `path`; fails to build when the cassette is unreadable. */
export const replay = (path: string): Layer.Layer<Provider, InvalidConfig, FileSystem.FileSystem> =>
  Layer.effect(Provider, Effect.flatMap(readCassette(path), (entries) => fromEntries(entries, path)))

/** Whether an error is a replay mismatch (as reported through `ProviderRejected`). */
export const isMismatch = (error: ProviderError): boolean =>
  error._tag === "ProviderRejected" && error.message.startsWith("ReplayMismatch:")
