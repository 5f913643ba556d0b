import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option, Schema, Stream } from "effect"
import { type ProviderError, ProviderTypes } from "effect-agent-loop"
import * as AnthropicStream from "../../src/layers/providers/anthropicStream.ts"
import * as GeminiWire from "../../src/layers/providers/geminiWire.ts"
import * as OpenAiWire from "../../src/layers/providers/openAiWire.ts"
import * as ResponsesWire from "../../src/layers/providers/responsesWire.ts"
import * as BedrockWire from "../../src/layers/providers/bedrockWire.ts"
import { decodeSse, MAX_HELD_CHARS, type WireDecoder } from "../../src/layers/providers/sse.ts"
import {
  anthropicChunks,
  anthropicStream,
  openAiText,
  openAiTextChunks,
  openAiTools,
  openAiToolsChunks,
  responsesChunks,
  responsesStream
} from "../support/wireFixtures.ts"
import { geminiChunks, geminiStream } from "../support/geminiWire.ts"

/** mulberry32: a tiny seeded PRNG, so every failure is reproducible from its seed. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
type Rng = ReturnType<typeof prng>
const int = (rng: Rng, n: number) => Math.floor(rng() * n)

const splitRandomly = (bytes: Uint8Array, rng: Rng): ReadonlyArray<Uint8Array> => {
  const out: Array<Uint8Array> = []
  let i = 0
  while (i < bytes.length) {
    const size = 1 + int(rng, rng() < 0.7 ? 8 : 200)
    out.push(bytes.subarray(i, i + size))
    i += size
  }
  return out
}

const isChunks = Schema.is(Schema.Array(ProviderTypes.ProviderChunk))

const decode = (pieces: ReadonlyArray<Uint8Array>, makeDecoder: () => WireDecoder) =>
  Stream.runCollect(decodeSse(Stream.fromIterable(pieces), makeDecoder)).pipe(Effect.exit)

/** Byte offsets inside the JSON payloads of `data:` lines. */
const payloadOffsets = (text: string): ReadonlyArray<number> => {
  const offsets: Array<number> = []
  const bytes = Buffer.from(text, "utf8")
  const marker = Buffer.from("data: ")
  let at = bytes.indexOf(marker)
  while (at >= 0) {
    const from = at + marker.length
    const to = bytes.indexOf(0x0a, from)
    for (let i = from; i < to; i++) offsets.push(i)
    at = bytes.indexOf(marker, to)
  }
  return offsets
}

type Mutation = "none" | "crlf" | "comments" | "truncate" | "control" | "flip"
const mutations: ReadonlyArray<Mutation> = ["none", "crlf", "comments", "truncate", "control", "flip"]

const mutate = (text: string, mutation: Mutation, rng: Rng): Uint8Array => {
  const bytes = Buffer.from(text, "utf8")
  switch (mutation) {
    case "none":
      return bytes
    case "crlf":
      return Buffer.from(text.replace(/\n/g, "\r\n"), "utf8")
    case "comments":
      return Buffer.from(text.replace(/\n\n/g, () => rng() < 0.5 ? "\n\n: keep-alive\n\n" : "\n\n"), "utf8")
    case "truncate":
      return bytes.subarray(0, int(rng, bytes.length))
    case "control": {
      const offsets = payloadOffsets(text)
      const at = offsets[int(rng, offsets.length)]!
      return Buffer.concat([bytes.subarray(0, at), Buffer.from([0x01]), bytes.subarray(at)])
    }
    case "flip": {
      const copy = Buffer.from(bytes)
      for (let n = 1 + int(rng, 3); n > 0; n--) copy[int(rng, copy.length)] = int(rng, 256)
      return copy
    }
  }
}

const formats = [
  { name: "openai text", text: openAiText, expected: openAiTextChunks, makeDecoder: OpenAiWire.makeDecoder },
  { name: "openai tools", text: openAiTools, expected: openAiToolsChunks, makeDecoder: OpenAiWire.makeDecoder },
  { name: "anthropic", text: anthropicStream, expected: anthropicChunks, makeDecoder: AnthropicStream.makeDecoder },
  { name: "responses", text: responsesStream, expected: responsesChunks, makeDecoder: ResponsesWire.makeDecoder },
  { name: "gemini", text: geminiStream, expected: geminiChunks, makeDecoder: GeminiWire.makeDecoder() }
]

const errorTags = ["ContextLengthExceeded", "RateLimited", "ProviderUnavailable", "ProviderRejected", "MalformedResponse"]

