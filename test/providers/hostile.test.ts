/**
 * Providers and proxies that misbehave: an HTML 413 from a proxy, a stream that drips, a URL that
 * cannot be parsed. None may cost history, hang a turn, or be retried for nothing.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Redacted, Stream } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { TestClock } from "effect/testing"
import { Anthropic, Message, OpenAiCompatible, OpenAiResponses, type ProviderTypes } from "effect-agent-loop"
import { data, start } from "../support/wireServer.ts"

const KEY = "sk-test-hostile-0123456789"
const request: ProviderTypes.ProviderRequest = { model: "m", messages: [Message.user("hi")], tools: [] }

const nginx413 = "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n" +
  "<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"

describe("hostile providers and proxies", () => {
  it.live("a 413 is a context overflow only when its body says so; a proxy's HTML page is a rejection", () =>
    Effect.gen(function*() {
      const server = yield* start([{ status: 413, headers: { "content-type": "text/html" }, body: [nginx413] }])
      for (const make of [OpenAiCompatible.make, OpenAiResponses.make, Anthropic.make]) {
        const provider = yield* make({ baseUrl: server.url, apiKey: Redacted.make(KEY) })
        const error = yield* Effect.flip(Stream.runDrain(provider.stream(request)))
        expect(error).toMatchObject({ _tag: "ProviderRejected", status: 413 })
      }
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("a stream that drips a piece every 10 seconds hits the overall deadline, not only the idle one", () =>
    Effect.gen(function*() {
      let controller!: ReadableStreamDefaultController<Uint8Array>
      const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) })
      const dripping = HttpClient.make((req) => Effect.succeed(HttpClientResponse.fromWeb(req, new Response(body, { status: 200 }))))
      const fiber = yield* OpenAiCompatible.make({ timeout: "30 seconds", totalTimeout: "1 minute", apiKey: Redacted.make(KEY) }).pipe(
        Effect.flatMap((provider) => Stream.runDrain(provider.stream(request))),
        Effect.provideService(HttpClient.HttpClient, dripping),
        Effect.flip,
        Effect.forkChild
      )
      const piece = new TextEncoder().encode(data({ choices: [{ index: 0, delta: { content: "." } }] }))
      for (let second = 10; second < 60; second += 10) {
        controller.enqueue(piece)
        for (let i = 0; i < 20; i++) yield* Effect.yieldNow
        yield* TestClock.adjust("10 seconds")
        expect(fiber.pollUnsafe(), `after ${second} s`).toBeUndefined()
      }
      controller.enqueue(piece)
      yield* TestClock.adjust("10 seconds")
      const error = yield* Fiber.join(fiber)
      expect(error).toMatchObject({ _tag: "ProviderUnavailable", message: expect.stringContaining("did not complete within 1m") })
    }))

  it.live("a base URL that cannot be parsed is ProviderRejected (not retried), not ProviderUnavailable", () =>
    Effect.gen(function*() {
      const provider = yield* OpenAiCompatible.make({ baseUrl: "http://[not a host", apiKey: Redacted.make(KEY) })
      const error = yield* Effect.flip(Stream.runDrain(provider.stream(request)))
      expect(error._tag).toBe("ProviderRejected")
      expect(error.message).toMatch(/^Invalid URL/)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
})
