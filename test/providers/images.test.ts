import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted, Stream } from "effect"
import { Anthropic, Message, OpenAiCompatible, OpenAiResponses, type ProviderTypes } from "effect-agent-loop"
import { toPromptMessage } from "../../src/layers/providers/LanguageModel.ts"
import { piToolCalls, piToolResult, piUser, type ReferenceApi, referenceBody } from "../support/sdkReference.ts"
import { anthropicStream, openAiText, responsesStream } from "../support/wireFixtures.ts"
import { start } from "../support/wireServer.ts"

const PNG = Buffer.from("\x89PNG\r\n\x1a\n not really a png").toString("base64")
const JPEG = Buffer.from("\xff\xd8\xff a jpeg, they say").toString("base64")
const shot = { id: "call_1", name: "screenshot" }
const tools = [{ name: "screenshot", description: "Takes a screenshot", parameters: { type: "object", properties: {} } }]

/** A user message with an image, a tool call, and its result with text and an image. */
const ours = (model: string): ProviderTypes.ProviderRequest => ({
  model,
  messages: [
    Message.system("Be brief."),
    Message.user([Message.text("What is on this picture?"), Message.image("image/png", PNG)]),
    Message.assistant("", [{ ...shot, arguments: "{}" }]),
    Message.toolResult(shot, [Message.text("the screen:"), Message.image("image/jpeg", JPEG)])
  ],
  tools
})

/** The same conversation for the official clients. */
const theirs = (api: ReferenceApi, model: string) => ({
  systemPrompt: "Be brief.",
  messages: [
    piUser([{ text: "What is on this picture?" }, { data: PNG, mimeType: "image/png" }]),
    piToolCalls(api, model, [shot]),
    piToolResult(shot, [{ text: "the screen:" }, { data: JPEG, mimeType: "image/jpeg" }])
  ],
  tools
})

/** The body our provider sends for `request`. */
const sentBy = (api: ReferenceApi, request: ProviderTypes.ProviderRequest) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start([{ body: [api === "anthropic-messages" ? anthropicStream : api === "openai-responses" ? responsesStream : openAiText] }])
    // Without cache breakpoints (prompt-caching.test.ts checks those): the blocks alone are compared here.
    const provider = api === "anthropic-messages"
      ? yield* Anthropic.make({ baseUrl: server.url, apiKey: Redacted.make("sk-test"), promptCaching: false })
      : api === "openai-responses"
      ? yield* OpenAiResponses.make({ baseUrl: `${server.url}/v1`, apiKey: Redacted.make("sk-test") })
      : yield* OpenAiCompatible.make({ baseUrl: `${server.url}/v1`, apiKey: Redacted.make("sk-test") })
    yield* Stream.runDrain(provider.stream(request))
    return server.requests[0]!.json as Record<string, any>
  })).pipe(Effect.provide(NodeHttpClient.layerUndici))