describe("wire decoders under random splits and corruption", () => {
  it.effect("never crash or hang: the same chunks, or MalformedResponse (any tagged provider error for byte flips)", () =>
    Effect.gen(function*() {
      const tally: Record<string, number> = {}
      let cases = 0
      for (const format of formats) {
        for (let seed = 1; seed <= 120; seed++) {
          const rng = prng(seed * 7919 + format.name.length)
          const mutation = mutations[seed % mutations.length]!
          const exit = yield* decode(splitRandomly(mutate(format.text, mutation, rng), rng), format.makeDecoder)
          const context = `${format.name} seed=${seed} mutation=${mutation}`
          cases++
          expect(Exit.hasDies(exit), context).toBe(false)
          const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.findErrorOption(exit.cause)) as ProviderError | undefined : undefined
          const outcome = Exit.isSuccess(exit) ? "same" : error?._tag ?? "none"
          tally[`${mutation}:${outcome}`] = (tally[`${mutation}:${outcome}`] ?? 0) + 1
          if (Exit.isSuccess(exit)) {
            if (mutation === "flip") {
              expect(isChunks(exit.value), context).toBe(true)
              expect(exit.value.filter((c) => c._tag === "Finish"), context).toHaveLength(1)
              expect(exit.value.at(-1)?._tag, context).toBe("Finish")
            } else if (mutation === "truncate" && format.makeDecoder === OpenAiWire.makeDecoder) {
              // A Chat Completions body cut after its finish_reason completes, as the official SDK
              // does; cut before the usage chunk, its Finish has no usage.
              const withoutUsage = format.expected.map((c) => {
                if (c._tag !== "Finish") return c
                const { usage: _, ...rest } = c
                return rest
              })
              expect([format.expected, withoutUsage], context).toContainEqual(exit.value)
            } else {
              expect(exit.value, context).toEqual(format.expected)
            }
          } else {
            expect(error, context).toBeDefined()
            if (mutation === "flip") expect(errorTags, context).toContain(error!._tag)
            else expect(error!._tag, context).toBe("MalformedResponse")
          }
          if (mutation === "none" || mutation === "crlf" || mutation === "comments") expect(Exit.isSuccess(exit), context).toBe(true)
          if (mutation === "control") expect(Exit.isFailure(exit), context).toBe(true)
        }
      }
      expect(cases).toBeGreaterThanOrEqual(200)
      expect(tally["truncate:MalformedResponse"]).toBeGreaterThan(0)
    }))

  // The bound is on what the SSE parser retains between two network reads, so the oversized
  // event arrives in pieces, as it would from a runaway server.
  it.effect("an SSE event over the size bound is MalformedResponse; one under it decodes", () =>
    Effect.gen(function*() {
      const event = (size: number) =>
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "x".repeat(size) }, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`
      const overhead = event(0).length - "\n\ndata: [DONE]\n\n".length - "data: ".length
      const fits = 1000 - overhead - "data: ".length - 1
      const under = yield* Stream.runCollect(
        decodeSse(Stream.fromIterable(splitRandomly(Buffer.from(event(fits)), prng(5))), OpenAiWire.makeDecoder, 1000)
      )
      expect(under[0]).toEqual({ _tag: "TextDelta", text: "x".repeat(fits) })
      const over = yield* Effect.flip(Stream.runCollect(
        decodeSse(Stream.fromIterable(splitRandomly(Buffer.from(event(3000)), prng(3))), OpenAiWire.makeDecoder, 1000)
      ))
      expect(over).toMatchObject({ _tag: "MalformedResponse", message: expect.stringContaining("maximum size of 1000") })
    }))

  it.effect("every single-byte split position of each stream decodes identically", () =>
    Effect.gen(function*() {
      for (const format of formats) {
        const bytes = Buffer.from(format.text, "utf8")
        for (let at = 1; at < bytes.length; at += 3) {
          const exit = yield* decode([bytes.subarray(0, at), bytes.subarray(at)], format.makeDecoder)
          expect(Exit.isSuccess(exit) ? exit.value : exit, `${format.name} split at ${at}`).toEqual(format.expected)
        }
      }
    }))
})

describe("what a decoder holds across events", () => {
  it("a reasoning block's signature, held until its block ends, is bounded: up to the bound it grows, past it the stream is malformed", () => {
    const piece = "s".repeat(MAX_HELD_CHARS / 4)
    const anthropic = AnthropicStream.makeDecoder()
    const event = (data: unknown) => ({ _tag: "Event" as const, event: "message", id: undefined, data: JSON.stringify(data) })
    anthropic.feed(event({ type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } }))
    const delta = event({ type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: piece } })
    for (let i = 0; i < 4; i++) expect(anthropic.feed(delta)).toHaveProperty("done", false)
    expect(anthropic.feed(delta)).toMatchObject({ _tag: "MalformedResponse", message: `A thinking block's signature grew past ${MAX_HELD_CHARS} characters` })

    const bedrock = BedrockWire.makeDecoder()
    const thought = { _tag: "Event" as const, event: "contentBlockDelta", id: undefined, data: JSON.stringify({ contentBlockIndex: 0, delta: { reasoningContent: { signature: piece } } }) }
    for (let i = 0; i < 4; i++) expect(bedrock.feed(thought)).toHaveProperty("done", false)
    expect(bedrock.feed(thought)).toMatchObject({ _tag: "MalformedResponse", message: `A reasoning block's signature grew past ${MAX_HELD_CHARS} characters` })

    // nor may many open blocks hold it between them: the bound is the decoder's, not each block's
    const many = BedrockWire.makeDecoder()
    const opened = (index: number) => ({ ...thought, data: JSON.stringify({ contentBlockIndex: index, delta: { reasoningContent: { signature: piece } } }) })
    for (let i = 0; i < 4; i++) expect(many.feed(opened(i))).toHaveProperty("done", false)
    expect(many.feed(opened(4))).toMatchObject({ _tag: "MalformedResponse", message: `A reasoning block's signature grew past ${MAX_HELD_CHARS} characters` })
    // a block that ends gives its share back
    const closing = BedrockWire.makeDecoder()
    for (let i = 0; i < 4; i++) closing.feed(opened(i))
    expect(closing.feed({ ...thought, event: "contentBlockStop", data: JSON.stringify({ contentBlockIndex: 0 }) })).toHaveProperty("done", false)
    expect(closing.feed(opened(5))).toHaveProperty("done", false)
  })
})