describe("images on the OpenAI Chat wire", () => {
  it.live("a user image and a tool result's image: the messages the official client sends, field by field", () =>
    Effect.gen(function*() {
      const body = yield* sentBy("openai-completions", ours("gpt-4o"))
      const reference = yield* referenceBody("openai-completions", "gpt-4o", theirs("openai-completions", "gpt-4o"))
      expect(body.messages).toHaveLength(reference.messages.length)
      for (const [index, message] of reference.messages.entries()) expect(body.messages[index]).toEqual(message)
      // What that means: images as image_url parts with data URLs; the tool message keeps the text,
      // and the image follows the results in a user message.
      expect(body.messages[1].content[1]).toEqual({ type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } })
      expect(body.messages[3]).toEqual({ role: "tool", tool_call_id: "call_1", content: "the screen:" })
      expect(body.messages[4].content[1].image_url.url).toBe(`data:image/jpeg;base64,${JPEG}`)
    }))

  it.live("a tool result of images only says so in text; images of a batch of results follow the last of them", () =>
    Effect.gen(function*() {
      const second = { id: "call_2", name: "screenshot" }
      const request: ProviderTypes.ProviderRequest = {
        model: "gpt-4o",
        messages: [
          Message.user("two screenshots"),
          Message.assistant("", [{ ...shot, arguments: "{}" }, { ...second, arguments: "{}" }]),
          Message.toolResult(shot, [Message.image("image/png", PNG)]),
          Message.toolResult(second, [Message.text("second"), Message.image("image/jpeg", JPEG)]),
          Message.user("compare them")
        ],
        tools
      }
      const body = yield* sentBy("openai-completions", request)
      const reference = yield* referenceBody("openai-completions", "gpt-4o", {
        messages: [
          piUser([{ text: "two screenshots" }]),
          piToolCalls("openai-completions", "gpt-4o", [shot, second]),
          piToolResult(shot, [{ data: PNG, mimeType: "image/png" }]),
          piToolResult(second, [{ text: "second" }, { data: JPEG, mimeType: "image/jpeg" }]),
          piUser([{ text: "compare them" }])
        ],
        tools
      })
      // pi-ai sends a one-part user text as parts; the API takes both forms, ours is the plain string.
      expect(body.messages[0]).toEqual({ role: "user", content: "two screenshots" })
      expect(body.messages.slice(1, 5)).toEqual(reference.messages.slice(1, 5))
      expect(body.messages[2]).toEqual({ role: "tool", tool_call_id: "call_1", content: "(see attached image)" })
      expect(body.messages[4].content.map((part: any) => part.type)).toEqual(["text", "image_url", "image_url"])
      expect(body.messages[5]).toEqual({ role: "user", content: "compare them" })
    }))

  it.live("an image by URL is sent as that URL (fixed expectation from the API reference)", () =>
    Effect.gen(function*() {
      const body = yield* sentBy("openai-completions", {
        model: "gpt-4o",
        messages: [Message.user([Message.imageUrl("https://example.com/cat.png"), Message.text("and this?")])],
        tools: []
      })
      expect(body.messages[0].content).toEqual([
        { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
        { type: "text", text: "and this?" }
      ])
    }))
})

describe("images on the Anthropic wire", () => {
  it.live("a user image and a tool_result with an image: the blocks the official client sends, field by field", () =>
    Effect.gen(function*() {
      const model = "claude-sonnet-4-5"
      const body = yield* sentBy("anthropic-messages", ours(model))
      const reference = yield* referenceBody("anthropic-messages", model, theirs("anthropic-messages", model))
      expect(body.messages).toHaveLength(reference.messages.length)
      expect(body.messages[0]).toEqual(reference.messages[0])
      expect(body.messages[1]).toEqual(reference.messages[1])
      const [result] = body.messages[2].content
      const [expected] = reference.messages[2].content
      // The client also marks the last block for prompt caching and says is_error: false; the blocks
      // that carry the result are the same.
      expect(result.type).toBe(expected.type)
      expect(result.tool_use_id).toBe(expected.tool_use_id)
      expect(result.content).toEqual(expected.content)
      expect(result.content[1]).toEqual({ type: "image", source: { type: "base64", media_type: "image/jpeg", data: JPEG } })
    }))

  it.live("a tool_result of images only starts with the client's placeholder text", () =>
    Effect.gen(function*() {
      const model = "claude-sonnet-4-5"
      const request: ProviderTypes.ProviderRequest = {
        model,
        messages: [Message.user("look"), Message.assistant("", [{ ...shot, arguments: "{}" }]), Message.toolResult(shot, [Message.image("image/png", PNG)])],
        tools
      }
      const body = yield* sentBy("anthropic-messages", request)
      const reference = yield* referenceBody("anthropic-messages", model, {
        messages: [piUser([{ text: "look" }]), piToolCalls("anthropic-messages", model, [shot]), piToolResult(shot, [{ data: PNG, mimeType: "image/png" }])],
        tools
      })
      expect(body.messages[2].content[0].content).toEqual(reference.messages[2].content[0].content)
      expect(body.messages[2].content[0].content[0]).toEqual({ type: "text", text: "(see attached image)" })
    }))

  it.live("URL images as url sources, data URLs inline; without tools, a result's images follow its text", () =>
    Effect.gen(function*() {
      const body = yield* sentBy("anthropic-messages", {
        model: "claude-sonnet-4-5",
        messages: [
          Message.user([Message.text("these"), Message.imageUrl("https://example.com/a.png"), Message.imageUrl(`data:image/png;base64,${PNG}`)]),
          Message.assistant("", [{ ...shot, arguments: "{}" }]),
          Message.toolResult(shot, [Message.text("shot"), Message.image("image/jpeg", JPEG)])
        ],
        tools: []
      })
      expect(body.messages[0].content).toEqual([
        { type: "text", text: "these" },
        { type: "image", source: { type: "url", url: "https://example.com/a.png" } },
        { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }
      ])
      expect(body.messages[2].content).toEqual([
        { type: "text", text: "[result of tool screenshot]\nshot" },
        { type: "image", source: { type: "base64", media_type: "image/jpeg", data: JPEG } }
      ])
    }))
})

describe("images on the Responses wire", () => {
  it.live("a user image and a tool result's image: the input items the official client sends, field by field", () =>
    Effect.gen(function*() {
      const body = yield* sentBy("openai-responses", ours("gpt-4o"))
      const reference = yield* referenceBody("openai-responses", "gpt-4o", theirs("openai-responses", "gpt-4o"))
      // the client sends the system prompt as the first input item; ours is the API's `instructions`
      expect(body.instructions).toBe("Be brief.")
      expect(body.input).toEqual(reference.input.slice(1))
      // What that means: input_image parts with data URLs, in the user message and in the function call's output.
      expect(body.input[0].content[1]).toEqual({ type: "input_image", detail: "auto", image_url: `data:image/png;base64,${PNG}` })
      expect(body.input[2]).toEqual({
        type: "function_call_output",
        call_id: "call_1",
        output: [
          { type: "input_text", text: "the screen:" },
          { type: "input_image", detail: "auto", image_url: `data:image/jpeg;base64,${JPEG}` }
        ]
      })
    }))

  it.live("an image by URL is sent as that URL; a text-only result stays a string (fixed expectations from the API reference)", () =>
    Effect.gen(function*() {
      const body = yield* sentBy("openai-responses", {
        model: "gpt-4o",
        messages: [
          Message.user([Message.imageUrl("https://example.com/cat.png"), Message.text("and this?")]),
          Message.assistant("", [{ ...shot, arguments: "{}" }]),
          Message.toolResult(shot, [Message.text("no screen")])
        ],
        tools
      })
      expect(body.input[0].content).toEqual([
        { type: "input_image", detail: "auto", image_url: "https://example.com/cat.png" },
        { type: "input_text", text: "and this?" }
      ])
      expect(body.input[2]).toEqual({ type: "function_call_output", call_id: "call_1", output: "no screen" })
    }))
})

describe("images in the effect/ai adapter", () => {
  it("user images become file parts; a tool result's images their placeholders", () => {
    expect(toPromptMessage(Message.user([Message.text("see"), Message.image("image/png", PNG), Message.imageUrl("https://example.com/b.webp", "image/webp")])))
      .toEqual({
        role: "user",
        content: [
          { type: "text", text: "see" },
          { type: "file", mediaType: "image/png", data: PNG },
          { type: "file", mediaType: "image/webp", data: new URL("https://example.com/b.webp") }
        ]
      })
    const result = toPromptMessage(Message.toolResult(shot, [Message.text("shot"), Message.image("image/png", PNG)])) as any
    expect(result.content[0].result).toBe(`shot\n[image image/png, ${Buffer.from(PNG, "base64").length} bytes]`)
  })
})
